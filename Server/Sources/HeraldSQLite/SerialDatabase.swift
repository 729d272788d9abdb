import HeraldRecords
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import ServiceLifecycle

/// One SQLite connection on a thread of its own, whose work runs one job at a time, in order, so a job's
/// transaction never interleaves with another's.
///
/// A job is a plain synchronous function of the ``SQLiteHandle``, run on the database's thread from start to end:
/// one hand-over to that thread per job (not one per query, as with a connection that sends each query to a thread
/// pool), and its statements prepared once and reused.
///
/// It is a `Service`: ``run()`` waits for graceful shutdown; then it stops taking jobs, finishes the ones already
/// queued, marks a file database closed cleanly, and closes the connection.
package final class SerialDatabase: Service {
    private let thread: NIOThreadPool
    private let connection: Confined
    private let lock: DatabaseLock?
    private let logger: Logger
    /// Whether jobs are still taken; checked and changed together with queuing, so no job is queued behind the
    /// closing one.
    private let accepting = NIOLockedValueBox(true)

    /// Opens the database at `path` (`:memory:` for a private in-memory one) on a new thread; a file database comes
    /// with its `lock`, let go once the file is closed (or when opening fails).
    package static func open(path: String, readOnly: Bool = false, lock: DatabaseLock?, logger: Logger) async throws -> SerialDatabase {
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        do {
            let connection = try await thread.runIfActive { Confined(try SQLiteHandle(path: path, readOnly: readOnly)) }
            return SerialDatabase(thread: thread, connection: connection, lock: lock, logger: logger)
        } catch {
            try? await thread.shutdownGracefully()
            lock?.release()
            throw error
        }
    }

    private init(thread: NIOThreadPool, connection: Confined, lock: DatabaseLock?, logger: Logger) {
        self.thread = thread
        self.connection = connection
        self.lock = lock
        self.logger = logger
    }

    /// Runs `work` after every job queued before it, and returns its result.
    ///
    /// The wait does not answer cancellation (the job may be half done); it ends because a job ``enqueue(_:)``
    /// accepted always runs, and a refused one is answered at once.
    package func perform<T: Sendable>(_ work: @escaping @Sendable (SQLiteHandle) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
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
    /// queues its own last job behind them and ends the thread only once that job ran, so the one thread (first in,
    /// first out) has run every accepted job by then and never hands one the `.cancelled` state.
    package func enqueue(_ work: @escaping @Sendable (SQLiteHandle) -> Void) -> Bool {
        accepting.withLockedValue { accepting in
            guard accepting else { return false }
            thread.submit { [connection] state in
                guard case .active = state else { return }
                work(connection.handle)
            }
            return true
        }
    }

    /// What work refused because the database takes no more is answered with.
    package static let shuttingDown = StoreError.closing

    /// Runs `work` inside a transaction, rolled back if it throws.
    package func transaction<T: Sendable>(_ work: @escaping @Sendable (SQLiteHandle) throws -> T) async throws -> T {
        try await perform { connection in
            try connection.query("BEGIN IMMEDIATE")
            do {
                let result = try work(connection)
                try connection.query("COMMIT")
                return result
            } catch {
                _ = try? connection.query("ROLLBACK")
                throw error
            }
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
        let first = accepting.withLockedValue { accepting in
            defer { accepting = false }
            return accepting
        }
        guard first else { return }
        // Nothing here waits on cancellation (the job and the thread's end are continuations), so a stop cut short
        // still closes the file.
        let (thread, connection, lock) = (thread, connection, lock)
        do {
            defer { lock?.release() }
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                thread.submit { _ in
                    if lock != nil, markingClean {
                        // A clean stop: the log folded into the file, and the file marked closed (see
                        // SQLiteStore.open).
                        _ = try? connection.handle.query("UPDATE server_state SET running = 0 WHERE id = 1")
                        _ = try? connection.handle.query("PRAGMA wal_checkpoint(TRUNCATE)")
                    }
                    connection.handle.close()
                    done.resume()
                }
            }
            try await thread.shutdownGracefully()
            logger.info("database closed")
        }
    }

    /// The connection, touched only on the database's thread (every job runs there, one at a time).
    private final class Confined: @unchecked Sendable {
        let handle: SQLiteHandle
        init(_ handle: SQLiteHandle) { self.handle = handle }
    }
}
