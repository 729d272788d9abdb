import HeraldRecords
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import PostgresNIO

/// The pool, with every wait bounded: when the database cannot be reached, postgres-nio's pool holds a request until
/// its circuit breaker trips (about a minute); through this, a request gets ``StorageTimeout`` after ``limit`` and
/// the API answers 503 `database_unavailable` at once.
///
/// A use answers its caller at its bound, or at once when the caller is cancelled (the server's stop), even when the
/// use itself does not end: each use runs as a child of the pool's own task (``PostgresUses``), not of its caller, and
/// is cancelled when its caller stops waiting. postgres-nio's queries do not answer cancellation, and a query sent on
/// a connection that closed under it (the database went away as the pool handed it out) is never answered: a caller
/// waiting for it in a child task of its own would wait for ever, and so would the server's stop.
package struct BoundedPostgres: Sendable {
    package let client: PostgresClient
    /// The longest a use of the database may take, connection included.
    package var limit: Duration = .seconds(5)
    /// Where the uses run.
    private let uses: PostgresUses

    /// The pool `client`, each use bounded by `limit`. ``runPool()`` runs it.
    package init(client: PostgresClient, limit: Duration = .seconds(5)) {
        self.client = client
        self.limit = limit
        self.uses = PostgresUses()
    }

    /// The same pool, each use bounded by `limit`.
    package func within(_ limit: Duration) -> BoundedPostgres {
        var bounded = self
        bounded.limit = limit
        return bounded
    }

    /// Runs the pool and its uses until cancelled: the store's pool task.
    package func runPool() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            group.addTask { await uses.run() }
        }
    }

    /// Runs `query` and reads all its rows.
    @discardableResult
    package func query(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await withConnection { connection in try await connection.query(query, logger: logger).collect() }
    }

    /// Runs `body` on a connection of the pool.
    package func withConnection<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await run { [client] in try await client.withConnection { connection in try await body(connection) } }
    }

    /// Runs `body` in a transaction.
    package func withTransaction<Result: Sendable>(
        logger: Logger, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
        }
    }

    /// Runs `body` as a use of the pool: its result, or ``StorageTimeout`` when it has not finished within ``limit``
    /// (it is then cancelled), or `CancellationError` at once when this task is cancelled.
    package func run<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await uses.run(body, within: limit)
    }
}

/// The uses of a pool in flight, each a child task of the pool's own task (``run()``).
package final class PostgresUses: Sendable {
    private typealias Job = @Sendable () async -> Void
    private let jobs: AsyncStream<Job>
    private let queue: AsyncStream<Job>.Continuation

    package init() {
        (jobs, queue) = AsyncStream.makeStream(of: Job.self)
    }

    /// Runs each use as it comes, until cancelled (then the uses in flight are cancelled, and new ones refused).
    package func run() async {
        await withDiscardingTaskGroup { group in
            for await job in jobs { group.addTask { await job() } }
        }
    }

    /// Runs `body` as a use: answered with its result, at `limit` with ``StorageTimeout``, or when this task is
    /// cancelled with `CancellationError`, whichever comes first; the use is then cancelled if it still runs.
    package func run<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result, within limit: Duration) async throws -> Result {
        let use = Use<Result>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Already answered (the caller was cancelled before it waited): nothing to run.
                guard use.answer(to: continuation) else { return }
                let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
                let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(nanoseconds)) {
                    use.end(.failure(StorageTimeout(limit: limit)))
                }
                let queued = queue.yield {
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask {
                            do {
                                use.end(.success(try await body()))
                            } catch {
                                use.end(.failure(error))
                            }
                        }
                        // Once answered (by the body, the bound, or the caller's cancellation), a body still running
                        // is cancelled; it ends here, in the pool's task, whenever it does.
                        group.addTask { await use.waitForEnd() }
                        await group.next()
                        group.cancelAll()
                    }
                    timer.cancel()
                }
                if case .terminated = queued {
                    timer.cancel()
                    use.end(.failure(StoreError.closing))
                }
            }
        } onCancel: {
            use.end(.failure(CancellationError()))
        }
    }

    /// One use's answer, given once: the first of the body's end, the bound and the caller's cancellation.
    private final class Use<Result: Sendable>: Sendable {
        private struct State {
            var caller: CheckedContinuation<Result, any Error>?
            var answer: Swift.Result<Result, any Error>?
        }

        private let state = NIOLockedValueBox(State())
        private let ended = WakeSignal()

        /// The caller waits with `continuation`: answered now, and false, if the use already ended.
        func answer(to continuation: CheckedContinuation<Result, any Error>) -> Bool {
            let answer = state.withLockedValue { state -> Swift.Result<Result, any Error>? in
                if state.answer == nil { state.caller = continuation }
                return state.answer
            }
            guard let answer else { return true }
            continuation.resume(with: answer)
            return false
        }

        /// Ends the use with `answer`, unless it ended already.
        func end(_ answer: Swift.Result<Result, any Error>) {
            let caller = state.withLockedValue { state -> CheckedContinuation<Result, any Error>?? in
                guard state.answer == nil else { return nil }
                state.answer = answer
                defer { state.caller = nil }
                return .some(state.caller)
            }
            guard let caller else { return }
            caller?.resume(with: answer)
            ended.notify()
        }

        /// Returns once the use ended (or this task is cancelled).
        func waitForEnd() async {
            while !Task.isCancelled, state.withLockedValue({ $0.answer == nil }) {
                await ended.wait(timeout: .seconds(3600))
            }
        }
    }
}
