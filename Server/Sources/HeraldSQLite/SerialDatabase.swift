import HeraldRecords
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle

/// One SQLite connection on a thread of its own, whose work runs one job at a time, in order, so a job's
/// transaction never interleaves with another's.
///
/// A job is a plain synchronous function of the ``SQLiteHandle``, run from start to end by whoever holds the
/// connection: the database's thread, which drains the queue (one hand-over per job, not one per query, and its
/// statements prepared once and reused), or a caller that finds the connection free and nothing queued
/// (``runHereIfIdle(_:)``: an event loop commits a post so, with no hand-over at all). Checkpoints, which write and
/// sync the file, run on a second connection on a thread of their own (``Checkpointer``), beside the commits.
///
/// It is a `Service`: ``run()`` waits for graceful shutdown; then it stops taking jobs, finishes the ones already
/// queued, marks a file database closed cleanly, and closes the connection.
package final class SerialDatabase: Service {
    /// A job: a function of the connection, run from start to end by whoever holds the connection.
    private typealias Job = @Sendable (SQLiteHandle) -> Void

    /// Who holds the connection, and what waits for it.
    private struct Runner {
        /// Jobs queued, first in first out.
        var queue = CircularBuffer<Job>()
        /// Whether a thread holds the connection: the database's thread draining the queue, or a caller running a
        /// job of its own (``runHereIfIdle(_:)``). Only its holder touches the connection.
        var running = false
        /// Whether jobs are still taken; checked and changed together with queuing, so no job is queued behind the
        /// closing one.
        var accepting = true
    }

    private let thread: NIOThreadPool
    private let connection: Confined
    /// Folds the log of a file database into the file; nil for an in-memory or read-only one.
    private let checkpointer: Checkpointer?
    private let lock: DatabaseLock?
    private let logger: Logger
    private let runner = NIOLockedValueBox(Runner())

    /// Opens the database at `path` (`:memory:` for a private in-memory one) on a new thread; a file database comes
    /// with its `lock`, let go once the file is closed (or when opening fails).
    package static func open(path: String, readOnly: Bool = false, lock: DatabaseLock?, logger: Logger) async throws -> SerialDatabase {
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        do {
            let connection = try await thread.runIfActive { Confined(try SQLiteHandle(path: path, readOnly: readOnly)) }
            let checkpointer = readOnly || path == ":memory:" ? nil : Checkpointer(path: path, logger: logger)
            return SerialDatabase(thread: thread, connection: connection, checkpointer: checkpointer, lock: lock, logger: logger)
        } catch {
            try? await thread.shutdownGracefully()
            lock?.release()
            throw error
        }
    }

    private init(thread: NIOThreadPool, connection: Confined, checkpointer: Checkpointer?, lock: DatabaseLock?, logger: Logger) {
        self.thread = thread
        self.connection = connection
        self.checkpointer = checkpointer
        self.lock = lock
        self.logger = logger
    }

    /// Runs `work` after every job queued before it, and returns its result; with `onCallerIfIdle`, at once on the
    /// calling thread when the connection is free and nothing is queued (``runHereIfIdle(_:)``), for short jobs of a
    /// task that would otherwise wake the database's thread and wait to be woken in turn.
    ///
    /// The wait does not answer cancellation (the job may be half done); it ends because a job ``enqueue(_:)``
    /// accepted always runs, and a refused one is answered at once.
    package func perform<T: Sendable>(
        onCallerIfIdle: Bool = false, _ work: @escaping @Sendable (SQLiteHandle) throws -> T
    ) async throws -> T {
        if onCallerIfIdle {
            var result: Result<T, any Error>?
            if runHereIfIdle({ connection in result = Result { try work(connection) } }), let result {
                return try result.get()
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            let accepted = enqueue { connection in
                continuation.resume(with: Result { try work(connection) })
            }
            if !accepted { continuation.resume(throwing: Self.shuttingDown) }
        }
    }

    /// Queues `work` to run after every job queued before it, without waiting for it; false when the database is
    /// shutting down and takes no more work.
    ///
    /// An accepted job always runs: jobs are accepted only before ``close(markingClean:)`` stops accepting, and it
    /// queues its own last job behind them and ends the thread only once that job ran, so the queue (first in, first
    /// out) has run every accepted job by then.
    package func enqueue(_ work: @escaping @Sendable (SQLiteHandle) -> Void) -> Bool {
        let (accepted, start) = runner.withLockedValue { runner -> (Bool, Bool) in
            guard runner.accepting else { return (false, false) }
            runner.queue.append(work)
            defer { runner.running = true }
            return (true, !runner.running)
        }
        if start { drainOnThread() }
        return accepted
    }

    /// Runs `work` at once on the calling thread when the connection is free and nothing is queued (true), so a
    /// job that would wake the database's thread and wait for it costs no hand-over; false, doing nothing, when
    /// another job runs or waits, or the database takes no more work (then ``enqueue(_:)`` it).
    ///
    /// For short jobs on threads that may block for them: an event loop runs a group commit this way. Jobs queued
    /// meanwhile run on the database's thread after it, in order.
    package func runHereIfIdle(_ work: (SQLiteHandle) -> Void) -> Bool {
        let free = runner.withLockedValue { runner -> Bool in
            guard runner.accepting, !runner.running, runner.queue.isEmpty else { return false }
            runner.running = true
            return true
        }
        guard free else { return false }
        let handle = connection.handle
        work(handle)
        let checkpoint = handle.takeCheckpointDue()
        let more = runner.withLockedValue { runner -> Bool in
            // Not once closing: the last job folds the log.
            if checkpoint == .here, runner.accepting { runner.queue.append { $0.checkpointHere() } }
            runner.running = !runner.queue.isEmpty
            return runner.running
        }
        if checkpoint == .beside { checkpointer?.fold() }
        if more { drainOnThread() }
        return true
    }

    /// Runs the queued jobs on the database's thread until none is left, then lets the connection go. Called by
    /// whoever set `running` for jobs that wait.
    private func drainOnThread() {
        thread.submit { [runner, connection, checkpointer] _ in
            // The thread pool ends only after close's last job ran, so it never hands this the `.cancelled` state
            // while jobs wait.
            while let job = runner.withLockedValue({ runner -> Job? in
                guard let job = runner.queue.popFirst() else {
                    runner.running = false
                    return nil
                }
                return job
            }) {
                let handle = connection.handle
                job(handle)
                switch handle.takeCheckpointDue() {
                case .beside: checkpointer?.fold()
                case .here: handle.checkpointHere()
                case nil: break
                }
            }
        }
    }

    /// What work refused because the database takes no more is answered with.
    package static let shuttingDown = StoreError.closing

    /// Runs `work` inside a transaction, rolled back if it throws; `onCallerIfIdle` as for ``perform(onCallerIfIdle:_:)``.
    /// `committed` gets the result once the commit succeeded, in the same job: before any other job runs.
    package func transaction<T: Sendable>(
        onCallerIfIdle: Bool = false, _ work: @escaping @Sendable (SQLiteHandle) throws -> T,
        committed: @escaping @Sendable (T) -> Void = { _ in }
    ) async throws -> T {
        try await perform(onCallerIfIdle: onCallerIfIdle) { connection in
            try connection.query("BEGIN IMMEDIATE")
            let result: T
            do {
                result = try work(connection)
                try connection.query("COMMIT")
            } catch {
                _ = try? connection.query("ROLLBACK")
                throw error
            }
            committed(result)
            return result
        }
    }

    package func run() async throws {
        try? await gracefulShutdown()
        try await close(markingClean: true)
    }

    /// Stops taking jobs, runs the ones queued, closes the connection and ends the thread; a file database is
    /// marked closed cleanly if `markingClean` (not when it was refused at start). Closing completes even when the
    /// stop was cut short: the service group cancels what outlives the shutdown timeout, and the last job is not
    /// cancelled with it.
    package func close(markingClean: Bool) async throws {
        let first = runner.withLockedValue { runner in
            defer { runner.accepting = false }
            return runner.accepting
        }
        guard first else { return }
        // Nothing here waits on cancellation (the job and the thread's end are continuations), so a stop cut short
        // still closes the file.
        let lock = lock
        do {
            defer { lock?.release() }
            // No checkpoint runs beside the last job, whose checkpoint empties the log.
            await checkpointer?.close()
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                // Behind every job accepted: queued past the accepting check, which refuses every later one.
                let start = runner.withLockedValue { runner -> Bool in
                    runner.queue.append { handle in
                        if lock != nil, markingClean {
                            // A clean stop: the log folded into the file, and the file marked closed (see
                            // SQLiteStore.open).
                            _ = try? handle.query("UPDATE server_state SET running = 0 WHERE id = 1")
                            _ = try? handle.query("PRAGMA wal_checkpoint(TRUNCATE)")
                        }
                        handle.close()
                        done.resume()
                    }
                    defer { runner.running = true }
                    return !runner.running
                }
                if start { drainOnThread() }
            }
            try await thread.shutdownGracefully()
            logger.info("database closed")
        }
    }

    /// Returns once no checkpoint runs or waits to (for tests: one may start at any commit).
    package func checkpointsSettled() async {
        await checkpointer?.settled()
    }

    /// How many checkpoints the checkpointer ran.
    package var checkpoints: Int { checkpointer?.count ?? 0 }

    /// The connection, touched only by whoever holds it (``Runner/running``): the database's thread, or a caller
    /// running a job of its own; the runner's lock orders their accesses.
    private final class Confined: @unchecked Sendable {
        let handle: SQLiteHandle
        init(_ handle: SQLiteHandle) { self.handle = handle }
    }

    /// A second connection to the file, on a thread of its own, that folds the write-ahead log into the file (a
    /// passive checkpoint) when a commit on the first finds the log past ``SQLiteHandle/checkpointPages``.
    ///
    /// In WAL mode SQLite runs a checkpoint and a writer at once: posts are committed meanwhile, and the frames they
    /// add are folded by the next checkpoint. The log starts over at the first commit after a checkpoint that folded
    /// it all. One checkpoint at a time; a request while one runs is dropped (the next commit asks again). The
    /// connection is opened at the first checkpoint, once the store has set the file up.
    private final class Checkpointer: Sendable {
        private struct State {
            var running = false
            var open = true
            var count = 0
            /// Whether the last checkpoint failed (its warning is logged once until one succeeds).
            var failing = false
        }

        private let path: String
        private let logger: Logger
        private let thread = NIOThreadPool(numberOfThreads: 1)
        private let state = NIOLockedValueBox(State())
        /// The connection, opened at the first checkpoint; touched only on the checkpointer's thread (and by
        /// ``close()`` once that thread ended).
        private final class Slot: @unchecked Sendable {
            var handle: SQLiteHandle?
        }
        private let connection = Slot()

        init(path: String, logger: Logger) {
            self.path = path
            self.logger = logger
            thread.start()
        }

        /// Starts a checkpoint on the checkpointer's thread unless one runs or the database is closing.
        func fold() {
            let start = state.withLockedValue { state -> Bool in
                guard state.open, !state.running else { return false }
                state.running = true
                return true
            }
            guard start else { return }
            thread.submit { [self] work in
                // A job the pool hands over as cancelled (at its shutdown, or submitted after it) does nothing: the
                // connection is being closed, and the last job of the stop folds the log.
                guard work == .active else {
                    state.withLockedValue { $0.running = false }
                    return
                }
                var failure: (any Error)?
                do {
                    // The file exists by now (the store made it); never a new one where it was moved away.
                    if connection.handle == nil { connection.handle = try SQLiteHandle(path: path, creating: false) }
                    _ = try connection.handle?.query("PRAGMA wal_checkpoint(PASSIVE)", keep: false)
                } catch {
                    failure = error
                }
                let warn = state.withLockedValue { state -> Bool in
                    state.running = false
                    defer { state.failing = failure != nil }
                    if failure == nil { state.count += 1 }
                    return failure != nil && !state.failing
                }
                if warn, let failure {
                    logger.warning("the write-ahead log was not folded into the database", metadata: ["error": "\(failure)"])
                }
            }
        }

        /// How many checkpoints completed.
        var count: Int { state.withLockedValue { $0.count } }

        /// Returns once no checkpoint runs (polling every millisecond, for at most 10 s).
        func settled() async {
            let deadline = ContinuousClock.now + .seconds(10)
            while state.withLockedValue({ $0.running }), ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(1))
            }
        }

        /// Takes no more checkpoints, waits for the one running, and closes the connection.
        func close() async {
            state.withLockedValue { $0.open = false }
            try? await thread.shutdownGracefully()
            connection.handle?.close()
            connection.handle = nil
        }
    }
}
