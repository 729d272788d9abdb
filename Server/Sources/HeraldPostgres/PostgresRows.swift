import HeraldRecords
import PostgresNIO

/// PostgreSQL's rows, read by the code both stores share.
extension PostgresRandomAccessRow: StoredRow {
    package func optionalText(_ column: String) throws -> String? {
        contains(column) ? try self[column].decode(String?.self) : nil
    }

    package func optionalInteger(_ column: String) throws -> Int64? {
        contains(column) ? try self[column].decode(Int64?.self) : nil
    }

    package func optionalDouble(_ column: String) throws -> Double? {
        contains(column) ? try self[column].decode(Double?.self) : nil
    }

    package func bool(_ column: String) throws -> Bool {
        contains(column) ? try self[column].decode(Bool?.self) ?? false : false
    }
}
