import Foundation
import HeraldRecords
import Logging
import PostgresNIO

extension PostgresStore {
    /// Creates an empty database named `prefix` and a random suffix on the server `url` names (its user must be
    /// allowed `CREATE DATABASE`), runs `body` with that database's URL, and drops it afterwards (closing whatever
    /// connections are left), whether `body` succeeded or not. For tests and benchmarks: nothing of it is kept.
    public static func withScratchDatabase<T: Sendable>(
        on url: String, prefix: String, logger: Logger, _ body: (String) async throws -> T
    ) async throws -> T {
        guard prefix.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }), !prefix.isEmpty else {
            throw StorageError("a scratch database's prefix is lowercase letters, digits and _")
        }
        let name = prefix + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        guard var components = URLComponents(string: url) else { throw StorageError("not a PostgreSQL URL: \(redacted(url))") }
        components.path = "/" + name
        guard let scratch = components.string else { throw StorageError("not a PostgreSQL URL: \(redacted(url))") }
        let admin = BoundedPostgres(
            client: PostgresClient(configuration: try configuration(url), backgroundLogger: logger), limit: .seconds(60))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await admin.runPool() }
            defer { group.cancelAll() }
            try await admin.query("CREATE DATABASE \(unescaped: name)", logger: logger)
            let result: Result<T, any Error>
            do {
                result = .success(try await body(scratch))
            } catch {
                result = .failure(error)
            }
            try await admin.query("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: logger)
            return try result.get()
        }
    }
}
