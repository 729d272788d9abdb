import Foundation

/// Read markers and mutes on SQLite.
extension SQLiteStore {
    public func markRead(userID: String, conversationID: String, upTo seq: Int64) async throws {
        try await database.perform { connection in
            _ = try connection.query(
                """
                UPDATE members SET read_seq = max(read_seq,
                    min(?3, coalesce((SELECT max(seq) FROM messages WHERE conversation_id = ?1), 0)))
                WHERE conversation_id = ?1 AND user_id = ?2 AND removed_seq IS NULL
                """,
                [.text(conversationID), .text(userID), .integer(Int(seq))]
            )
        }
    }

    public func setMuted(_ muted: Bool, userID: String, conversationID: String) async throws {
        try await database.perform { connection in
            _ = try connection.query(
                "UPDATE members SET muted = ?3 WHERE conversation_id = ?1 AND user_id = ?2 AND removed_seq IS NULL",
                [.text(conversationID), .text(userID), .integer(muted ? 1 : 0)]
            )
        }
    }
}
