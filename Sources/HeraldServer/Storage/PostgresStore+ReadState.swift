import Foundation
import PostgresNIO

/// Read markers and mutes on PostgreSQL.
extension PostgresStore {
    public func markRead(userID: String, conversationID: String, upTo seq: Int64) async throws {
        try await database.query(
            """
            UPDATE members SET read_seq = greatest(read_seq,
                least(\(seq), coalesce((SELECT max(seq) FROM messages WHERE conversation_id = \(conversationID)), 0)))
            WHERE conversation_id = \(conversationID) AND user_id = \(userID) AND removed_seq IS NULL
            """, logger: logger)
    }

    public func setMuted(_ muted: Bool, userID: String, conversationID: String) async throws {
        try await database.query(
            "UPDATE members SET muted = \(muted) WHERE conversation_id = \(conversationID) AND user_id = \(userID) AND removed_seq IS NULL",
            logger: logger)
    }
}
