import Foundation
@testable import HeraldPostgres
@testable import HeraldRecords
@testable import HeraldSQLite
import HeraldTestSupport
import Logging
import PostgresNIO

extension StoreKind {
    /// A database made by an older Herald: migrated through `sqliteStep` (SQLite) or `postgresStep` (PostgreSQL),
    /// given `rows` (and, on PostgreSQL, `postgresRows` after them), then opened by this Herald, which migrates the
    /// rest; `body` gets the store.
    func withOldDatabase(
        sqliteStep: Int, postgresStep: Int, rows: [String], postgresRows: [String] = [],
        _ body: (any Store) async throws -> Void
    ) async throws {
        var logger = Logger(label: "old-database")
        logger.logLevel = .critical
        switch self {
        case .sqlite:
            let folder = try makeTemporaryFolder("herald-old-database")
            defer { try? FileManager.default.removeItem(at: folder) }
            let path = folder.appendingPathComponent("old.sqlite").path
            let old = try SQLiteHandle(path: path)
            try SQLiteMigrations.migrate(old, logger: logger, through: sqliteStep)
            for statement in rows { try old.query(statement, keep: false) }
            old.close()
            let store = try await SQLiteStore.open(path: path, logger: logger)
            try await withBackground({ try await store.database.run() }) { try await body(store) }
        case .postgres:
            try await StoreKind.withDatabase(logger: logger) { url in
                let client = PostgresClient(configuration: try PostgresStore.configuration(url), backgroundLogger: logger)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await client.run() }
                    try await PostgresMigrations.migrate(client, logger: logger, through: postgresStep)
                    for statement in rows + postgresRows {
                        do {
                            try await client.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                        } catch {
                            throw TestFailure("\(statement): \(String(reflecting: error))")
                        }
                    }
                    group.cancelAll()
                }
                try await StoreKind.withPostgresStore(url, logger: logger, body)
            }
        }
    }
}
