import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords

/// Edits and deletions on SQLite: one transaction appends the amendment's entry, changes the message, and makes
/// the outboxes follow (pending pushes rewritten or dropped; a deleted message's undelivered webhooks dropped).
extension SQLiteStore {
    public func amend(_ amendment: MessageAmendment) async throws -> AmendOutcome {
        let now = clock.now()
        let outcome: AmendOutcome = try await appending { connection in
            let found = try connection.query(
                """
                SELECT \(Self.incomingColumns), me.owner AS actor_owner
                FROM messages m
                JOIN conversations c ON c.id = m.conversation_id
                JOIN users u ON u.id = m.sender_id
                JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = ?3 AND me.removed_seq IS NULL
                WHERE m.conversation_id = ?1 AND m.id = ?2 AND c.deleted = 0 AND m.seq >= me.visible_from
                """,
                [.text(amendment.conversationID), .text(amendment.messageID), .text(amendment.actorID)])
            let target = try found.first.map { try AmendmentTarget(row: $0) }
            try AmendmentRules.check(amendment, of: target, at: now)
            guard let target else { throw StoreError.messageNotFound }
            let incoming = target.incoming
            let seq = target.message.seq ?? 0
            let actor = try connection.query(
                "SELECT id, name, picture, known FROM users WHERE id = ?1", [.text(amendment.actorID)]
            ).first.flatMap(Rows.person) ?? Person(id: amendment.actorID, displayName: "")

            // The amendment's own entry: an edit carries the new text and mentions.
            let id = UUID().uuidString.lowercased()
            var text: String?
            var mentions: String?
            if case .edit(let newText, let ids, let all) = amendment.action {
                text = newText
                mentions = Rows.mentionsColumn(ids: ids, all: all)
            }
            let appended = try connection.query(
                """
                INSERT INTO messages (id, conversation_id, sender_id, text, created_at, event, mentions, about)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING seq
                """,
                [.text(id), .text(amendment.conversationID), .text(actor.id), .optionalText(text),
                 .float(now.timeIntervalSince1970), .optionalText(Rows.eventColumn(amendment.event(about: seq))),
                 .optionalText(mentions), .text(amendment.messageID)])
            guard let entrySeq = appended.first?.column("seq")?.integer else {
                throw StoreError.damaged("an amendment was not stored")
            }
            let entry = AmendmentRules.entry(
                of: amendment, about: seq, id: id, seq: Int64(entrySeq), at: Rows.date(now.timeIntervalSince1970), by: actor,
                in: incoming.conversation)
            let message = target.message.amended(by: entry.message)

            if amendment.deletes {
                // The text goes from the message, from every edit of it, and from what the outboxes hold of it:
                // its pushes not sent yet (and any in flight: they are not sent again), its follow-ups, and its
                // undelivered `message.new` and `message.edited` webhooks.
                try connection.query(
                    "UPDATE messages SET text = NULL, image_url = NULL, mentions = NULL, deleted = 1 WHERE seq = ?1",
                    [.integer(Int(seq))])
                try connection.query(
                    "UPDATE messages SET text = NULL, mentions = NULL WHERE conversation_id = ?1 AND about = ?2 AND seq <> ?3",
                    [.text(amendment.conversationID), .text(amendment.messageID), .integer(entrySeq)])
                try connection.query(
                    "DELETE FROM push_jobs WHERE kind IN ('alert', 'follow') AND seq = ?1 AND leased = 0", [.integer(Int(seq))])
                // One in flight keeps its row, without the text, until its send ends: a follow-up to its device waits
                // for it (it must not overtake the alert it removes), and it is never sent again.
                try connection.query(
                    "UPDATE push_jobs SET content = ?2 WHERE kind IN ('alert', 'follow') AND seq = ?1",
                    [.integer(Int(seq)), .text(PushContent.deletedInFlight(amendment.conversationID, messageID: amendment.messageID, seq: seq))])
                try connection.query(
                    """
                    DELETE FROM webhook_jobs WHERE type IN ('message.new', 'message.edited') AND (seq = ?1 OR seq IN
                        (SELECT seq FROM messages WHERE conversation_id = ?2 AND about = ?3))
                    """,
                    [.integer(Int(seq)), .text(amendment.conversationID), .text(amendment.messageID)])
            } else {
                try connection.query(
                    "UPDATE messages SET text = ?2, mentions = ?3, edits = edits + 1 WHERE seq = ?1",
                    [.integer(Int(seq)), .optionalText(text), .optionalText(mentions)])
                // Pushes of it not sent yet say the new words when they go (one in flight, should it be sent again);
                // a push in flight is followed up once it was sent.
                let pending = try connection.query(
                    "SELECT id, user_id, content FROM push_jobs WHERE kind IN ('alert', 'follow') AND seq = ?1",
                    [.integer(Int(seq))])
                var edited = incoming
                edited.message = message
                for row in pending {
                    guard let jobID = row.column("id")?.integer, let userID = row.column("user_id")?.string,
                          let new = row.column("content")?.string.flatMap({ PushContent.rewritten($0, to: edited, viewer: userID) })
                    else { continue }
                    try connection.query("UPDATE push_jobs SET content = ?2 WHERE id = ?1", [.integer(jobID), .text(new)])
                }
            }
            return ([entry], AmendOutcome(entry: entry, message: message))
        }
        // With `secure_delete`, the deleted text is zeros in the file once the write-ahead log is folded into it; the
        // log is then emptied, so no old copy of a page is left there either.
        if amendment.deletes { try await checkpoint() }
        return outcome
    }
}
