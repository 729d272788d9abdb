import HeraldRecords

/// SQLite's rows, read by the code both stores share.
extension SQLiteValues: StoredRow {
    package func optionalText(_ column: String) throws -> String? { self.column(column)?.string }
    package func optionalInteger(_ column: String) throws -> Int64? { self.column(column)?.integer.map(Int64.init) }
    package func optionalDouble(_ column: String) throws -> Double? { self.column(column)?.double }
    package func bool(_ column: String) throws -> Bool { (self.column(column)?.integer ?? 0) != 0 }
}
