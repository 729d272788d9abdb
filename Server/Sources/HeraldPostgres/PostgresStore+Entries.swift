import Foundation
import HeraldCore
import HeraldRecords
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// The event log on PostgreSQL: posting (group commit, one committer per node) and reading entries.
extension PostgresStore {
    public func post(_ draft: MessageDraft) async throws -> PostOutcome {
        // One committer at a time takes what waits, group by group, until nothing does. One of the server's few
        // unstructured tasks: the committer is no post's own, so that a post whose request is cancelled (its client
        // went away) never cancels the group committed with it; it ends when nothing waits.
        try await posts.add(draft) { Task { await self.commitWaiting() } }
    }

    public func post(_ draft: MessageDraft, answer: @escaping @Sendable (Result<PostOutcome, any Error>) -> Void) {
        posts.add(draft, schedule: { Task { await self.commitWaiting() } }, answer: answer)
    }

    /// Ends once ``GroupCommitQueue/take()`` finds nothing waiting: each round's transaction is bounded by the pool's
    /// limit (``BoundedPostgres``), and each group taken is ended by ``finish(_:_:)``, answered or failed.
    private func commitWaiting() async {
        while true {
            let (group, _) = posts.take()
            guard !group.isEmpty else { return }
            do {
                finish(group, try await store(group.map(\.draft)))
            } catch where !GroupCommitQueue.retriesEachAlone(after: error, groupOf: group.count) {
                finish(group, (group.map { _ in .failure(error) }, nil))
            } catch {
                for post in group {
                    do {
                        finish([post], try await store([post.draft]))
                    } catch {
                        finish([post], ([.failure(error)], nil))
                    }
                }
            }
        }
    }

    private func finish(_ group: [GroupCommitQueue.Post], _ stored: (outcomes: [Result<PostOutcome, any Error>], seqs: ClosedRange<Int64>?)) {
        posts.finish(group, with: stored.outcomes, sink: commits, committed: stored.seqs)
    }

    /// Stores `drafts` in one transaction: the counter row locked (and with it every other node's entries held
    /// until this commits), the senders' membership and the ids already used looked up, the new messages inserted
    /// with the next numbers, the counter moved past them. An outcome for each draft, in order, and the seqs used;
    /// throws if the transaction as a whole failed (the seqs it reserved are released in the log).
    private func store(
        _ drafts: [MessageDraft]
    ) async throws -> (outcomes: [Result<PostOutcome, any Error>], seqs: ClosedRange<Int64>?) {
        let createdAt = clock.now().timeIntervalSince1970
        // Rolled back: the seqs it took are given again, and the log goes on past them.
        let (messages, reserved) = try await commits.appending { reservation in
            try await transaction { connection -> [MessageKey: (message: Message, new: Bool)] in
                    let counter = try await connection.query(
                        "SELECT seq FROM message_seq WHERE id = 1 FOR UPDATE", logger: self.logger).collect()
                    var seq = try counter.first.map { try $0.decode(Int64.self) } ?? 0
                    var messages: [MessageKey: (message: Message, new: Bool)] = [:]
                    let used = try await connection.query(
                        """
                        SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent, m.mentions, m.edits, m.deleted
                        FROM messages m
                        JOIN unnest(\(drafts.map(\.conversation.id))::text[], \(drafts.map(\.id))::text[]) AS d(c, i)
                            ON m.conversation_id = d.c AND m.id = d.i
                        """, logger: self.logger).collect()
                    for row in used {
                        let message = try Rows.message(row.makeRandomAccess())
                        messages[MessageKey(conversationID: message.conversationID, id: message.id)] = (message, false)
                    }
                    // Only members post (checked under the counter's lock, which changes of members take too).
                    let allowed = try await connection.query(
                        """
                        SELECT me.conversation_id, me.user_id FROM members me
                        JOIN unnest(\(drafts.map(\.conversation.id))::text[], \(drafts.map(\.sender.id))::text[]) AS d(c, u)
                            ON me.conversation_id = d.c AND me.user_id = d.u
                        WHERE me.removed_seq IS NULL
                        """, logger: self.logger)
                    var members: Set<[String]> = []
                    for try await (conversationID, userID) in allowed.decode((String, String).self) {
                        members.insert([conversationID, userID])
                    }
                    var rows: [MessageRow] = []
                    // A system message (no sender) needs no membership.
                    for draft in drafts where messages[draft.key] == nil
                        && (draft.sender.id.isEmpty || members.contains([draft.conversation.id, draft.sender.id])) {
                        seq += 1
                        let message = Message(
                            id: draft.id, conversationID: draft.conversation.id, senderID: draft.sender.id, text: draft.text,
                            imageURL: draft.imageURL, sentAt: Rows.date(createdAt), seq: seq, silent: draft.silent,
                            mentions: draft.mentions, mentionsAll: draft.mentionsAll)
                        messages[draft.key] = (message, true)
                        rows.append(MessageRow(
                            seq: seq, id: draft.id, conversation_id: draft.conversation.id, sender_id: draft.sender.id,
                            text: draft.text, image_url: draft.imageURL?.absoluteString, created_at: createdAt,
                            silent: draft.silent, mentions: draft.mentionsColumn))
                    }
                    guard let first = rows.first?.seq else { return messages }
                    // Until this commits (or rolls back), the log hands on nothing past these seqs.
                    try reservation.reserve(first...seq)
                    let json = String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
                    try await connection.query(
                        """
                        INSERT INTO messages (seq, id, conversation_id, sender_id, text, image_url, created_at, silent, mentions)
                        SELECT seq, id, conversation_id, sender_id, text, image_url, created_at, silent, mentions
                        FROM jsonb_to_recordset(\(json)::jsonb) AS m(seq bigint, id text, conversation_id text, sender_id text,
                            text text, image_url text, created_at double precision, silent boolean, mentions text)
                        ORDER BY seq
                        """, logger: self.logger)
                    try await connection.query("UPDATE message_seq SET seq = \(seq) WHERE id = 1", logger: self.logger)
                    // Delivered at commit, to every node listening (the payload is the last seq, never the entry).
                    try await connection.query("SELECT pg_notify('herald_entries', \(String(seq)))", logger: self.logger)
                    return messages
            }
        }
        return (GroupCommitQueue.outcomes(of: drafts, messages: messages), reserved)
    }

    public func entries(
        in conversationID: String, for userID: String?, after: Int64?, before: Int64?, limit: Int
    ) async throws -> [Message] {
        try await database.withConnection { connection in
            // What the member may see starts at `visible_from` (and an edit of a message before it is not theirs:
            // it carries the text); the app's backend sees everything.
            let from: Int64
            if let userID {
                let member = try await connection.query(
                    """
                    SELECT me.visible_from FROM members me JOIN conversations c ON c.id = me.conversation_id
                    WHERE me.conversation_id = \(conversationID) AND me.user_id = \(userID) AND me.removed_seq IS NULL
                      AND NOT c.deleted
                    """, logger: self.logger).collect()
                guard let visible = try member.first.map({ try $0.decode(Int64.self) }) else { throw StoreError.notAMember }
                from = visible
            } else {
                let found = try await connection.query(
                    "SELECT 1 FROM conversations WHERE id = \(conversationID) AND NOT deleted", logger: self.logger).collect()
                guard !found.isEmpty else { throw StoreError.conversationNotFound }
                from = 0
            }
            let rows: [PostgresRow]
            if let after {
                rows = try await connection.query(
                    """
                    SELECT seq, id, conversation_id, sender_id, text, image_url, created_at, event, silent, mentions, edits, deleted FROM messages
                    WHERE conversation_id = \(conversationID) AND seq > \(after) AND seq < \(before ?? Int64.max)
                      AND seq >= \(from) AND (about IS NULL OR text IS NULL OR (SELECT t.seq FROM messages t
                          WHERE t.conversation_id = messages.conversation_id AND t.id = messages.about) >= \(from))
                    ORDER BY seq LIMIT \(limit)
                    """, logger: self.logger).collect()
            } else {
                rows = try await connection.query(
                    """
                    SELECT * FROM (
                        SELECT seq, id, conversation_id, sender_id, text, image_url, created_at, event, silent, mentions, edits, deleted FROM messages
                        WHERE conversation_id = \(conversationID) AND seq < \(before ?? Int64.max) AND seq >= \(from)
                          AND (about IS NULL OR text IS NULL OR (SELECT t.seq FROM messages t
                              WHERE t.conversation_id = messages.conversation_id AND t.id = messages.about) >= \(from))
                        ORDER BY seq DESC LIMIT \(limit)
                    ) AS page ORDER BY seq
                    """, logger: self.logger).collect()
            }
            return try rows.map { try Rows.message($0.makeRandomAccess()) }
        }
    }

    public func entries(for userID: String, after: Int64, through: Int64, limit: Int) async throws -> [IncomingMessage] {
        let rows = try await database.query(
            """
            SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent, m.mentions, m.edits, m.deleted,
                   c.kind, c.title, u.name AS sender_name, u.picture AS sender_picture
            FROM messages m
            JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = \(userID)
            JOIN conversations c ON c.id = m.conversation_id
            JOIN users u ON u.id = m.sender_id
            WHERE m.seq > \(after) AND m.seq <= \(through) AND m.seq >= me.added_seq
              AND (me.removed_seq IS NULL OR m.seq <= me.removed_seq)
              AND (m.about IS NULL OR m.text IS NULL OR (SELECT t.seq FROM messages t
                   WHERE t.conversation_id = m.conversation_id AND t.id = m.about) >= me.added_seq)
            ORDER BY m.seq
            LIMIT \(limit)
            """, logger: logger)
        return try rows.map { try Rows.incoming($0.makeRandomAccess()) }
    }

    public func entries(after: Int64, through: Int64, limit: Int) async throws -> [IncomingMessage] {
        try await Self.entries(after: after, through: through, limit: limit, from: database, logger: logger)
    }

    package static func entries(
        after: Int64, through: Int64, limit: Int, from database: BoundedPostgres, logger: Logger
    ) async throws -> [IncomingMessage] {
        let rows = try await database.query(
            """
            SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent, m.mentions, m.edits, m.deleted,
                   c.kind, c.title, u.name AS sender_name, u.picture AS sender_picture
            FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN users u ON u.id = m.sender_id
            WHERE m.seq > \(after) AND m.seq <= \(through) ORDER BY m.seq LIMIT \(Int64(min(limit, Int(Int64.max))))
            """, logger: logger)
        return try rows.map { try Rows.incoming($0.makeRandomAccess()) }
    }

    public func latestSeq() async throws -> Int64 {
        let rows = try await database.query("SELECT seq FROM message_seq WHERE id = 1", logger: logger)
        return try rows.first.map { try $0.decode(Int64.self) } ?? 0
    }
}

/// A new message's row, as the insert reads it from JSON.
private struct MessageRow: Encodable {
    var seq: Int64
    var id: String
    var conversation_id: String
    var sender_id: String
    var text: String?
    var image_url: String?
    var created_at: Double
    var silent: Bool
    var mentions: String?
}

/// Retention on PostgreSQL.
extension PostgresStore {
    public func expireEntries(before date: Date, limit: Int, waitingFor readers: [String]) async throws -> (deleted: Int, horizon: Int64) {
        try await transaction { connection in
            let deleted = try await connection.query(
                """
                DELETE FROM messages WHERE seq IN (
                    SELECT seq FROM messages WHERE created_at < \(date.timeIntervalSince1970)
                      AND seq <= coalesce((SELECT min(seq) FROM log_cursors WHERE name = ANY(\(readers)::text[])), \(Int64.max))
                    ORDER BY seq LIMIT \(limit))
                RETURNING seq
                """, logger: self.logger).collect()
            let seqs = try deleted.map { try $0.decode(Int64.self) }
            let highest = seqs.max() ?? 0
            // What the outboxes hold of them goes too (as on SQLite). The rows' old versions stay on disk until
            // PostgreSQL's (auto)vacuum reclaims them; no query sees them meanwhile.
            if !seqs.isEmpty {
                try await connection.query(
                    "DELETE FROM push_jobs WHERE kind <> 'clear' AND seq = ANY(\(seqs)::bigint[])", logger: self.logger)
                try await connection.query(
                    "DELETE FROM webhook_jobs WHERE type = 'message.new' AND seq = ANY(\(seqs)::bigint[])", logger: self.logger)
                try await connection.query("DELETE FROM push_sent WHERE seq = ANY(\(seqs)::bigint[])", logger: self.logger)
                // The delivery trail names the message's members and devices: it goes with the message.
                try await connection.query("DELETE FROM delivery_trail WHERE seq = ANY(\(seqs)::bigint[])", logger: self.logger)
            }
            let rows = try await connection.query(
                "UPDATE log_cursors SET seq = greatest(seq, \(highest)) WHERE name = 'horizon' RETURNING seq",
                logger: self.logger).collect()
            return (deleted.count, try rows.first.map { try $0.decode(Int64.self) } ?? 0)
        }
    }

    public func retentionHorizon() async throws -> Int64 {
        let rows = try await database.query("SELECT seq FROM log_cursors WHERE name = 'horizon'", logger: logger)
        return try rows.first.map { try $0.decode(Int64.self) } ?? 0
    }
}
