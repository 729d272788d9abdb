/// Runs `body`, throwing ``StorageTimeout`` when it has not finished within `limit` (it is then cancelled): what
/// bounds each use of PostgreSQL, and the last writes of a stop on either store.
package func withinLimit<Result: Sendable>(
    _ limit: Duration, _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else { throw StorageTimeout(limit: limit) }
        return result
    }
}

/// The database did not answer within the bound.
package struct StorageTimeout: Error, CustomStringConvertible {
    package var limit: Duration
    package var description: String { "the database did not answer within \(limit)" }

    /// The bound `limit` passed.
    package init(limit: Duration) {
        self.limit = limit
    }
}
