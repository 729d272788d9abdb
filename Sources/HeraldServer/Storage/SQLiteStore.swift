import Foundation
import HeraldCore
import Logging
import SQLiteNIO

/// The embedded store: one SQLite file in WAL mode, migrated at start.
///
/// All work goes through one ``SerialDatabase``, so message sequence numbers, the `onStored` hook and
/// transactions happen strictly in order. `synchronous = NORMAL` in WAL mode keeps every committed message
/// across a crash of the server process; `HERALD_SQLITE_SYNC=full` also keeps it across a power cut.
public final class SQLiteStore: Store {
    let database: SerialDatabase

    /// Opens (creating if needed) the database at `path` (`:memory:` for a private in-memory one) and migrates it.
    public static func open(path: String, fullSync: Bool = false, logger: Logger) async throws -> SQLiteStore {
        let storage: SQLiteConnection.Storage = path == ":memory:" ? .memory : .file(path: path)
        let connection = try await SQLiteConnection.open(storage: storage, logger: logger)
        do {
            for pragma in ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = \(fullSync ? "FULL" : "NORMAL")",
                           "PRAGMA foreign_keys = ON", "PRAGMA busy_timeout = 5000"] {
                _ = try await connection.query(pragma, [])
            }
            try await SQLiteMigrations.migrate(connection, logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        return SQLiteStore(database: SerialDatabase(connection: connection, logger: logger))
    }

    private init(database: SerialDatabase) {
        self.database = database
    }

    public func upsertUser(_ person: Person) async throws {
        try await database.perform { connection in
            _ = try await connection.query(
                """
                INSERT INTO users (id, name, picture) VALUES (?1, ?2, ?3)
                ON CONFLICT(id) DO UPDATE SET name = excluded.name, picture = excluded.picture
                """,
                [.text(person.id), .text(person.displayName), .optionalText(person.avatarURL?.absoluteString)]
            )
        }
    }

    public func createConversation(
        kind: Conversation.Kind,
        title: String?,
        memberIDs: [String]
    ) async throws -> (record: ConversationRecord, created: Bool) {
        let members = Array(Set(memberIDs)).sorted()
        let directKey: String? = kind == .direct ? members.joined(separator: "\u{1F}") : nil
        let id = UUID().uuidString.lowercased()
        return try await database.transaction { connection in
            if let directKey {
                let existing = try await connection.query(
                    "SELECT id FROM conversations WHERE direct_key = ?1", [.text(directKey)])
                if let existingID = existing.first?.column("id")?.string {
                    return (try await Self.conversation(id: existingID, on: connection)!, false)
                }
            }
            _ = try await connection.query(
                "INSERT INTO conversations (id, kind, title, direct_key, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                [.text(id), .text(kind.rawValue), .optionalText(title), .optionalText(directKey),
                 .float(Date().timeIntervalSince1970)]
            )
            for member in members {
                _ = try await connection.query("INSERT OR IGNORE INTO users (id) VALUES (?1)", [.text(member)])
                _ = try await connection.query(
                    "INSERT INTO members (conversation_id, user_id) VALUES (?1, ?2)", [.text(id), .text(member)])
            }
            return (try await Self.conversation(id: id, on: connection)!, true)
        }
    }

    public func conversation(id: String) async throws -> ConversationRecord? {
        try await database.perform { connection in
            try await Self.conversation(id: id, on: connection)
        }
    }

    private static func conversation(id: String, on connection: SQLiteConnection) async throws -> ConversationRecord? {
        let rows = try await connection.query("SELECT id, kind, title FROM conversations WHERE id = ?1", [.text(id)])
        guard let row = rows.first else { return nil }
        let members = try await connection.query(
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
    private static func person(from row: SQLiteRow) -> Person? {
        guard let id = row.column("id")?.string, let name = row.column("name")?.string, !name.isEmpty else { return nil }
        return Person(id: id, displayName: name, avatarURL: row.column("picture")?.string.flatMap(URL.init(string:)))
    }

    public func conversations(of userID: String) async throws -> [ConversationSummary] {
        try await database.perform { connection in
            let rows = try await connection.query(
                """
                SELECT c.id, c.kind, c.title, me.muted, me.read_seq,
                       (SELECT group_concat(user_id, char(31)) FROM members WHERE conversation_id = c.id) AS member_ids,
                       (SELECT count(*) FROM messages m
                          WHERE m.conversation_id = c.id AND m.seq > me.read_seq AND m.sender_id <> ?1) AS unread,
                       last.seq, last.id AS message_id, last.sender_id, last.text, last.image_url, last.created_at
                FROM members me
                JOIN conversations c ON c.id = me.conversation_id
                LEFT JOIN messages last ON last.seq =
                    (SELECT max(seq) FROM messages WHERE conversation_id = c.id)
                WHERE me.user_id = ?1
                ORDER BY coalesce(last.seq, 0) DESC, c.created_at DESC
                """,
                [.text(userID)]
            )
            // The people of all these conversations at once, rather than a query per conversation.
            let known = try await connection.query(
                """
                SELECT DISTINCT u.id, u.name, u.picture FROM members mine
                JOIN members m ON m.conversation_id = mine.conversation_id
                JOIN users u ON u.id = m.user_id
                WHERE mine.user_id = ?1
                """,
                [.text(userID)]
            )
            let people = Dictionary(known.compactMap(Self.person(from:)).map { ($0.id, $0) }) { first, _ in first }
            return try rows.map { row in
                let conversation = try Self.conversation(from: row)
                let members = (row.column("member_ids")?.string ?? "").split(separator: "\u{1F}").map(String.init).sorted()
                let lastMessage: Message? = row.column("seq")?.integer == nil
                    ? nil : try Self.message(from: row, idColumn: "message_id", conversationID: conversation.id)
                return ConversationSummary(
                    record: ConversationRecord(
                        conversation: conversation, memberIDs: members, people: members.compactMap { people[$0] }),
                    lastMessage: lastMessage,
                    unreadCount: Int(row.column("unread")?.integer ?? 0),
                    readUpTo: Int64(row.column("read_seq")?.integer ?? 0),
                    muted: row.column("muted")?.integer == 1
                )
            }
        }
    }

    public func post(_ draft: MessageDraft, onStored: @escaping @Sendable (IncomingMessage) -> Void) async throws -> PostOutcome {
        try await database.perform { connection in
            let existing = try await connection.query(
                "SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages WHERE id = ?1",
                [.text(draft.id)]
            )
            if let row = existing.first {
                let message = try Self.message(from: row, idColumn: "id", conversationID: nil)
                guard message.senderID == draft.sender.id, message.conversationID == draft.conversation.id else {
                    throw APIError(.conflict, .idConflict, "message id \(draft.id) is already used by another message")
                }
                return .existing(message)
            }
            let now = Date()
            let rows = try await connection.query(
                """
                INSERT INTO messages (id, conversation_id, sender_id, text, image_url, created_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING seq
                """,
                [.text(draft.id), .text(draft.conversation.id), .text(draft.sender.id), .optionalText(draft.text),
                 .optionalText(draft.imageURL?.absoluteString), .float(now.timeIntervalSince1970)]
            )
            guard let seq = rows.first?.column("seq")?.integer else {
                throw APIError(.internalServerError, .internalError, "the message was not stored")
            }
            let message = Message(
                id: draft.id, conversationID: draft.conversation.id, senderID: draft.sender.id, text: draft.text,
                imageURL: draft.imageURL, sentAt: Self.date(now.timeIntervalSince1970), seq: Int64(seq)
            )
            onStored(IncomingMessage(message: message, conversation: draft.conversation, sender: draft.sender))
            return .stored(message)
        }
    }

    public func messages(in conversationID: String, after: Int64?, before: Int64?, limit: Int) async throws -> [Message] {
        try await database.perform { connection in
            let rows: [SQLiteRow]
            if let after {
                rows = try await connection.query(
                    """
                    SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages
                    WHERE conversation_id = ?1 AND seq > ?2 AND seq < ?3 ORDER BY seq LIMIT ?4
                    """,
                    [.text(conversationID), .integer(Int(after)), .integer(Int(before ?? Int64.max)), .integer(limit)]
                )
            } else {
                rows = try await connection.query(
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

    public func messages(for userID: String, after: Int64, limit: Int) async throws -> [IncomingMessage] {
        try await database.perform { connection in
            let rows = try await connection.query(
                """
                SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at,
                       c.kind, c.title, u.name AS sender_name, u.picture AS sender_picture
                FROM messages m
                JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = ?1
                JOIN conversations c ON c.id = m.conversation_id
                JOIN users u ON u.id = m.sender_id
                WHERE m.seq > ?2
                ORDER BY m.seq
                LIMIT ?3
                """,
                [.text(userID), .integer(Int(after)), .integer(limit)]
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
            let rows = try await connection.query("SELECT coalesce(max(seq), 0) AS seq FROM messages", [])
            return Int64(rows.first?.column("seq")?.integer ?? 0)
        }
    }

    public func markRead(userID: String, conversationID: String, upTo seq: Int64) async throws {
        try await database.perform { connection in
            _ = try await connection.query(
                "UPDATE members SET read_seq = max(read_seq, ?3) WHERE conversation_id = ?1 AND user_id = ?2",
                [.text(conversationID), .text(userID), .integer(Int(seq))]
            )
        }
    }

    public func setMuted(_ muted: Bool, userID: String, conversationID: String) async throws {
        try await database.perform { connection in
            _ = try await connection.query(
                "UPDATE members SET muted = ?3 WHERE conversation_id = ?1 AND user_id = ?2",
                [.text(conversationID), .text(userID), .integer(muted ? 1 : 0)]
            )
        }
    }

    public func registerDevice(_ device: DeviceRegistration) async throws {
        try await database.perform { connection in
            _ = try await connection.query(
                """
                INSERT INTO devices (id, user_id, platform, token, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
                ON CONFLICT(id) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform,
                    token = excluded.token, updated_at = excluded.updated_at
                """,
                [.text(device.id), .text(device.userID), .text(device.platform.rawValue), .text(device.token),
                 .float(Date().timeIntervalSince1970)]
            )
        }
    }

    public func removeDevice(id: String, userID: String) async throws -> Bool {
        try await database.perform { connection in
            let rows = try await connection.query(
                "DELETE FROM devices WHERE id = ?1 AND user_id = ?2 RETURNING id", [.text(id), .text(userID)])
            return !rows.isEmpty
        }
    }

    public func devices(of userID: String) async throws -> [DeviceRegistration] {
        try await database.perform { connection in
            let rows = try await connection.query(
                "SELECT id, platform, token FROM devices WHERE user_id = ?1 ORDER BY id", [.text(userID)])
            return rows.compactMap { row in
                guard let id = row.column("id")?.string, let token = row.column("token")?.string,
                      let platform = row.column("platform")?.string.flatMap(DeviceRegistration.Platform.init)
                else { return nil }
                return DeviceRegistration(id: id, userID: userID, platform: platform, token: token)
            }
        }
    }

    // MARK: Rows

    private static func conversation(from row: SQLiteRow) throws -> Conversation {
        guard let id = row.column("id")?.string,
              let kind = row.column("kind")?.string.flatMap(Conversation.Kind.init(rawValue:))
        else { throw APIError(.internalServerError, .internalError, "a conversation row is damaged") }
        return Conversation(id: id, kind: kind, title: row.column("title")?.string)
    }

    private static func message(from row: SQLiteRow, idColumn: String, conversationID: String?) throws -> Message {
        guard let seq = row.column("seq")?.integer,
              let id = row.column(idColumn)?.string,
              let conversation = conversationID ?? row.column("conversation_id")?.string,
              let sender = row.column("sender_id")?.string
        else { throw APIError(.internalServerError, .internalError, "a message row is damaged") }
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
    private static func date(_ seconds: Double) -> Date {
        Date(timeIntervalSince1970: (seconds * 1000).rounded() / 1000)
    }
}

extension SQLiteData {
    static func optionalText(_ text: String?) -> SQLiteData {
        text.map { .text($0) } ?? .null
    }
}
