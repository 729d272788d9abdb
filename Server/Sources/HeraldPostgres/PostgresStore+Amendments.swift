import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import PostgresNIO

/// Edits and deletions on PostgreSQL: as on SQLite (``SQLiteStore/amend(_:)``), one transaction holding the
/// sequence's counter.
extension PostgresStore {
    public func amend(_ amendment: MessageAmendment) async throws -> AmendOutcome {
        let now = clock.now()
        let logger = self.logger
        return try await appending { connection, last in
            let found = try await connection.query(
                """
                SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent,
                       m.mentions, m.edits, m.deleted, c.kind, c.title, u.name AS sender_name, u.picture AS sender_picture,
                       me.owner AS actor_owner
                FROM messages m
                JOIN conversations c ON c.id = m.conversation_id
                JOIN users u ON u.id = m.sender_id
                JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = \(amendment.actorID)
                    AND me.removed_seq IS NULL
                WHERE m.conversation_id = \(amendment.conversationID) AND m.id = \(amendment.messageID) AND NOT c.deleted
                  AND m.seq >= me.visible_from
                FOR UPDATE OF m
                """, logger: logger).collect()
            let target = try found.first.map { try AmendmentTarget(row: $0.makeRandomAccess()) }
            try AmendmentRules.check(amendment, of: target, at: now)
            guard let target else { throw StoreError.messageNotFound }
            let incoming = target.incoming
            let seq = target.message.seq ?? 0
            let people = try await connection.query(
                "SELECT id, name, picture, known FROM users WHERE id = \(amendment.actorID)", logger: logger).collect()
            let actor = try people.first.flatMap { try Rows.person($0.makeRandomAccess()) }
                ?? Person(id: amendment.actorID, displayName: "")

            let id = UUID().uuidString.lowercased()
            let entrySeq = last + 1
            var text: String?
            var mentions: String?
            if case .edit(let newText, let ids, let all) = amendment.action {
                text = newText
                mentions = Rows.mentionsColumn(ids: ids, all: all)
            }
            try await connection.query(
                """
                INSERT INTO messages (seq, id, conversation_id, sender_id, text, created_at, event, mentions, about)
                VALUES (\(entrySeq), \(id), \(amendment.conversationID), \(actor.id), \(text), \(now.timeIntervalSince1970),
                        \(Rows.eventColumn(amendment.event(about: seq))), \(mentions), \(amendment.messageID))
                """, logger: logger)
            let entry = AmendmentRules.entry(
                of: amendment, about: seq, id: id, seq: entrySeq, at: Rows.date(now.timeIntervalSince1970), by: actor,
                in: incoming.conversation)
            let message = target.message.amended(by: entry.message)

            if amendment.deletes {
                // As on SQLite: the text goes from the message, its edits, and the outboxes.
                try await connection.query(
                    "UPDATE messages SET text = NULL, image_url = NULL, mentions = NULL, deleted = true WHERE seq = \(seq)",
                    logger: logger)
                try await connection.query(
                    """
                    UPDATE messages SET text = NULL, mentions = NULL
                    WHERE conversation_id = \(amendment.conversationID) AND about = \(amendment.messageID) AND seq <> \(entrySeq)
                    """, logger: logger)
                try await connection.query(
                    """
                    DELETE FROM push_jobs WHERE kind IN ('alert', 'follow') AND seq = \(seq)
                      AND (leased_until IS NULL OR leased_until < \(now.timeIntervalSince1970))
                    """, logger: logger)
                // As on SQLite: one in flight keeps its row, without the text, until its send ends.
                let marker = PushContent.deletedInFlight(amendment.conversationID, messageID: amendment.messageID, seq: seq)
                try await connection.query(
                    "UPDATE push_jobs SET content = \(marker) WHERE kind IN ('alert', 'follow') AND seq = \(seq)", logger: logger)
                try await connection.query(
                    """
                    DELETE FROM webhook_jobs WHERE type IN ('message.new', 'message.edited') AND (seq = \(seq) OR seq IN
                        (SELECT seq FROM messages WHERE conversation_id = \(amendment.conversationID) AND about = \(amendment.messageID)))
                    """, logger: logger)
            } else {
                try await connection.query(
                    "UPDATE messages SET text = \(text), mentions = \(mentions), edits = edits + 1 WHERE seq = \(seq)",
                    logger: logger)
                // Pushes of it not sent yet say the new words when they go (one in flight, should it be sent again).
                let pending = try await connection.query(
                    """
                    SELECT id, user_id, content FROM push_jobs
                    WHERE kind IN ('alert', 'follow') AND seq = \(seq) FOR UPDATE
                    """, logger: logger)
                var edited = incoming
                edited.message = message
                var rewritten: [(Int64, String)] = []
                for try await (jobID, userID, old) in pending.decode((Int64, String, String).self) {
                    if let new = PushContent.rewritten(old, to: edited, viewer: userID) { rewritten.append((jobID, new)) }
                }
                for (jobID, content) in rewritten {
                    try await connection.query("UPDATE push_jobs SET content = \(content) WHERE id = \(jobID)", logger: logger)
                }
            }
            return ([entry], AmendOutcome(entry: entry, message: message))
        }
    }
}
