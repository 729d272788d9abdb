import Logging
import PostgresNIO

/// The pool, with every wait bounded: when the database cannot be reached, postgres-nio's pool holds a request until
/// its circuit breaker trips (about a minute); through this, a request gets ``StorageTimeout`` after ``limit`` and
/// the API answers 503 `database_unavailable` at once.
struct BoundedPostgres: Sendable {
    let client: PostgresClient
    /// The longest a use of the database may take, connection included.
    var limit: Duration = .seconds(5)

    /// Runs `query`; the rows arrive as the returned sequence is read.
    @discardableResult
    func query(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await run { try await client.query(query, logger: logger) }
    }

    /// Runs `body` on a connection of the pool.
    func withConnection<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await run { try await client.withConnection { connection in try await body(connection) } }
    }

    /// Runs `body` in a transaction.
    func withTransaction<Result: Sendable>(
        logger: Logger, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await run { try await client.withTransaction(logger: logger) { connection in try await body(connection) } }
    }

    /// Runs `body`, throwing ``StorageTimeout`` when it has not finished within ``limit`` (it is then cancelled).
    func run<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await withinLimit(limit, body)
    }
}
