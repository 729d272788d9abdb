import Foundation
import HeraldCore
import HeraldProtocol
import Logging
import NIOConcurrencyHelpers
import SQLiteNIO

/// The embedded store: one SQLite file in WAL mode, migrated at start.
///
/// All work goes through one ``SerialDatabase``, so message sequence numbers, the `onStored` hook and
/// transactions happen strictly in order. `synchronous = NORMAL` in WAL mode keeps every committed message
/// across a crash of the server process; `HERALD_SQLITE_SYNC=full` also keeps it across a power cut.
public final class SQLiteStore: Store {
    let database: SerialDatabase
    /// The folder holding the database file, whose free space ``health(within:)`` reads; nil in memory.
    let folder: String?
    /// Posts waiting for the next group commit (see SQLiteStore+GroupCommit.swift).
    let waitingPosts = NIOLockedValueBox(WaitingPosts())

    /// Opens (creating if needed) the database at `path` (`:memory:` for a private in-memory one), checks it and
    /// migrates it.
    ///
    /// A file database is refused, with a ``StorageError`` that says why and what to do, when another server holds
    /// it (its `<path>-lock`), when `PRAGMA quick_check` finds it damaged, or when the server that last used it
    /// stopped without closing it and its write-ahead log (`<path>-wal`) is gone: then the messages committed
    /// since the last checkpoint are lost, and serving the file would give their `seq` numbers again.
    public static func open(path: String, fullSync: Bool = false, logger: Logger) async throws -> SQLiteStore {
        guard path != ":memory:" else {
            let database = try await SerialDatabase.open(path: path, lock: nil, logger: logger)
            do {
                try await database.perform { connection in
                    try configure(connection, fullSync: fullSync)
                    try SQLiteMigrations.migrate(connection, logger: logger)
                }
            } catch {
                try? await database.close(markingClean: false)
                throw error
            }
            return SQLiteStore(database: database, folder: nil)
        }
        let lock = try DatabaseLock.acquire(databasePath: path)
        let walExisted = FileManager.default.fileExists(atPath: path + "-wal")
        let database: SerialDatabase
        do {
            database = try await SerialDatabase.open(path: path, lock: lock, logger: logger)
        } catch {
            throw StorageError("cannot open the database \(path): \(Self.reason(error))")
        }
        do {
            try await database.perform { connection in
                try configure(connection, fullSync: fullSync)
                try checkIntegrity(connection, path: path)
                try SQLiteMigrations.migrate(connection, logger: logger)
                try markInUse(connection, path: path, walExisted: walExisted)
            }
        } catch {
            try? await database.close(markingClean: false)
            throw error as? StorageError ?? StorageError("cannot use the database \(path): \(Self.reason(error))")
        }
        return SQLiteStore(database: database, folder: URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    private static func configure(_ connection: SQLiteHandle, fullSync: Bool) throws {
        for pragma in ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = \(fullSync ? "FULL" : "NORMAL")",
                       "PRAGMA foreign_keys = ON", "PRAGMA busy_timeout = 5000"] {
            try connection.query(pragma, keep: false)
        }
    }

    /// `PRAGMA quick_check`: every page and index entry readable and consistent (in time proportional to the size).
    private static func checkIntegrity(_ connection: SQLiteHandle, path: String) throws {
        let rows = try connection.query("PRAGMA quick_check(5)", keep: false)
        let findings = rows.compactMap { $0.column("quick_check")?.string }
            .flatMap { $0.split(whereSeparator: \.isNewline) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("***") }
        guard findings == ["ok"] else {
            throw StorageError(
                "the database \(path) is damaged (\(findings.joined(separator: "; "))); "
                    + "restore it from a backup, or move it away to start afresh")
        }
    }

    /// Refuses a file whose last server did not close it and whose log is gone; then marks it in use, checkpointed
    /// into the main file so that the mark survives the loss of the log.
    private static func markInUse(_ connection: SQLiteHandle, path: String, walExisted: Bool) throws {
        let running = try connection.query("SELECT running FROM server_state WHERE id = 1", keep: false)
            .first?.column("running")?.integer ?? 0
        if running == 1, !walExisted {
            throw StorageError(
                "the database \(path) was not closed cleanly and its write-ahead log (\(path)-wal) is missing: "
                    + "messages committed since its last checkpoint are lost, and serving it would number new messages "
                    + "with seq numbers clients have already seen. Restore the file together with its -wal from a "
                    + "backup; to serve it anyway, run: sqlite3 \(path) 'UPDATE server_state SET running = 0'")
        }
        try connection.query("UPDATE server_state SET running = 1 WHERE id = 1", keep: false)
        try connection.query("PRAGMA wal_checkpoint(TRUNCATE)", keep: false)
    }

    static func reason(_ error: any Error) -> String {
        (error as? SQLiteFailure)?.message ?? String(describing: error)
    }

    private init(database: SerialDatabase, folder: String?) {
        self.database = database
        self.folder = folder
    }

    public func upsertUser(_ person: Person) async throws {
        try await database.perform { connection in
            _ = try connection.query(
                """
                INSERT INTO users (id, name, picture, known) VALUES (?1, ?2, ?3, 1)
                ON CONFLICT(id) DO UPDATE SET name = excluded.name, picture = excluded.picture, known = 1
                """,
                [.text(person.id), .text(person.displayName), .optionalText(person.avatarURL?.absoluteString)]
            )
        }
    }

    public func unknownUsers(among ids: [String]) async throws -> [String] {
        guard !ids.isEmpty else { return [] }
        let list = SQLiteHandle.padded(HeraldID.sorted(Set(ids)).map { [.text($0)] })
        return try await database.perform { connection in
            let known = try connection.query(
                "SELECT id FROM users WHERE known = 1 AND id IN (\(list.placeholders))", list.binds
            ).compactMap { $0.column("id")?.string }
            return HeraldID.sorted(Set(ids).subtracting(known))
        }
    }

    public func findUsers(_ search: UserSearch) async throws -> [Person] {
        let pattern = "%" + UserSearch.escapedForLike(search.query.lowercased()) + "%"
        let idPattern = UserSearch.escapedForLike(search.query) + "%"
        // Everyone known, or the people the caller shares a conversation with; never the caller.
        let scope = search.scope == .everyone ? "" : """
            AND u.id IN (SELECT b.user_id FROM members a JOIN members b ON b.conversation_id = a.conversation_id
                         WHERE a.user_id = ?1)
            """
        return try await database.perform { connection in
            try connection.query(
                """
                SELECT u.id, u.name, u.picture FROM users u
                WHERE u.known = 1 AND u.id <> ?1 AND u.id > ?2 \(scope)
                  AND (lower(u.name) LIKE ?3 ESCAPE '\\' OR u.id LIKE ?4 ESCAPE '\\')
                ORDER BY u.id LIMIT ?5
                """,
                [.text(search.userID), .text(search.after ?? ""), .text(pattern), .text(idPattern), .integer(search.limit)]
            ).compactMap(Self.person(from:))
        }
    }

    public func createConversation(
        kind: Conversation.Kind,
        title: String?,
        memberIDs: [String]
    ) async throws -> (record: ConversationRecord, created: Bool) {
        let members = HeraldID.sorted(Set(memberIDs))
        let directKey: String? = kind == .direct ? Self.directKey(members) : nil
        let id = UUID().uuidString.lowercased()
        return try await database.transaction { connection in
            if let directKey {
                let existing = try connection.query(
                    "SELECT id FROM conversations WHERE direct_key = ?1", [.text(directKey)])
                if let existingID = existing.first?.column("id")?.string {
                    return (try Self.conversation(id: existingID, on: connection)!, false)
                }
            }
            try connection.query(
                "INSERT INTO conversations (id, kind, title, direct_key, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                [.text(id), .text(kind.rawValue), .optionalText(title), .optionalText(directKey),
                 .float(Date().timeIntervalSince1970)]
            )
            // A new conversation stands in its members' lists where the newest message of the server stands.
            let activity = try Self.latestSeq(on: connection)
            for member in members {
                try connection.query("INSERT OR IGNORE INTO users (id) VALUES (?1)", [.text(member)])
                try connection.query(
                    "INSERT INTO members (conversation_id, user_id, activity) VALUES (?1, ?2, ?3)",
                    [.text(id), .text(member), .integer(Int(activity))])
            }
            return (try Self.conversation(id: id, on: connection)!, true)
        }
    }

    public func conversation(id: String) async throws -> ConversationRecord? {
        try await database.perform { connection in
            try Self.conversation(id: id, on: connection)
        }
    }

    private static func conversation(id: String, on connection: SQLiteHandle) throws -> ConversationRecord? {
        let rows = try connection.query("SELECT id, kind, title FROM conversations WHERE id = ?1", [.text(id)])
        guard let row = rows.first else { return nil }
        let members = try connection.query(
            """
            SELECT u.id, u.name, u.picture FROM members m JOIN users u ON u.id = m.user_id
            WHERE m.conversation_id = ?1 ORDER BY u.id
            """,
            [.text(id)]
        )
        return ConversationRecord(
            conversation: try conversation(from: row),
            memberIDs: members.compactMap { $0.column("id")?.string },
            people: members.compactMap(person(from:))
        )
    }

    /// The user in a row of `id`, `name`, `picture`, if they have a name (they signed in at least once).
    private static func person(from row: SQLiteValues) -> Person? {
        guard let id = row.column("id")?.string, let name = row.column("name")?.string, !name.isEmpty else { return nil }
        return Person(id: id, displayName: name, avatarURL: row.column("picture")?.string.flatMap(URL.init(string:)))
    }

    public func conversations(
        of userID: String, after cursor: ConversationCursor?, limit: Int, mutedOnly: Bool
    ) async throws -> ConversationPage {
        try await database.perform { connection in
            // One index range of the member's rows, newest activity first; the last message is the one whose seq is
            // the activity; the unread count stops at its limit.
            let rows = try connection.query(
                """
                SELECT c.id, c.kind, c.title, me.muted, me.read_seq, me.activity,
                       (SELECT count(*) FROM (SELECT 1 FROM messages m
                          WHERE m.conversation_id = c.id AND m.seq > me.read_seq AND m.sender_id <> ?1 LIMIT ?5)) AS unread,
                       last.seq, last.id AS message_id, last.sender_id, last.text, last.image_url, last.created_at
                FROM members me
                JOIN conversations c ON c.id = me.conversation_id
                LEFT JOIN messages last ON last.seq = me.activity AND last.conversation_id = me.conversation_id
                WHERE me.user_id = ?1 AND (?6 = 0 OR me.muted = 1)
                  AND (me.activity, me.conversation_id) < (?2, ?3)
                ORDER BY me.activity DESC, me.conversation_id DESC
                LIMIT ?4
                """,
                // The first page starts "after" (Int64.max, ""): before everything, as no activity reaches it.
                [.text(userID), .integer(Int(cursor?.activity ?? Int64.max)), .text(cursor?.conversationID ?? ""),
                 .integer(limit), .integer(ConversationSummary.unreadLimit), .integer(mutedOnly ? 1 : 0)]
            )
            let conversations = try rows.map(Self.conversation(from:))
            let members = try Self.members(of: conversations.map(\.id), on: connection)
            let summaries = try zip(rows, conversations).map { row, conversation in
                let lastMessage: Message? = row.column("seq")?.integer == nil
                    ? nil : try Self.message(from: row, idColumn: "message_id", conversationID: conversation.id)
                let (ids, people) = members[conversation.id] ?? ([], [])
                return ConversationSummary(
                    record: ConversationRecord(conversation: conversation, memberIDs: ids, people: people),
                    lastMessage: lastMessage,
                    unreadCount: Int(row.column("unread")?.integer ?? 0),
                    readUpTo: Int64(row.column("read_seq")?.integer ?? 0),
                    muted: row.column("muted")?.integer == 1,
                    activity: Int64(row.column("activity")?.integer ?? 0)
                )
            }
            let next = summaries.count == limit ? summaries.last.map(ConversationCursor.init(after:)) : nil
            return ConversationPage(summaries: summaries, next: next)
        }
    }

    /// The members of each of `conversationIDs` (ids in byte order, and the people among them who have a name),
    /// in one query.
    private static func members(
        of conversationIDs: [String], on connection: SQLiteHandle
    ) throws -> [String: (ids: [String], people: [Person])] {
        guard !conversationIDs.isEmpty else { return [:] }
        let list = SQLiteHandle.padded(conversationIDs.map { [.text($0)] })
        let rows = try connection.query(
            """
            SELECT m.conversation_id, u.id, u.name, u.picture FROM members m JOIN users u ON u.id = m.user_id
            WHERE m.conversation_id IN (\(list.placeholders)) ORDER BY m.conversation_id, u.id
            """,
            list.binds
        )
        var members: [String: (ids: [String], people: [Person])] = [:]
        for row in rows {
            guard let conversationID = row.column("conversation_id")?.string, let id = row.column("id")?.string else { continue }
            members[conversationID, default: ([], [])].ids.append(id)
            if let person = person(from: row) { members[conversationID, default: ([], [])].people.append(person) }
        }
        return members
    }

    public func messages(in conversationID: String, after: Int64?, before: Int64?, limit: Int) async throws -> [Message] {
        try await database.perform { connection in
            let rows: [SQLiteValues]
            if let after {
                rows = try connection.query(
                    """
                    SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages
                    WHERE conversation_id = ?1 AND seq > ?2 AND seq < ?3 ORDER BY seq LIMIT ?4
                    """,
                    [.text(conversationID), .integer(Int(after)), .integer(Int(before ?? Int64.max)), .integer(limit)]
                )
            } else {
                rows = try connection.query(
                    """
                    SELECT * FROM (
                        SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages
                        WHERE conversation_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3
                    ) ORDER BY seq
                    """,
                    [.text(conversationID), .integer(Int(before ?? Int64.max)), .integer(limit)]
                )
            }
            return try rows.map { try Self.message(from: $0, idColumn: "id", conversationID: nil) }
        }
    }

    public func messages(for userID: String, after: Int64, through: Int64, limit: Int) async throws -> [IncomingMessage] {
        try await database.perform { connection in
            let rows = try connection.query(
                """
                SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at,
                       c.kind, c.title, u.name AS sender_name, u.picture AS sender_picture
                FROM messages m
                JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = ?1
                JOIN conversations c ON c.id = m.conversation_id
                JOIN users u ON u.id = m.sender_id
                WHERE m.seq > ?2 AND m.seq <= ?3
                ORDER BY m.seq
                LIMIT ?4
                """,
                [.text(userID), .integer(Int(after)), .integer(Int(through)), .integer(limit)]
            )
            return try rows.map { row in
                let message = try Self.message(from: row, idColumn: "id", conversationID: nil)
                return IncomingMessage(
                    message: message,
                    conversation: Conversation(
                        id: message.conversationID,
                        kind: Conversation.Kind(rawValue: row.column("kind")?.string ?? "") ?? .group,
                        title: row.column("title")?.string
                    ),
                    sender: Person(
                        id: message.senderID,
                        displayName: row.column("sender_name")?.string ?? "",
                        avatarURL: row.column("sender_picture")?.string.flatMap(URL.init(string:))
                    )
                )
            }
        }
    }

    public func latestSeq() async throws -> Int64 {
        try await database.perform { connection in
            try Self.latestSeq(on: connection)
        }
    }

    private static func latestSeq(on connection: SQLiteHandle) throws -> Int64 {
        let rows = try connection.query("SELECT coalesce(max(seq), 0) AS seq FROM messages")
        return Int64(rows.first?.column("seq")?.integer ?? 0)
    }

    public func markRead(userID: String, conversationID: String, upTo seq: Int64) async throws {
        try await database.perform { connection in
            _ = try connection.query(
                """
                UPDATE members SET read_seq = max(read_seq,
                    min(?3, coalesce((SELECT max(seq) FROM messages WHERE conversation_id = ?1), 0)))
                WHERE conversation_id = ?1 AND user_id = ?2
                """,
                [.text(conversationID), .text(userID), .integer(Int(seq))]
            )
        }
    }

    public func setMuted(_ muted: Bool, userID: String, conversationID: String) async throws {
        try await database.perform { connection in
            _ = try connection.query(
                "UPDATE members SET muted = ?3 WHERE conversation_id = ?1 AND user_id = ?2",
                [.text(conversationID), .text(userID), .integer(muted ? 1 : 0)]
            )
        }
    }

    public func registerDevice(_ device: DeviceRegistration, limit: Int) async throws {
        try await database.transaction { connection in
            let existing = try connection.query(
                "SELECT 1 FROM devices WHERE user_id = ?1 AND id = ?2", [.text(device.userID), .text(device.id)])
            if existing.isEmpty {
                let count = try connection.query(
                    "SELECT count(*) AS n FROM devices WHERE user_id = ?1", [.text(device.userID)])
                if (count.first?.column("n")?.integer ?? 0) >= limit {
                    throw StoreError.deviceLimit(limit)
                }
            }
            // The token moves to this device, from whichever user or device held it before.
            let previous = try connection.query(
                "DELETE FROM devices WHERE platform = ?1 AND token = ?2 AND NOT (user_id = ?3 AND id = ?4) RETURNING user_id, id",
                [.text(device.platform.rawValue), .text(device.token), .text(device.userID), .text(device.id)]
            )
            for row in previous {
                try Self.forgetPushes(userID: row.column("user_id")?.string ?? "", deviceID: row.column("id")?.string ?? "", on: connection)
            }
            try connection.query(
                """
                INSERT INTO devices (user_id, id, platform, token, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
                ON CONFLICT(user_id, id) DO UPDATE SET platform = excluded.platform, token = excluded.token,
                    updated_at = excluded.updated_at
                """,
                [.text(device.userID), .text(device.id), .text(device.platform.rawValue), .text(device.token),
                 .float(Date().timeIntervalSince1970)]
            )
        }
    }

    public func removeDevice(id: String, userID: String) async throws -> Bool {
        try await database.transaction { connection in
            let rows = try connection.query(
                "DELETE FROM devices WHERE user_id = ?1 AND id = ?2 RETURNING id", [.text(userID), .text(id)])
            try Self.forgetPushes(userID: userID, deviceID: id, on: connection)
            return !rows.isEmpty
        }
    }

    /// A removed device's pushes go with it.
    private static func forgetPushes(userID: String, deviceID: String, on connection: SQLiteHandle) throws {
        try connection.query("DELETE FROM push_jobs WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
        try connection.query("DELETE FROM push_shown WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
    }

    /// How much free space below which the disk counts as full: a group of posts needs room to be written.
    static let headroom = 1 << 20

    /// The embedded database is reachable while it is open (a job on it answers). It is full while its disk has less
    /// than ``headroom`` free, or while a write found it full and none has succeeded since (tried here once there
    /// is room again: the row of `server_state`, rewritten as it is).
    public func health(within timeout: Duration) async -> StoreHealth {
        if let folder, let free = Self.freeBytes(at: folder), free < Self.headroom { return .full }
        let answer = try? await database.perform { connection -> StoreHealth in
            guard connection.diskFull else { return .ok }
            _ = try? connection.query("UPDATE server_state SET running = running WHERE id = 1")
            return connection.diskFull ? .full : .ok
        }
        return answer ?? .unreachable
    }

    /// The bytes an unprivileged writer may still use on the file system holding `path`.
    static func freeBytes(at path: String) -> Int? {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return nil }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    public func devices(of userID: String) async throws -> [DeviceRegistration] {
        try await database.perform { connection in
            let rows = try connection.query(
                "SELECT id, platform, token FROM devices WHERE user_id = ?1 ORDER BY id", [.text(userID)])
            return rows.compactMap { row in
                guard let id = row.column("id")?.string, let token = row.column("token")?.string,
                      let platform = row.column("platform")?.string.flatMap(DeviceRegistration.Platform.init)
                else { return nil }
                return DeviceRegistration(id: id, userID: userID, platform: platform, token: token)
            }
        }
    }

    /// The key that finds the direct chat of `members` (sorted by bytes): each id prefixed by its length in bytes,
    /// so no two pairs of ids share a key, whatever characters they hold.
    static func directKey(_ members: [String]) -> String {
        members.map { "\($0.utf8.count):\($0)" }.joined()
    }

    // MARK: Rows

    private static func conversation(from row: SQLiteValues) throws -> Conversation {
        guard let id = row.column("id")?.string,
              let kind = row.column("kind")?.string.flatMap(Conversation.Kind.init(rawValue:))
        else { throw StoreError.damaged("a conversation row") }
        return Conversation(id: id, kind: kind, title: row.column("title")?.string)
    }

    static func message(from row: SQLiteValues, idColumn: String, conversationID: String?) throws -> Message {
        guard let seq = row.column("seq")?.integer,
              let id = row.column(idColumn)?.string,
              let conversation = conversationID ?? row.column("conversation_id")?.string,
              let sender = row.column("sender_id")?.string
        else { throw StoreError.damaged("a message row") }
        return Message(
            id: id,
            conversationID: conversation,
            senderID: sender,
            text: row.column("text")?.string,
            imageURL: row.column("image_url")?.string.flatMap(URL.init(string:)),
            sentAt: date(row.column("created_at")?.double ?? 0),
            seq: Int64(seq)
        )
    }

    /// A stored time, to the millisecond, so a message reads back exactly as it was sent.
    static func date(_ seconds: Double) -> Date {
        Date(timeIntervalSince1970: (seconds * 1000).rounded() / 1000)
    }
}

extension SQLiteData {
    static func optionalText(_ text: String?) -> SQLiteData {
        text.map { .text($0) } ?? .null
    }
}
