import CSQLite
import HeraldRecords
import NIOConcurrencyHelpers

/// One SQLite connection, used by one thread at a time (whoever holds the ``SerialDatabase``'s connection), with its
/// prepared statements kept and reused.
///
/// SQLite is the system's (`libsqlite3`, through the `CSQLite` system-library target), driven through its C API: a
/// statement is prepared once (`SQLITE_PREPARE_PERSISTENT`), then reset and bound again for every use, by the thread
/// that runs the job, so a job is at most one hand-over to another thread however many statements it runs.
///
/// Not `Sendable`: only the connection's current holder touches it.
package final class SQLiteHandle {
    private var handle: OpaquePointer?
    /// A prepared statement and the names of its result's columns, read once when it is prepared.
    private struct Prepared {
        var pointer: OpaquePointer
        var columns: SQLiteValues.Columns
        /// Whether it only reads (SQLite says so; BEGIN and COMMIT count as reading).
        var readOnly: Bool
    }

    /// Whether a write found the disk full (`SQLITE_FULL`), and no write has succeeded since.
    private(set) var diskFull = false

    /// Prepared statements by their SQL. Herald's statements are a fixed set (lists of values come in a few sizes,
    /// see ``padded(_:width:)``), so this stays small; it is emptied if it ever reaches ``statementLimit``.
    private var statements: [ExactText: Prepared] = [:]
    package static let statementLimit = 128

    /// Opens (creating if needed) the database at `path`, or a private in-memory one for `:memory:`; with
    /// `readOnly`, an existing file only, never written to.
    package init(path: String, readOnly: Bool = false, creating: Bool = true) throws {
        var handle: OpaquePointer?
        let writable = SQLITE_OPEN_READWRITE | (creating ? SQLITE_OPEN_CREATE : 0)
        let flags = (readOnly ? SQLITE_OPEN_READONLY : writable) | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            sqlite3_close(handle)
            throw SQLiteFailure(code: status, message: message ?? "cannot open the database")
        }
        // The plan of a kept statement never depends on the values bound to it (the query planner's stability
        // guarantee). Without it, a statement whose parameter SQLite compared with a partial index's condition is
        // marked expired whenever that parameter is bound again, and compiled anew at its next step: on every use.
        guard herald_sqlite3_db_switch(handle, SQLITE_DBCONFIG_ENABLE_QPSG, 1) == 1 else {
            sqlite3_close(handle)
            throw SQLiteFailure(code: SQLITE_ERROR, message: "SQLite refused its query planner stability guarantee")
        }
        self.handle = handle
        // Checkpoints are the owner's (``takeCheckpointDue()``), not a side effect of whichever commit crosses the
        // limit: a commit may run on an event loop, and a checkpoint writes and syncs the database file. Setting a
        // hook of its own turns SQLite's automatic checkpoints off.
        sqlite3_wal_hook(handle, { context, _, _, pages in
            guard let context else { return SQLITE_OK }
            Unmanaged<SQLiteHandle>.fromOpaque(context).takeUnretainedValue().logPages = Int(pages)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Pages in the write-ahead log as the last commit left it (0 before one, and for a database without a log).
    private(set) var logPages = 0

    /// The log's length past which a commit asks for a checkpoint (``takeCheckpointDue()``), by default 8,000 pages
    /// (32 MB): eight times SQLite's own default. A checkpoint writes each page the log holds once, however many
    /// commits changed it, and syncs the file; a message changes the same few pages (the end of the messages'
    /// table and of its indexes, its conversation's row), so a longer log folds many messages' changes into one
    /// write of each page and one sync.
    package var checkpointPages = 8_000

    /// Where a checkpoint is due, as the last commit left the log.
    package enum CheckpointDue {
        /// Past ``checkpointPages``: beside the commits, on a connection of its own.
        case beside
        /// Past twice that: the checkpoints beside the commits never found the log without a commit in progress (a
        /// steady stream of commits), so the log never started over. One on this connection, between two commits,
        /// folds what is left, and the next commit starts the log over.
        case here
    }

    /// Whether the last commit left the log past ``checkpointPages``, and where to fold it; answered once, until a
    /// commit says so again (a checkpoint that could not fold it all leaves the log long, and the next commit says so).
    package func takeCheckpointDue() -> CheckpointDue? {
        guard logPages >= checkpointPages else { return nil }
        defer { logPages = 0 }
        return logPages >= 2 * checkpointPages ? .here : .beside
    }

    /// A passive checkpoint on this connection (``CheckpointDue/here``): it waits for no reader.
    package func checkpointHere() {
        _ = try? query("PRAGMA wal_checkpoint(PASSIVE)", keep: false)
    }

    deinit {
        close()
    }

    /// Runs `sql` with `binds` (`?1`, `?2`, …) and returns every row it gives. Its statement is kept for the next
    /// use of the same SQL, unless `keep` is false (for what runs once: migrations, pragmas at start).
    @discardableResult
    package func query(_ sql: String, _ binds: [SQLiteValue] = [], keep: Bool = true) throws -> [SQLiteValues] {
        guard let handle else { throw SQLiteFailure(code: SQLITE_MISUSE, message: "the database is closed") }
        let prepared = try keep ? self.prepared(sql, on: handle) : prepare(sql, on: handle, flags: 0)
        let statement = prepared.pointer
        defer {
            if keep {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            } else {
                sqlite3_finalize(statement)
            }
        }
        for (index, value) in binds.enumerated() {
            try check(bind(value, at: Int32(index + 1), to: statement))
        }
        var rows: [SQLiteValues] = []
        let count = sqlite3_column_count(statement)
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE {
                if !prepared.readOnly { diskFull = false }
                return rows
            }
            guard status == SQLITE_ROW else {
                if status & 0xFF == SQLITE_FULL { diskFull = true }
                throw failure(status)
            }
            rows.append(SQLiteValues(
                columns: prepared.columns, values: (0..<count).map { Self.value(at: $0, in: statement) }))
        }
    }

    /// The rowid of the last row an `INSERT` added on this connection (0 before any).
    package var lastInsertedRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    /// Whether the connection is open (``close()`` not called yet).
    package var isOpen: Bool { handle != nil }

    /// Finalizes every statement and closes the connection; later queries fail.
    package func close() {
        for statement in statements.values { sqlite3_finalize(statement.pointer) }
        statements = [:]
        if let handle { sqlite3_close(handle) }
        handle = nil
    }

    /// How many prepared statements are kept.
    package var preparedCount: Int { statements.count }

    /// How many times SQLite compiled a kept statement again since it was prepared (a change of schema does that):
    /// a statement that is kept, not compiled each time, leaves this at 0 in steady use.
    package var recompilations: Int {
        statements.values.reduce(0) { $0 + Int(sqlite3_stmt_status($1.pointer, SQLITE_STMTSTATUS_REPREPARE, 0)) }
    }

    /// Placeholders for `rows` of `width` values each, numbered from `?1` (`?1, ?2, …` for single values;
    /// `(?1, ?2), (?3, ?4), …` for wider rows), and the values to bind in that order. The rows are padded with rows
    /// of `NULL`s up to the next power of two, so lists of any length share a few statements; the query must leave
    /// the `NULL` rows out (`IN` matches no `NULL`; an insert filters them).
    package static func padded(_ rows: [[SQLiteValue]], width: Int = 1) -> (placeholders: String, binds: [SQLiteValue]) {
        var count = 1
        while count < rows.count { count *= 2 }
        let binds = rows.flatMap { $0 } + repeatElement(.null, count: (count - rows.count) * width)
        return (placeholders(rows: count, width: width), binds)
    }

    /// The placeholders of `rows` rows of `width`, written once per shape: a group commit asks for them every time.
    private static func placeholders(rows: Int, width: Int) -> String {
        let shape = Shape(rows: rows, width: width)
        if let known = writtenPlaceholders.withLockedValue({ $0[shape] }) { return known }
        let written = (0..<rows).map { row in
            let values = (1...width).map { "?\(row * width + $0)" }.joined(separator: ", ")
            return width == 1 ? values : "(\(values))"
        }.joined(separator: ", ")
        writtenPlaceholders.withLockedValue { $0[shape] = written }
        return written
    }

    private struct Shape: Hashable {
        var rows: Int
        var width: Int
    }

    /// Few: rows are powers of two, up to a statement's limit of variables.
    private static let writtenPlaceholders = NIOLockedValueBox<[Shape: String]>([:])

    private func prepared(_ sql: String, on handle: OpaquePointer) throws -> Prepared {
        if let statement = statements[ExactText(sql)] { return statement }
        if statements.count >= Self.statementLimit {
            for statement in statements.values { sqlite3_finalize(statement.pointer) }
            statements = [:]
        }
        let statement = try prepare(sql, on: handle, flags: UInt32(SQLITE_PREPARE_PERSISTENT))
        statements[ExactText(sql)] = statement
        return statement
    }

    private func prepare(_ sql: String, on handle: OpaquePointer, flags: UInt32) throws -> Prepared {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, flags, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw failure(status) }
        return Prepared(
            pointer: statement, columns: Self.columns(of: statement), readOnly: sqlite3_stmt_readonly(statement) != 0)
    }

    private func bind(_ value: SQLiteValue, at index: Int32, to statement: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let integer):
            return sqlite3_bind_int64(statement, index, Int64(integer))
        case .float(let double):
            return sqlite3_bind_double(statement, index, double)
        case .text(let text):
            // Bytes as they are: a NUL inside the text is kept, not taken as its end.
            var text = text
            return text.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) { characters in
                    guard let start = characters.baseAddress, !characters.isEmpty else {
                        return sqlite3_bind_text64(statement, index, "", 0, Self.transient, UInt8(SQLITE_UTF8))
                    }
                    return sqlite3_bind_text64(
                        statement, index, start, UInt64(characters.count), Self.transient, UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            return bytes.withUnsafeBytes { bytes in
                sqlite3_bind_blob64(statement, index, bytes.baseAddress, UInt64(bytes.count), Self.transient)
            }
        case .null:
            return sqlite3_bind_null(statement, index)
        }
    }

    private static func columns(of statement: OpaquePointer) -> SQLiteValues.Columns {
        let count = sqlite3_column_count(statement)
        var names: [String: Int] = [:]
        for index in 0..<count {
            let name = sqlite3_column_name(statement, index).map { String(cString: $0) } ?? ""
            if names[name] == nil { names[name] = Int(index) }
        }
        return SQLiteValues.Columns(indices: names)
    }

    private static func value(at index: Int32, in statement: OpaquePointer) -> SQLiteValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            return .integer(Int(sqlite3_column_int64(statement, index)))
        case SQLITE_FLOAT:
            return .float(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard let bytes = sqlite3_column_blob(statement, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default:
            return .null
        }
    }

    private func check(_ status: Int32) throws {
        guard status == SQLITE_OK else { throw failure(status) }
    }

    private func failure(_ status: Int32) -> SQLiteFailure {
        let message = handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return SQLiteFailure(code: status, message: message ?? "SQLite error \(status)")
    }

    /// SQLite copies the bytes it is given before the bind returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// A value SQLite stores: what a statement binds and what a row holds.
package enum SQLiteValue: Hashable, Sendable {
    case integer(Int)
    case float(Double)
    case text(String)
    case blob([UInt8])
    case null

    /// The integer, if it is one.
    package var integer: Int? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The number, integer or not.
    package var double: Double? {
        switch self {
        case .float(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// The text, if it is text.
    package var string: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The bytes, if it is a blob.
    package var blob: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }

    /// Text, or NULL for nil.
    package static func optionalText(_ text: String?) -> SQLiteValue {
        text.map { .text($0) } ?? .null
    }
}

/// One row of a result: its values, found by column name.
package struct SQLiteValues {
    /// The column names of a statement's result, shared by all its rows.
    package final class Columns {
        package let indices: [String: Int]
        package init(indices: [String: Int]) { self.indices = indices }
    }

    package let columns: Columns
    package let values: [SQLiteValue]

    /// The value of the column named `name`, or nil if the result has no such column.
    package func column(_ name: String) -> SQLiteValue? {
        columns.indices[name].map { values[$0] }
    }
}

/// An error SQLite reported: its result code and message.
package struct SQLiteFailure: Error, CustomStringConvertible {
    package let code: Int32
    package let message: String

    package var description: String { message }
}

extension SQLiteFailure: DatabaseError {
    /// `SQLITE_FULL` is a full disk; `SQLITE_CONSTRAINT` raised by the `user_erased` triggers an erased user's write.
    package var failure: DatabaseFailure? {
        switch code & 0xFF {
        case 13: .diskFull  // SQLITE_FULL
        case 19 where message.contains("user_erased"): .erasedUser  // SQLITE_CONSTRAINT, from RAISE
        default: nil
        }
    }
}
