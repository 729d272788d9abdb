import Logging
import ServiceLifecycle
import SQLiteNIO

/// One SQLite connection whose work runs one job at a time, in order, so a job's transaction never interleaves
/// with another's.
///
/// It is a `Service`: ``run()`` executes the jobs. On graceful shutdown it stops taking jobs, finishes the ones
/// already queued, marks a file database closed cleanly, and closes the connection.
final class SerialDatabase: Service {
    private struct Job: Sendable {
        let work: @Sendable (SQLiteConnection) async -> Void
    }

    let connection: SQLiteConnection
    private let lock: DatabaseLock?
    private let jobs: AsyncStream<Job>
    private let jobSink: AsyncStream<Job>.Continuation
    private let logger: Logger

    /// A serial queue for `connection`; a file database comes with its `lock`, let go once the file is closed.
    init(connection: SQLiteConnection, lock: DatabaseLock?, logger: Logger) {
        self.connection = connection
        self.lock = lock
        self.logger = logger
        (jobs, jobSink) = AsyncStream.makeStream()
    }

    /// Runs `work` after every job queued before it, and returns its result.
    func perform<T: Sendable>(_ work: @escaping @Sendable (SQLiteConnection) async throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = enqueue { connection in
                do {
                    continuation.resume(returning: try await work(connection))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            if !accepted { continuation.resume(throwing: Self.shuttingDown) }
        }
    }

    /// Queues `work` to run after every job queued before it, without waiting for it; false when the database is
    /// shutting down and takes no more work.
    func enqueue(_ work: @escaping @Sendable (SQLiteConnection) async -> Void) -> Bool {
        if case .terminated = jobSink.yield(Job(work: work)) { return false }
        return true
    }

    /// What work refused because the database takes no more is answered with.
    static let shuttingDown = APIError(.serviceUnavailable, .internalError, "the server is shutting down")

    /// Runs `work` inside a transaction, rolled back if it throws.
    func transaction<T: Sendable>(_ work: @escaping @Sendable (SQLiteConnection) async throws -> T) async throws -> T {
        try await perform { connection in
            _ = try await connection.query("BEGIN IMMEDIATE", [])
            do {
                let result = try await work(connection)
                _ = try await connection.query("COMMIT", [])
                return result
            } catch {
                _ = try? await connection.query("ROLLBACK", [])
                throw error
            }
        }
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            for await job in jobs {
                await job.work(connection)
            }
        } onGracefulShutdown: { [jobSink] in
            jobSink.finish()
        }
        // Closing must complete even when the stop was cut short (the service group cancels what outlives the
        // shutdown timeout), so it runs in a task of its own, which that cancellation does not reach.
        try await Task { [connection, lock, logger] in
            defer { lock?.release() }
            if lock != nil {
                // A clean stop: the log folded into the file, and the file marked closed (see SQLiteStore.open).
                _ = try? await connection.query("UPDATE server_state SET running = 0 WHERE id = 1", [])
                _ = try? await connection.query("PRAGMA wal_checkpoint(TRUNCATE)", [])
            }
            try await connection.close()
            logger.info("database closed")
        }.value
    }
}
