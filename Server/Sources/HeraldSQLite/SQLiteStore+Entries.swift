import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import NIOCore
import NIOPosix

/// The event log on SQLite: posting (group commit) and reading entries.
///
/// Group commit: every post joins the ``GroupCommitQueue``, and one job on the database takes all that wait (up to
/// its group size) and stores them with one statement, so in one write to the log (and, with
/// `HERALD_SQLITE_SYNC=full`, one sync). The job hands the stored entries to the ``EventLog`` before the next job
/// runs, so entries reach the log in `seq` order; a post is answered once its entry was handed on. A group costs a
/// fixed number of statements however many posts it holds: one insert of every new message (which moves the
/// members' list order and read markers too; a post alone is checked by a read first, then inserted plainly), and a
/// lookup only when some ids were used before. If the group fails
/// as a whole, each of its posts is tried again alone, so one bad post never fails the others.
extension SQLiteStore {
    /// Stores `draft` in the next group commit, which starts at once (the HTTP API's way in: it starts no wait for a
    /// commit window, though it joins one under way).
    public func post(_ draft: MessageDraft) async throws -> PostOutcome {
        try await posts.add(draft) { commitNow() }
    }

    /// Stores `draft` in the next group commit, which may wait for the commit window (a stream's `send`, read on its
    /// event loop: ``commitSoon(after:)``).
    public func post(_ draft: MessageDraft, answer: @escaping @Sendable (Result<PostOutcome, any Error>) -> Void) {
        posts.add(draft, schedule: { commitSoon(after: draft.sender.id) }, answer: answer)
    }

    /// How many transactions stored how many posts since the store opened.
    package var groupCommitStatistics: GroupCommitStatistics { posts.statistics }

    /// Commits what is waiting: at once, or, on an event loop within the commit window, at the window's end.
    ///
    /// The window (``commitWindow``) counts from the start of the last commit: a post by someone else that comes
    /// sooner is under load, and it waits on its loop, with every post that comes meanwhile, for one commit of them
    /// all. Each commit costs nearly as much for one post as for many (its write of the log's pages, its locks), so
    /// under load a few milliseconds' wait takes a good part of the server's CPU per delivery off
    /// (docs/benchmarks.md). A post after a quiet spell does not wait, nor does the next post of the sender whose post
    /// alone was the last commit: one client sending post after post (each once the last was answered, as a stream
    /// does) would only wait a window each, with nobody to share it.
    private func commitSoon(after sender: String) {
        if let commitWindow, let loop = MultiThreadedEventLoopGroup.currentEventLoop,
           let last = lastCommit.withLockedValue({ $0 }), last.soleSender != sender, last.began + commitWindow > .now() {
            // A loop that shuts down first cancels the task: the posts fail as they would with the database gone,
            // and none waits for ever.
            loop.scheduleTask(deadline: last.began + commitWindow) { self.commitNow() }.futureResult.whenFailure { [posts] _ in
                posts.failAll(with: SerialDatabase.shuttingDown)
            }
            return
        }
        commitNow()
    }

    /// Queues a job that commits what is waiting; if the database takes no more work, fails every waiting post.
    ///
    /// On an event loop, with the database idle, the group is committed at once on the loop
    /// (``SerialDatabase/runHereIfIdle(_:)``): the post's frame was read there, and its deliveries and answer go out
    /// from there, with no hand-over to the database's thread and back. Not when every commit waits for the disk.
    private func commitNow() {
        if !syncsEachCommit, MultiThreadedEventLoopGroup.currentEventLoop != nil,
           database.runHereIfIdle({ commitWaiting(on: $0) }) {
            return
        }
        let accepted = database.enqueue { [self] connection in
            commitWaiting(on: connection)
        }
        if !accepted { posts.failAll(with: SerialDatabase.shuttingDown) }
    }

    private func commitWaiting(on connection: SQLiteHandle) {
        let (group, more) = posts.take()
        if commitWindow != nil, !group.isEmpty {
            let alone = group.count == 1 ? group[0].draft.sender.id : nil
            lastCommit.withLockedValue { $0 = CommitMark(began: .now(), soleSender: alone) }
        }
        // Posts beyond this group (more than its most) wait for a job queued behind it (others' work in between
        // stays in order), not for a window.
        if more { commitNow() }
        guard !group.isEmpty else { return }
        do {
            finish(group, try store(group.map(\.draft), on: connection))
        } catch {
            guard GroupCommitQueue.retriesEachAlone(after: error, groupOf: group.count) else {
                return finish(group, (group.map { _ in .failure(error) }, []))
            }
            for post in group {
                do {
                    finish([post], try store([post.draft], on: connection))
                } catch {
                    finish([post], ([.failure(error)], []))
                }
            }
        }
    }

    private func finish(_ group: [GroupCommitQueue.Post], _ stored: (outcomes: [Result<PostOutcome, any Error>], seqs: [Int64])) {
        let range = stored.seqs.min().flatMap { first in stored.seqs.max().map { first...$0 } }
        posts.finish(group, with: stored.outcomes, sink: commits, committed: range)
    }

    /// Stores `drafts` in one insert (a post alone: ``insertAlone(_:createdAt:on:)``): an outcome for each, in order,
    /// and the seqs it used. Throws if the insert as a whole failed (then nothing of it is stored).
    ///
    /// A statement is a transaction of its own in SQLite, so the group needs no `BEGIN` and `COMMIT`, and the
    /// conversations' list order and the senders' read markers move in the same statement (the trigger
    /// `messages_move_conversation`).
    /// A draft is left out of the insert when its id is used in its conversation, or when its sender is no member of
    /// it (then it finds no message, and is answered `not_a_member`); used ids are looked up in a second statement,
    /// only when there are some.
    private func store(
        _ drafts: [MessageDraft], on connection: SQLiteHandle
    ) throws -> (outcomes: [Result<PostOutcome, any Error>], seqs: [Int64]) {
        // The first draft of each key is inserted; a repeat within the group is answered with that one's message.
        var fresh: [MessageDraft] = []
        var seen: Set<MessageKey> = []
        for draft in drafts where seen.insert(draft.key).inserted {
            fresh.append(draft)
        }

        let createdAt = clock.now().timeIntervalSince1970
        let inserted = fresh.count == 1
            ? try insertAlone(fresh[0], createdAt: createdAt, on: connection).map { [($0, fresh[0])] } ?? []
            : try insertGroup(fresh, createdAt: createdAt, on: connection)
        var messages: [MessageKey: (message: Message, new: Bool)] = [:]
        var seqs: [Int64] = []
        for (seq, draft) in inserted {
            seqs.append(seq)
            messages[draft.key] = (Message(
                id: draft.id, conversationID: draft.conversation.id, senderID: draft.sender.id, text: draft.text,
                imageURL: draft.imageURL, sentAt: Rows.date(createdAt), seq: seq, silent: draft.silent,
                mentions: draft.mentions, mentionsAll: draft.mentionsAll), true)
        }

        // Ids that were already stored in their conversation: their messages, for the sender's repeat or to refuse
        // another member's use.
        let used = fresh.map(\.key).filter { messages[$0] == nil }
        if !used.isEmpty {
            let list = SQLiteHandle.padded(used.map { [.text($0.conversationID), .text($0.id)] }, width: 2)
            let rows = try connection.query(
                "SELECT \(Self.entryColumns) FROM messages WHERE (conversation_id, id) IN (VALUES \(list.placeholders))",
                list.binds
            )
            for row in rows {
                let message = try Rows.message(row)
                messages[MessageKey(conversationID: message.conversationID, id: message.id)] = (message, false)
            }
        }
        return (GroupCommitQueue.outcomes(of: drafts, messages: messages), seqs)
    }

    /// Inserts `drafts` (distinct keys) in one statement; the seq of each inserted, with its draft. A draft whose id
    /// is used in its conversation, or whose sender is no member of it, is left out.
    ///
    /// The rows are padded to a power of two with rows of NULLs, which the insert leaves out: groups of any size
    /// share nine prepared statements. Ids used before are left out by the select rather than skipped as conflicts,
    /// which would use up seqs.
    private func insertGroup(
        _ drafts: [MessageDraft], createdAt: Double, on connection: SQLiteHandle
    ) throws -> [(Int64, MessageDraft)] {
        let values = SQLiteHandle.padded(drafts.map { Self.postedValues(of: $0, createdAt: createdAt) }, width: 8)
        let inserted = try connection.query(
            """
            INSERT INTO messages \(Self.postedColumns)
            SELECT * FROM (VALUES \(values.placeholders)) AS draft
            WHERE draft.column1 IS NOT NULL
              AND (draft.column3 = '' OR EXISTS (SELECT 1 FROM members me WHERE me.conversation_id = draft.column2
                          AND me.user_id = draft.column3 AND me.removed_seq IS NULL))
              AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = draft.column2 AND m.id = draft.column1)
            RETURNING seq, id, conversation_id
            """,
            values.binds
        )
        let byKey = Dictionary(uniqueKeysWithValues: drafts.map { ($0.key, $0) })
        return inserted.compactMap { row in
            guard let id = row.column("id")?.string, let conversationID = row.column("conversation_id")?.string,
                  let seq = row.column("seq")?.integer,
                  let draft = byKey[MessageKey(conversationID: conversationID, id: id)]
            else { return nil }
            return (Int64(seq), draft)
        }
    }

    /// Inserts `draft` alone, as ``insertGroup(_:createdAt:on:)`` would; its seq, or nil when it was left out.
    ///
    /// A post alone is the usual group at ordinary rates, and this costs it a quarter fewer instructions: SQLite
    /// runs an `INSERT … SELECT` into a table with a trigger, and a `RETURNING`, through a temporary table each,
    /// which cost as much as the rest of the insert. Here a read decides, then a plain `INSERT … VALUES` needs
    /// neither (its seq is the row's rowid); the store is its file's only writer, so nothing comes between them.
    private func insertAlone(_ draft: MessageDraft, createdAt: Double, on connection: SQLiteHandle) throws -> Int64? {
        let check = try connection.query(
            """
            SELECT (?3 = '' OR EXISTS (SELECT 1 FROM members me WHERE me.conversation_id = ?2 AND me.user_id = ?3
                        AND me.removed_seq IS NULL))
                   AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = ?2 AND m.id = ?1) AS fresh
            """,
            [.text(draft.id), .text(draft.conversation.id), .text(draft.sender.id)])
        guard check.first?.column("fresh")?.integer == 1 else { return nil }
        try connection.query(
            "INSERT INTO messages \(Self.postedColumns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            Self.postedValues(of: draft, createdAt: createdAt))
        return connection.lastInsertedRowID
    }

    /// The columns a post fills, in the order of ``postedValues(of:createdAt:)``.
    private static let postedColumns = "(id, conversation_id, sender_id, text, image_url, created_at, silent, mentions)"

    /// What a post stores in ``postedColumns``.
    private static func postedValues(of draft: MessageDraft, createdAt: Double) -> [SQLiteValue] {
        [.text(draft.id), .text(draft.conversation.id), .text(draft.sender.id), .optionalText(draft.text),
         .optionalText(draft.imageURL?.absoluteString), .float(createdAt), .integer(draft.silent ? 1 : 0),
         .optionalText(draft.mentionsColumn)]
    }

    /// The columns ``Rows/message(_:idColumn:conversationID:)`` reads.
    package static let entryColumns = "seq, id, conversation_id, sender_id, text, image_url, created_at, event, silent, mentions, edits, deleted"

    public func entries(
        in conversationID: String, for userID: String?, after: Int64?, before: Int64?, limit: Int
    ) async throws -> [Message] {
        try await database.perform { connection in
            // What the member may see starts at `visible_from` (0 for the whole history); a former member sees
            // nothing. The app's backend sees everything.
            let from: Int
            if let userID {
                let member = try connection.query(
                    """
                    SELECT me.visible_from FROM members me JOIN conversations c ON c.id = me.conversation_id
                    WHERE me.conversation_id = ?1 AND me.user_id = ?2 AND me.removed_seq IS NULL AND c.deleted = 0
                    """,
                    [.text(conversationID), .text(userID)])
                guard let visible = member.first?.column("visible_from")?.integer else { throw StoreError.notAMember }
                from = visible
            } else {
                let found = try connection.query(
                    "SELECT 1 AS found FROM conversations WHERE id = ?1 AND deleted = 0", [.text(conversationID)])
                guard !found.isEmpty else { throw StoreError.conversationNotFound }
                from = 0
            }
            let rows: [SQLiteValues]
            if let after {
                rows = try connection.query(
                    """
                    SELECT \(Self.entryColumns) FROM messages
                    WHERE conversation_id = ?1 AND seq > ?2 AND seq < ?3 AND seq >= ?5 AND \(Self.visibleAmendment("?5"))
                    ORDER BY seq LIMIT ?4
                    """,
                    [.text(conversationID), .integer(Int(after)), .integer(Int(before ?? Int64.max)), .integer(limit),
                     .integer(from)]
                )
            } else {
                rows = try connection.query(
                    """
                    SELECT * FROM (
                        SELECT \(Self.entryColumns) FROM messages
                        WHERE conversation_id = ?1 AND seq < ?2 AND seq >= ?4 AND \(Self.visibleAmendment("?4"))
                        ORDER BY seq DESC LIMIT ?3
                    ) ORDER BY seq
                    """,
                    [.text(conversationID), .integer(Int(before ?? Int64.max)), .integer(limit), .integer(from)]
                )
            }
            return try rows.map { try Rows.message($0) }
        }
    }

    /// Whether a row of `messages` is no edit of a message before `from` (a bind: where the reader's history begins):
    /// an edit carries its message's new text, which is not for a member who cannot see the message.
    package static func visibleAmendment(_ from: String) -> String {
        "(about IS NULL OR text IS NULL OR (SELECT t.seq FROM messages t WHERE t.conversation_id = messages.conversation_id AND t.id = messages.about) >= \(from))"
    }

    /// The columns ``Rows/incoming(_:)`` reads, from `messages m`, `conversations c` and the sender `users u`.
    package static let incomingColumns = """
        m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent, m.mentions, m.edits, m.deleted,
        c.kind, c.title, u.name AS sender_name, u.picture AS sender_picture
        """

    public func entries(for userID: String, after: Int64, through: Int64, limit: Int) async throws -> [IncomingMessage] {
        try await database.perform { connection in
            // The entries of the user's conversations while they were in them: from the one that added them to the
            // one that removed them; an edit of a message from before they came is not theirs (it carries the text).
            let rows = try connection.query(
                """
                SELECT \(Self.incomingColumns)
                FROM messages m
                JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = ?1
                JOIN conversations c ON c.id = m.conversation_id
                JOIN users u ON u.id = m.sender_id
                WHERE m.seq > ?2 AND m.seq <= ?3 AND m.seq >= me.added_seq
                  AND (me.removed_seq IS NULL OR m.seq <= me.removed_seq)
                  AND (m.about IS NULL OR m.text IS NULL OR (SELECT t.seq FROM messages t
                       WHERE t.conversation_id = m.conversation_id AND t.id = m.about) >= me.added_seq)
                ORDER BY m.seq
                LIMIT ?4
                """,
                [.text(userID), .integer(Int(after)), .integer(Int(through)), .integer(limit)]
            )
            return try rows.map(Rows.incoming)
        }
    }

    public func entries(after: Int64, through: Int64, limit: Int) async throws -> [IncomingMessage] {
        try await database.perform { connection in
            try Self.entries(after: after, through: through, limit: limit, on: connection)
        }
    }

    package static func entries(after: Int64, through: Int64, limit: Int, on connection: SQLiteHandle) throws -> [IncomingMessage] {
        try connection.query(
            """
            SELECT \(incomingColumns)
            FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN users u ON u.id = m.sender_id
            WHERE m.seq > ?1 AND m.seq <= ?2 ORDER BY m.seq LIMIT ?3
            """,
            [.integer(Int(after)), .integer(Int(through)), .integer(limit)]
        ).map(Rows.incoming)
    }

    public func latestSeq() async throws -> Int64 {
        try await database.perform { connection in
            try Self.latestSeq(on: connection)
        }
    }

    /// The last seq given, whether or not its entry is still stored (a deleted group's are not).
    package static func latestSeq(on connection: SQLiteHandle) throws -> Int64 {
        let rows = try connection.query(
            """
            SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0),
                       coalesce((SELECT max(seq) FROM messages), 0)) AS seq
            """)
        return Int64(rows.first?.column("seq")?.integer ?? 0)
    }
}

/// Retention on SQLite.
extension SQLiteStore {
    public func expireEntries(before date: Date, limit: Int, waitingFor readers: [String]) async throws -> (deleted: Int, horizon: Int64) {
        // The readers' places bound what goes: `?3`, `?4`, ... name them.
        let names = readers.indices.map { "?\($0 + 3)" }.joined(separator: ", ")
        let gate = readers.isEmpty ? "" : "AND seq <= (SELECT min(seq) FROM log_cursors WHERE name IN (\(names)))"
        let expired: (deleted: Int, horizon: Int64) = try await database.transaction { connection in
            // The oldest `limit` entries the readers passed, in seq order, up to the first one still kept: a time is
            // the store's clock at the commit, so seq order is time order (but for a clock set back, whose entries
            // then wait for those before them). A scan of at most `limit` rows, with no index of times to keep up.
            let deleted = try connection.query(
                """
                WITH oldest(seq, created_at) AS (SELECT seq, created_at FROM messages WHERE 1 \(gate) ORDER BY seq LIMIT ?2)
                DELETE FROM messages WHERE seq IN (
                    SELECT seq FROM oldest
                    WHERE seq < coalesce((SELECT min(seq) FROM oldest WHERE created_at >= ?1), 9223372036854775807))
                RETURNING seq
                """,
                [.float(date.timeIntervalSince1970), .integer(limit)] + readers.map { .text($0) })
            let seqs = deleted.compactMap { $0.column("seq")?.integer }
            let highest = seqs.max() ?? 0
            // What the outboxes hold of them goes too: pushes not sent yet carry the text, and so does an
            // undelivered `message.new` (an event not delivered within the retention is dropped with its message).
            if let lowest = seqs.min() {
                let range: [SQLiteValue] = [.integer(lowest), .integer(highest)]
                try connection.query(
                    "DELETE FROM push_jobs WHERE kind <> 'clear' AND seq BETWEEN ?1 AND ?2 AND seq NOT IN (SELECT seq FROM messages)",
                    range)
                try connection.query(
                    "DELETE FROM webhook_jobs WHERE type = 'message.new' AND seq BETWEEN ?1 AND ?2 AND seq NOT IN (SELECT seq FROM messages)",
                    range)
                try connection.query(
                    "DELETE FROM push_sent WHERE seq BETWEEN ?1 AND ?2 AND seq NOT IN (SELECT seq FROM messages)", range)
                // The delivery trail names the message's members and devices: it goes with the message.
                try connection.query(
                    "DELETE FROM delivery_trail WHERE seq BETWEEN ?1 AND ?2 AND seq NOT IN (SELECT seq FROM messages)", range)
            }
            let rows = try connection.query(
                "UPDATE log_cursors SET seq = max(seq, ?1) WHERE name = 'horizon' RETURNING seq", [.integer(highest)])
            return (deleted.count, Int64(rows.first?.column("seq")?.integer ?? 0))
        }
        if expired.deleted > 0 { try await checkpoint() }
        return expired
    }

    /// Moves what the write-ahead log holds into the database file and empties it (`wal_checkpoint(TRUNCATE)`): with
    /// `secure_delete` on, what was deleted is then zeros in the file, and no old copy of it is left in the `-wal`.
    package func checkpoint() async throws {
        try await database.perform { connection in
            _ = try connection.query("PRAGMA wal_checkpoint(TRUNCATE)", keep: false)
        }
    }

    public func retentionHorizon() async throws -> Int64 {
        try await database.perform { connection in
            Int64(try connection.query("SELECT seq FROM log_cursors WHERE name = 'horizon'").first?.column("seq")?.integer ?? 0)
        }
    }
}
