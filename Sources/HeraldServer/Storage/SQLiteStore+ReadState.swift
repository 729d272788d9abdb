import Foundation

/// Read markers and mutes on SQLite.
extension SQLiteStore {
    public func markRead(userID: String, conversationID: String, upTo seq: Int64, webhook: Bool) async throws {
        let move: @Sendable (SQLiteHandle) throws -> Void = { connection in
            let moved = try connection.query(
                """
                UPDATE members SET read_seq = max(read_seq,
                    min(?3, coalesce((SELECT max(seq) FROM messages WHERE conversation_id = ?1), 0)))
                WHERE conversation_id = ?1 AND user_id = ?2 AND removed_seq IS NULL
                  AND read_seq < min(?3, coalesce((SELECT max(seq) FROM messages WHERE conversation_id = ?1), 0))
                RETURNING read_seq
                """,
                [.text(conversationID), .text(userID), .integer(Int(seq))]
            )
            guard webhook, let marker = moved.first?.column("read_seq")?.integer else { return }
            _ = try Self.insertWebhooks([NewWebhookEvent.read(
                conversationID: conversationID, userID: userID, upTo: Int64(marker))], on: connection)
        }
        // One statement is a transaction of its own; with a webhook, the event joins it in one.
        if webhook {
            try await database.transaction(move)
        } else {
            try await database.perform(move)
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
