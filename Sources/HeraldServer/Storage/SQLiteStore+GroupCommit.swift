import Foundation
import HeraldCore
import HeraldProtocol
import NIOConcurrencyHelpers
import SQLiteNIO

/// Posts that arrived while the database was busy, waiting to be committed together.
struct WaitingPosts {
    struct Post {
        var draft: MessageDraft
        var onStored: @Sendable (IncomingMessage) -> Void
        var continuation: CheckedContinuation<PostOutcome, any Error>
    }

    var posts: [Post] = []
    /// Whether a commit job is queued on the database to take them.
    var scheduled = false
    /// Transactions and posts committed so far.
    var statistics = GroupCommitStatistics()
}

/// How well posts were grouped: how many transactions committed how many posts.
struct GroupCommitStatistics: Hashable, Sendable {
    /// Transactions that stored posts.
    var transactions = 0
    /// Posts they stored (new messages and ids seen before).
    var posts = 0
}

/// Group commit: every post joins the queue of waiting posts, and one job on the database takes all that are
/// waiting (up to ``SQLiteStore/maxGroup``) and stores them in one transaction, so in one write to the log (and,
/// with `HERALD_SQLITE_SYNC=full`, one sync). While it runs, new posts queue for the next one; under load the groups grow by themselves, and a lone
/// post is committed at once, alone.
///
/// A post is answered only after its transaction committed, and `onStored` (publishing) runs after the commit too,
/// in `seq` order, before the next group is stored: what a client is told is stored, is stored. A group costs a
/// fixed number of statements however many posts it holds: one insert of every new message (which moves the
/// members' list order and read markers too), and a lookup only when some ids were used before. If the group
/// fails as a whole, each of its posts is tried again alone, so one bad post never fails the others.
extension SQLiteStore {
    /// The most posts committed in one transaction.
    static let maxGroup = 256

    public func post(_ draft: MessageDraft, onStored: @escaping @Sendable (IncomingMessage) -> Void) async throws -> PostOutcome {
        try await withCheckedThrowingContinuation { continuation in
            let post = WaitingPosts.Post(draft: draft, onStored: onStored, continuation: continuation)
            let schedule = waitingPosts.withLockedValue { waiting in
                waiting.posts.append(post)
                defer { waiting.scheduled = true }
                return !waiting.scheduled
            }
            if schedule { scheduleGroup() }
        }
    }

    /// How many transactions stored how many posts since the store opened.
    var groupCommitStatistics: GroupCommitStatistics {
        waitingPosts.withLockedValue { $0.statistics }
    }

    /// Queues a job that commits what is waiting; if the database takes no more work, fails every waiting post.
    private func scheduleGroup() {
        let accepted = database.enqueue { [self] connection in
            commitWaiting(on: connection)
        }
        guard !accepted else { return }
        let refused = waitingPosts.withLockedValue { waiting in
            defer { waiting.posts = []; waiting.scheduled = false }
            return waiting.posts
        }
        for post in refused { post.continuation.resume(throwing: SerialDatabase.shuttingDown) }
    }

    private func commitWaiting(on connection: SQLiteHandle) {
        let (group, more) = waitingPosts.withLockedValue { waiting in
            let group = Array(waiting.posts.prefix(Self.maxGroup))
            waiting.posts.removeFirst(group.count)
            waiting.scheduled = !waiting.posts.isEmpty
            return (group, waiting.scheduled)
        }
        // Posts beyond this group wait for a job queued behind it (others' work in between stays in order).
        if more { scheduleGroup() }
        guard !group.isEmpty else { return }

        let outcomes: [Result<PostOutcome, any Error>]
        do {
            outcomes = try store(group.map(\.draft), on: connection)
        } catch {
            guard group.count > 1 else { return finish(group, with: [.failure(error)]) }
            for post in group {
                do {
                    finish([post], with: try store([post.draft], on: connection))
                } catch {
                    finish([post], with: [.failure(error)])
                }
            }
            return
        }
        finish(group, with: outcomes)
    }

    private func finish(_ group: [WaitingPosts.Post], with outcomes: [Result<PostOutcome, any Error>]) {
        WaitingPosts.finish(group, with: outcomes, counting: waitingPosts)
    }

    /// Stores `drafts` in one transaction: an outcome for each, in order. Throws if the transaction as a whole
    /// failed (then nothing of it is stored).
    ///
    /// The new messages are one `INSERT` of many rows: a statement is a transaction of its own in SQLite, so the
    /// group needs no `BEGIN` and `COMMIT`, and the members' list order and the senders' read markers move in the
    /// same statement (the trigger `messages_move_members`). Ids already used are left out of the insert and, only
    /// when there are some, looked up in a second statement.
    private func store(_ drafts: [MessageDraft], on connection: SQLiteHandle) throws -> [Result<PostOutcome, any Error>] {
        // The first draft of each key is inserted; a repeat within the group is answered with that one's message.
        var fresh: [MessageDraft] = []
        var seen: Set<MessageKey> = []
        for draft in drafts where seen.insert(draft.key).inserted {
            fresh.append(draft)
        }

        // The group's rows are padded to a power of two with rows of NULLs, which the insert leaves out: groups of
        // any size share nine prepared statements.
        let createdAt = Date().timeIntervalSince1970
        let values = SQLiteHandle.padded(fresh.map { draft -> [SQLiteData] in
            [.text(draft.id), .text(draft.conversation.id), .text(draft.sender.id), .optionalText(draft.text),
             .optionalText(draft.imageURL?.absoluteString), .float(createdAt)]
        }, width: 6)
        // Ids used before are left out by the select rather than skipped as conflicts, which would use up seqs.
        let inserted = try connection.query(
            """
            INSERT INTO messages (id, conversation_id, sender_id, text, image_url, created_at)
            SELECT * FROM (VALUES \(values.placeholders)) AS draft
            WHERE draft.column1 IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM messages m WHERE m.conversation_id = draft.column2 AND m.id = draft.column1)
            RETURNING seq, id, conversation_id
            """,
            values.binds
        )
        var messages: [MessageKey: (message: Message, new: Bool)] = [:]
        let freshByKey = Dictionary(uniqueKeysWithValues: fresh.map { ($0.key, $0) })
        for row in inserted {
            guard let id = row.column("id")?.string, let conversationID = row.column("conversation_id")?.string,
                  let seq = row.column("seq")?.integer,
                  let draft = freshByKey[MessageKey(conversationID: conversationID, id: id)]
            else { continue }
            messages[draft.key] = (Message(
                id: id, conversationID: draft.conversation.id, senderID: draft.sender.id, text: draft.text,
                imageURL: draft.imageURL, sentAt: Self.date(createdAt), seq: Int64(seq)), true)
        }

        // Ids that were already stored in their conversation: their messages, for the sender's repeat or to refuse
        // another member's use.
        let used = fresh.map(\.key).filter { messages[$0] == nil }
        if !used.isEmpty {
            let list = SQLiteHandle.padded(used.map { [.text($0.conversationID), .text($0.id)] }, width: 2)
            let rows = try connection.query(
                "SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages "
                    + "WHERE (conversation_id, id) IN (VALUES \(list.placeholders))",
                list.binds
            )
            for row in rows {
                let message = try Self.message(from: row, idColumn: "id", conversationID: nil)
                messages[MessageKey(conversationID: message.conversationID, id: message.id)] = (message, false)
            }
        }

        return WaitingPosts.outcomes(of: drafts, messages: messages)
    }
}

extension WaitingPosts {
    /// Publishes what a group stored, in `seq` order (unless the caller did: `publishing` false), counts the group,
    /// then answers each post.
    static func finish(
        _ group: [Post], with outcomes: [Result<PostOutcome, any Error>], counting box: NIOLockedValueBox<WaitingPosts>,
        publishing: Bool = true
    ) {
        var stored = 0
        var published: [(message: Message, post: Post)] = []
        for (post, outcome) in zip(group, outcomes) {
            if case .success(.stored(let message)) = outcome { published.append((message, post)) }
            if case .success = outcome { stored += 1 }
        }
        for (message, post) in published.sorted(by: { ($0.message.seq ?? 0) < ($1.message.seq ?? 0) }) where publishing {
            post.onStored(IncomingMessage(message: message, conversation: post.draft.conversation, sender: post.draft.sender))
        }
        if stored > 0 {
            box.withLockedValue {
                $0.statistics.transactions += 1
                $0.statistics.posts += stored
            }
        }
        for (post, outcome) in zip(group, outcomes) {
            post.continuation.resume(with: outcome)
        }
    }

    /// Each draft's outcome, given the messages its group found or stored by key (`new`: stored by this group): the
    /// draft that stored a message gets `.stored`, every other with its key `.existing`, and a draft whose id another
    /// member's message in the conversation has gets ``StoreError/idTaken(_:)``.
    static func outcomes(
        of drafts: [MessageDraft], messages: [MessageKey: (message: Message, new: Bool)]
    ) -> [Result<PostOutcome, any Error>] {
        var answered: Set<MessageKey> = []
        return drafts.map { draft -> Result<PostOutcome, any Error> in
            guard let (message, new) = messages[draft.key].map({ ($0.message, $0.new) }) else {
                return .failure(StoreError.damaged("message \(draft.id) was not stored"))
            }
            guard message.senderID == draft.sender.id else {
                return .failure(StoreError.idTaken(draft.id))
            }
            return new && answered.insert(draft.key).inserted ? .success(.stored(message)) : .success(.existing(message))
        }
    }
}
