import Crypto
import Foundation
import HeraldRecords
import HeraldSQLite
import Logging
import PostgresNIO

/// `herald database copy`: a whole SQLite database moved into an empty PostgreSQL database, for a deployment that
/// outgrows one node (docs/deploy.md).
///
/// Every table is copied row for row with its values as they are: users, devices and their keys' digests,
/// conversations, members and owners, the log (messages, events, tombstones) with its seqs, read markers, levels and
/// settings, both outboxes, the consumers' places in the log; then the seq counter and the outboxes' id counters
/// carry on where SQLite's stopped, and the token secret and VAPID key kept beside the SQLite file go where the nodes
/// share them (`herald_settings`). A server started on the copy serves the same history, catches a device up from the
/// `seq` it had, and sends what the outboxes held.
///
/// The source is opened read-only, under the lock a server takes (so no server runs on it meanwhile), and read in one
/// transaction. The target is written in one transaction: a copy that fails leaves no row (the schema the migrations
/// made stays). A target that holds anything (another program's tables, or Herald's with any row a server or an
/// earlier copy wrote) is refused before anything is written to it.
public enum DatabaseCopy {
    /// What a copy moved.
    public struct Report: Sendable, CustomStringConvertible {
        /// Each table copied and its rows, in the order they were copied.
        public var tables: [(table: String, rows: Int)]
        /// The secrets found beside the SQLite file and copied: `token secret`, `VAPID key`.
        public var secrets: [String]
        /// The last seq the source gave; the target's next message is numbered after it.
        public var lastSeq: Int

        /// A line per table, then the secrets and the seq.
        public var description: String {
            let width = tables.map(\.table.count).max() ?? 0
            var lines = tables.map { "  \($0.table.padding(toLength: width, withPad: " ", startingAt: 0))  \($0.rows)" }
            lines.append("  secrets: \(secrets.isEmpty ? "none (the servers keep using HERALD_JWT_SECRET and HERALD_VAPID_PRIVATE_KEY_FILE)" : secrets.joined(separator: ", "))")
            lines.append("  last seq: \(lastSeq)")
            return lines.joined(separator: "\n")
        }
    }

    /// A table both stores have, and where its columns differ.
    package struct Table: Sendable {
        package var name: String
        /// Columns SQLite has and PostgreSQL has not: not copied.
        package var onlyInSQLite: Set<String> = []
        /// Columns PostgreSQL has and SQLite has not: left at their default.
        package var onlyInPostgres: Set<String> = []
        /// Columns written with a value of their own (SQL for SQLite) instead of the source's.
        package var fresh: [String: String] = [:]
    }

    /// The tables copied, in order. Messages come before members: storing a message moves its sender's read marker
    /// (a trigger), and with no member there yet the members' rows arrive as they were.
    package static let tables: [Table] = [
        // Erased users arrive not erased, and are marked once every table is in: PostgreSQL refuses a member row of
        // an erased user (a trigger), and a deleted group keeps its members' rows, an erased user's among them.
        Table(name: "users", fresh: ["erased": "0"]),
        Table(name: "conversations"),
        Table(name: "messages"),
        Table(name: "members"),
        Table(name: "devices"),
        Table(name: "notification_settings"),
        // A job the stopped server had leased is free at once (PostgreSQL leases until an instant).
        Table(name: "push_jobs", onlyInSQLite: ["leased"], onlyInPostgres: ["leased_until"]),
        Table(name: "push_shown"),
        Table(name: "push_receipts"),
        Table(name: "push_sent"),
        Table(name: "push_grants"),
        Table(name: "webhook_jobs", fresh: ["leased_until": "0"]),
        Table(name: "unread_reminders"),
        Table(name: "delivery_trail"),
        Table(name: "log_cursors"),
    ]

    /// SQLite's own tables: whether a server has the file open, and the AUTOINCREMENT counters (read for the seq).
    package static let onlyInSQLite: Set<String> = ["server_state", "sqlite_sequence"]

    /// PostgreSQL's own tables: the seq counter (set from the source), the nodes, their presence and the erasures
    /// told to them, the secrets the nodes share (from the files beside the SQLite database), the schema's version.
    package static let onlyInPostgres: Set<String> = ["message_seq", "nodes", "presence", "erasures", "herald_settings", "herald_schema"]

    /// Rows read and written at a time.
    package static let batch = 1_000

    /// Copies the SQLite database at `path` into the empty PostgreSQL database `url` names.
    ///
    /// - Throws: ``StorageError`` saying what to do when the source is missing, in use, not closed cleanly or of
    ///   another schema version, when the target is not empty, or when either cannot be reached.
    public static func sqliteToPostgres(from path: String, to url: String, logger: Logger) async throws -> Report {
        guard path != ":memory:", FileManager.default.fileExists(atPath: path) else {
            throw StorageError("there is no SQLite database at \(path)")
        }
        let configuration = try PostgresStore.configuration(url)
        let lock = try await DatabaseLock.acquire(databasePath: path)
        let source: SerialDatabase
        do {
            source = try await SerialDatabase.open(path: path, readOnly: true, lock: lock, logger: logger)
        } catch {
            throw StorageError("cannot open the SQLite database \(path): \(error)")
        }
        do {
            let shape = try await source.perform { try Source.read($0, path: path) }
            let secrets = try Secrets.beside(path)
            let admin = BoundedPostgres(client: PostgresClient(configuration: configuration, backgroundLogger: logger))
            let report = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await admin.runPool() }
                defer { group.cancelAll() }
                return try await copy(from: source, shape: shape, secrets: secrets, to: admin, logger: logger)
            }
            try await source.close(markingClean: false)
            return report
        } catch {
            try? await source.close(markingClean: false)
            throw error
        }
    }

    /// The source as found: its tables' columns and its counters, read inside the transaction the copy reads in.
    package struct Source: Sendable {
        package var columns: [String: [String]]
        package var lastSeq: Int
        package var webhookCounter: Int
        /// The erased users' ids.
        package var erased: [String]

        package static func read(_ connection: SQLiteHandle, path: String) throws -> Source {
            // One snapshot for the whole copy: the transaction stays open until the file is closed.
            try connection.query("BEGIN", keep: false)
            let version = try connection.query("PRAGMA user_version", keep: false).first?.column("user_version")?.integer ?? 0
            let known = SQLiteMigrations.steps.count
            guard version <= known else {
                throw StorageError("\(path) was made by a newer Herald (schema \(version); this one knows \(known)): copy it with that version")
            }
            guard version == known else {
                throw StorageError("\(path) is at schema \(version) of \(known): start `herald serve --database \(path)` of this version once (it migrates at start), stop it, then copy")
            }
            let running = try connection.query("SELECT running FROM server_state WHERE id = 1", keep: false)
                .first?.column("running")?.integer ?? 0
            guard running == 0 else {
                throw StorageError("\(path) was not closed cleanly (its server stopped without closing it): start `herald serve --database \(path)` on it once and stop it, then copy")
            }
            let names = try connection.query("SELECT name FROM sqlite_master WHERE type = 'table'", keep: false)
                .compactMap { $0.column("name")?.string }
            var columns: [String: [String]] = [:]
            // SQLite's own tables (`sqlite_sequence`, `sqlite_stat1` when the planner analysed) are not Herald's.
            for name in names where !name.hasPrefix("sqlite_") && !DatabaseCopy.onlyInSQLite.contains(name) {
                columns[name] = try connection.query("SELECT name FROM pragma_table_info(?1) ORDER BY cid", [.text(name)], keep: false)
                    .compactMap { $0.column("name")?.string }
            }
            let counters = try connection.query("SELECT name, seq FROM sqlite_sequence", keep: false)
            func counter(_ table: String) -> Int {
                counters.first { $0.column("name")?.string == table }?.column("seq")?.integer ?? 0
            }
            let highest = try connection.query("SELECT coalesce(max(seq), 0) AS seq FROM messages", keep: false)
                .first?.column("seq")?.integer ?? 0
            let highestJob = try connection.query("SELECT coalesce(max(id), 0) AS id FROM webhook_jobs", keep: false)
                .first?.column("id")?.integer ?? 0
            let erased = try connection.query("SELECT id FROM users WHERE erased", keep: false).compactMap { $0.column("id")?.string }
            return Source(columns: columns, lastSeq: max(counter("messages"), highest),
                          webhookCounter: max(counter("webhook_jobs"), highestJob), erased: erased)
        }
    }

    /// The token secret and VAPID key a SQLite server keeps beside its file.
    package struct Secrets: Sendable {
        package var tokenSecret: String?
        package var vapidKey: String?

        package static func beside(_ path: String) throws -> Secrets {
            var secrets = Secrets()
            if let data = FileManager.default.contents(atPath: path + ".secret") {
                let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard secret.utf8.count >= 32 else {
                    throw StorageError("the token secret in \(path).secret is shorter than 32 bytes; no server would take it")
                }
                secrets.tokenSecret = secret
            }
            if let data = FileManager.default.contents(atPath: path + ".vapid") {
                let pem = String(decoding: data, as: UTF8.self)
                guard (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil else {
                    throw StorageError("\(path).vapid holds no P-256 private key (PEM)")
                }
                secrets.vapidKey = pem
            }
            return secrets
        }
    }

    private static func copy(
        from source: SerialDatabase, shape: Source, secrets: Secrets, to target: BoundedPostgres, logger: Logger
    ) async throws -> Report {
        // Refused before anything is written: another program's tables, a newer Herald's schema, rows.
        let existing = Set(try await target.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
            logger: logger).map { try $0.decode(String.self) })
        if !existing.isEmpty, !existing.contains("herald_schema") {
            throw StorageError("the target database is not empty: it holds tables that are not Herald's (\(existing.sorted().prefix(5).joined(separator: ", "))). Copy into a new database (createdb)")
        }
        if existing.contains("herald_schema") {
            // Herald's already: refused unless empty before it is migrated, so a wrong --to is never upgraded.
            let version = try await target.query("SELECT version FROM herald_schema", logger: logger).first?.decode(Int.self) ?? 0
            guard version <= PostgresMigrations.steps.count else {
                throw StorageError("the target database was made by a newer Herald (schema \(version); this one knows \(PostgresMigrations.steps.count))")
            }
            try await target.withConnection { connection in try await refuseUnlessEmpty(connection, tables: existing, logger: logger) }
        }
        // As long as a node's start gives the migrations (a database far away takes a round trip per statement).
        try await target.within(.seconds(60)).run { [client = target.client] in
            try await PostgresMigrations.migrate(client, logger: logger)
        }
        let columns = try await targetColumns(target, logger: logger)
        let plan = try plan(source: shape.columns, target: columns)

        do {
            return try await write(from: source, shape: shape, secrets: secrets, plan: plan, to: target, logger: logger)
        } catch let error as PostgresTransactionError {
            // What went wrong inside, rather than the transaction's wrapping of it.
            throw readable(error.closureError ?? error.commitError ?? error.beginError ?? error)
        } catch {
            throw readable(error)
        }
    }

    /// The copy's one transaction: refuses a target with rows, then copies every table, the counters and the secrets.
    private static func write(
        from source: SerialDatabase, shape: Source, secrets: Secrets, plan: [PlannedTable], to target: BoundedPostgres,
        logger: Logger
    ) async throws -> Report {
        try await target.within(.seconds(24 * 3600)).withTransaction(logger: logger) { connection in
            // Another copy, or a node migrating, waits for this one (and this one for them, up to 10 s).
            try await connection.query("SET LOCAL lock_timeout = '10s'", logger: logger)
            try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresMigrations.lock))", logger: logger)
            try await refuseUnlessEmpty(connection, tables: nil, logger: logger)
            // What the migrations wrote is the source's to say: the system user, the consumers' places.
            try await connection.query("DELETE FROM users WHERE id = ''", logger: logger)
            try await connection.query("DELETE FROM log_cursors", logger: logger)

            var report = Report(tables: [], secrets: [], lastSeq: shape.lastSeq)
            for table in plan {
                let rows = try await copy(table, from: source, to: connection, logger: logger)
                report.tables.append((table.name, rows))
                logger.info("table copied", metadata: ["table": "\(table.name)", "rows": "\(rows)"])
            }
            try await connection.query("UPDATE users SET erased = true WHERE id = ANY(\(shape.erased))", logger: logger)
            try await connection.query("UPDATE message_seq SET seq = \(Int64(shape.lastSeq)) WHERE id = 1", logger: logger)
            try await restartCounter("push_jobs", after: nil, on: connection, logger: logger)
            try await restartCounter("delivery_trail", after: nil, on: connection, logger: logger)
            try await restartCounter("webhook_jobs", after: shape.webhookCounter, on: connection, logger: logger)
            for (name, label, value) in [("token_secret", "token secret", secrets.tokenSecret), ("vapid_key", "VAPID key", secrets.vapidKey)] {
                guard let value else { continue }
                try await connection.query("INSERT INTO herald_settings (name, value) VALUES (\(name), \(value))", logger: logger)
                report.secrets.append(label)
            }
            return report
        }
    }

    /// A table to copy with the columns it copies (the target's names and types, in the target's order).
    package struct PlannedTable: Sendable {
        package var name: String
        package var columns: [(name: String, type: String)]
        /// What SQLite reads for each column: its name, or the fresh value's SQL.
        package var selected: [String]
    }

    /// Each table's columns, checked against both schemas: a table or a column this copy does not know of (a
    /// migration added it and the copy was not told) stops it before it writes anything.
    package static func plan(source: [String: [String]], target: [String: [(name: String, type: String)]]) throws -> [PlannedTable] {
        let copied = Set(tables.map(\.name))
        let unknownSource = Set(source.keys).subtracting(copied)
        let unknownTarget = Set(target.keys).subtracting(copied).subtracting(onlyInPostgres)
        guard unknownSource.isEmpty, unknownTarget.isEmpty else {
            throw StorageError("this herald does not know how to copy \((unknownSource.union(unknownTarget)).sorted().joined(separator: ", ")): the two schemas differ (a bug: please report it)")
        }
        return try tables.map { table in
            guard let from = source[table.name], let to = target[table.name] else {
                throw StorageError("the table \(table.name) is missing from the \(source[table.name] == nil ? "SQLite" : "PostgreSQL") database")
            }
            let written = to.filter { !table.onlyInPostgres.contains($0.name) }
            let read = Set(from).subtracting(table.onlyInSQLite)
            guard Set(written.map(\.name)) == read else {
                let differing = read.symmetricDifference(written.map(\.name)).sorted().joined(separator: ", ")
                throw StorageError("this herald does not know how to copy \(table.name): its columns differ (\(differing)) (a bug: please report it)")
            }
            return PlannedTable(
                name: table.name, columns: written,
                selected: written.map { column in table.fresh[column.name].map { "\($0) AS \(column.name)" } ?? quoted(column.name) })
        }
    }

    private static func targetColumns(_ target: BoundedPostgres, logger: Logger) async throws -> [String: [(name: String, type: String)]] {
        let rows = try await target.query(
            """
            SELECT table_name, column_name, data_type FROM information_schema.columns
            WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position
            """, logger: logger)
        var columns: [String: [(name: String, type: String)]] = [:]
        for row in rows {
            let (table, column, type) = try row.decode((String, String, String).self)
            columns[table, default: []].append((column, type))
        }
        return columns
    }

    /// Refuses a target with any row a server or a copy wrote (not the ones the migrations write), in `tables` (all of
    /// Herald's when nil: an older schema has fewer).
    private static func refuseUnlessEmpty(_ connection: PostgresConnection, tables present: Set<String>?, logger: Logger) async throws {
        func has(_ table: String) -> Bool { present?.contains(table) ?? true }
        var counts = tables.filter { $0.name != "log_cursors" && has($0.name) }.map { table in
            "SELECT '\(table.name)', count(*) FROM \(quoted(table.name))" + (table.name == "users" ? " WHERE id <> ''" : "")
        }
        counts += ["nodes", "presence", "erasures", "herald_settings"].filter(has).map { "SELECT '\($0)', count(*) FROM \($0)" }
        if has("message_seq") { counts.append("SELECT 'message_seq', count(*) FROM message_seq WHERE seq > 0") }
        guard !counts.isEmpty else { return }
        let rows = try await connection.query(PostgresQuery(unsafeSQL: counts.joined(separator: " UNION ALL ")), logger: logger).collect()
        let filled = try rows.map { try $0.decode((String, Int64).self) }.filter { $0.1 > 0 }
        guard filled.isEmpty else {
            let what = filled.map { "\($0.0) (\($0.1) rows)" }.joined(separator: ", ")
            throw StorageError("the target database is not empty: \(what). A server has run on it, or it was copied into before; copy into a new database (createdb), before any server starts on it")
        }
    }

    /// Copies `table` a batch at a time, in the source's row order; the number of rows.
    private static func copy(
        _ table: PlannedTable, from source: SerialDatabase, to connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        let select = "SELECT rowid, \(table.selected.joined(separator: ", ")) FROM \(quoted(table.name)) WHERE rowid > ?1 ORDER BY rowid LIMIT \(batch)"
        let names = table.columns.map { quoted($0.name) }.joined(separator: ", ")
        var after = Int.min
        var copied = 0
        while true {
            let from = after
            let rows = try await source.perform { connection in
                try connection.query(select, [.integer(from)], keep: true).map(\.values)
            }
            guard let last = rows.last?.first?.integer else { return copied }
            var bindings = PostgresBindings(capacity: rows.count * table.columns.count)
            var tuples: [String] = []
            tuples.reserveCapacity(rows.count)
            for row in rows {
                let first = bindings.count + 1
                for (index, column) in table.columns.enumerated() {
                    try bind(row[index + 1], as: column.type, into: &bindings, at: "\(table.name).\(column.name)")
                }
                tuples.append("(" + (first..<first + table.columns.count).map { "$\($0)" }.joined(separator: ", ") + ")")
            }
            let insert = "INSERT INTO \(quoted(table.name)) (\(names)) VALUES \(tuples.joined(separator: ", "))"
            try await connection.query(PostgresQuery(unsafeSQL: insert, binds: bindings), logger: logger)
            copied += rows.count
            after = last
        }
    }

    /// Binds a SQLite value as the PostgreSQL column's type wants it (SQLite keeps booleans as 0 and 1).
    package static func bind(_ value: SQLiteValue, as type: String, into bindings: inout PostgresBindings, at column: String) throws {
        switch (value, type) {
        case (.null, _):
            bindings.appendNull()
        case (.text(let text), "text"):
            guard !text.utf8.contains(0) else {
                throw StorageError("\(column) holds text with a NUL character, which PostgreSQL cannot store")
            }
            bindings.append(text)
        case (.integer(let integer), "text"):
            bindings.append(String(integer))
        case (.integer(let integer), "bigint"):
            bindings.append(Int64(integer))
        case (.integer(let integer), "integer"):
            guard let small = Int32(exactly: integer) else { throw StorageError("\(column) holds \(integer), too large for PostgreSQL's integer") }
            bindings.append(small)
        case (.integer(let integer), "double precision"):
            bindings.append(Double(integer))
        case (.float(let double), "double precision"):
            bindings.append(double)
        case (.integer(let integer), "boolean"):
            bindings.append(integer != 0)
        default:
            throw StorageError("\(column) holds \(value) where PostgreSQL wants \(type)")
        }
    }

    /// Makes `table`'s id sequence give ids after every id it holds and after `after` (SQLite's AUTOINCREMENT
    /// counter: an id once given, to a row since deleted, is not given again).
    private static func restartCounter(_ table: String, after: Int?, on connection: PostgresConnection, logger: Logger) async throws {
        let floor = Int64(after ?? 0)
        try await connection.query(PostgresQuery(unsafeSQL: """
            SELECT setval(pg_get_serial_sequence('\(table)', 'id'), greatest(coalesce(max(id), 0), \(floor)) + 1, false) FROM \(table)
            """), logger: logger)
    }

    /// A ``StorageError`` as it is; anything else in PostgreSQL's words (postgres-nio hides them from printing).
    private static func readable(_ error: any Error) -> any Error {
        error is StorageError ? error : StorageError("the copy failed, and wrote no row: \(PostgresStore.describe(error))")
    }

    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
