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
public struct GroupCommitStatistics: Hashable, Sendable {
    /// Transactions that stored posts.
    public var transactions = 0
    /// Posts they stored (new messages and ids seen before).
    public var posts = 0

    /// Posts a transaction, on average.
    public var postsPerTransaction: Double { transactions == 0 ? 0 : Double(posts) / Double(transactions) }
}

/// Group commit: every post joins the queue of waiting posts, and one job on the database takes all that are
/// waiting (up to ``SQLiteStore/maxGroup``) and stores them in one transaction, so in one write to the log and
/// one sync. While it runs, new posts queue for the next one; under load the groups grow by themselves, and a lone
/// post is committed at once, alone.
///
/// A post is answered only after its transaction committed, and `onStored` (publishing) runs after the commit too,
/// in `seq` order, before the next group is stored: what a client is told is stored, is stored. A group costs a
/// fixed number of statements however many posts it holds: one lookup of the ids already used, one insert of
/// every new message, one update of the members' list order and read markers. If the group fails as a whole,
/// each of its posts is tried again alone, so one bad post never fails the others.
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
    public var groupCommitStatistics: GroupCommitStatistics {
        waitingPosts.withLockedValue { $0.statistics }
    }

    /// Queues a job that commits what is waiting; if the database takes no more work, fails every waiting post.
    private func scheduleGroup() {
        let accepted = database.enqueue { [self] connection in
            await commitWaiting(on: connection)
        }
        guard !accepted else { return }
        let refused = waitingPosts.withLockedValue { waiting in
            defer { waiting.posts = []; waiting.scheduled = false }
            return waiting.posts
        }
        let error = APIError(.serviceUnavailable, .internalError, "the server is shutting down")
        for post in refused { post.continuation.resume(throwing: error) }
    }

    private func commitWaiting(on connection: SQLiteConnection) async {
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
            outcomes = try await store(group.map(\.draft), on: connection)
        } catch {
            guard group.count > 1 else { return finish(group, with: [.failure(error)]) }
            for post in group {
                do {
                    finish([post], with: try await store([post.draft], on: connection))
                } catch {
                    finish([post], with: [.failure(error)])
                }
            }
            return
        }
        finish(group, with: outcomes)
    }

    /// Publishes what was stored, in `seq` order, then answers each post.
    private func finish(_ group: [WaitingPosts.Post], with outcomes: [Result<PostOutcome, any Error>]) {
        var stored = 0
        for (post, outcome) in zip(group, outcomes) {
            if case .success(.stored(let message)) = outcome {
                post.onStored(IncomingMessage(message: message, conversation: post.draft.conversation, sender: post.draft.sender))
            }
            if case .success = outcome { stored += 1 }
        }
        if stored > 0 {
            waitingPosts.withLockedValue {
                $0.statistics.transactions += 1
                $0.statistics.posts += stored
            }
        }
        for (post, outcome) in zip(group, outcomes) {
            post.continuation.resume(with: outcome)
        }
    }

    /// Stores `drafts` in one transaction: an outcome for each, in order. Throws, having rolled back, if the
    /// transaction as a whole failed.
    private func store(_ drafts: [MessageDraft], on connection: SQLiteConnection) async throws -> [Result<PostOutcome, any Error>] {
        _ = try await connection.query("BEGIN IMMEDIATE", [])
        do {
            let outcomes = try await insert(drafts, on: connection)
            _ = try await connection.query("COMMIT", [])
            return outcomes
        } catch {
            _ = try? await connection.query("ROLLBACK", [])
            throw error
        }
    }

    private func insert(_ drafts: [MessageDraft], on connection: SQLiteConnection) async throws -> [Result<PostOutcome, any Error>] {
        // Ids already stored, in one lookup.
        let ids = Array(Set(drafts.map(\.id)))
        let rows = try await connection.query(
            "SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages WHERE id IN ("
                + (1...ids.count).map { "?\($0)" }.joined(separator: ", ") + ")",
            ids.map { .text($0) }
        )
        var known: [String: Message] = [:]
        for row in rows {
            let message = try Self.message(from: row, idColumn: "id", conversationID: nil)
            known[message.id] = message
        }

        // Which drafts are new; a repeated id (stored before, or earlier in this group) is the first one's message.
        enum Plan { case new, repeatOf(String) }
        var plans: [Plan] = []
        var fresh: [MessageDraft] = []
        var firstDraft: [String: MessageDraft] = [:]
        for draft in drafts {
            if known[draft.id] != nil || firstDraft[draft.id] != nil {
                plans.append(.repeatOf(draft.id))
            } else {
                firstDraft[draft.id] = draft
                fresh.append(draft)
                plans.append(.new)
            }
        }

        var stored: [String: Message] = [:]
        if !fresh.isEmpty {
            let now = Date()
            let createdAt = now.timeIntervalSince1970
            var binds: [SQLiteData] = []
            var values: [String] = []
            for (index, draft) in fresh.enumerated() {
                let base = index * 6
                values.append("(" + (1...6).map { "?\(base + $0)" }.joined(separator: ", ") + ")")
                binds += [.text(draft.id), .text(draft.conversation.id), .text(draft.sender.id), .optionalText(draft.text),
                          .optionalText(draft.imageURL?.absoluteString), .float(createdAt)]
            }
            let inserted = try await connection.query(
                "INSERT INTO messages (id, conversation_id, sender_id, text, image_url, created_at) VALUES "
                    + values.joined(separator: ", ") + " RETURNING seq, id",
                binds
            )
            var seqs: [String: Int64] = [:]
            for row in inserted {
                guard let id = row.column("id")?.string, let seq = row.column("seq")?.integer else { continue }
                seqs[id] = Int64(seq)
            }
            for draft in fresh {
                guard let seq = seqs[draft.id] else {
                    throw APIError(.internalServerError, .internalError, "the message was not stored")
                }
                stored[draft.id] = Message(
                    id: draft.id, conversationID: draft.conversation.id, senderID: draft.sender.id, text: draft.text,
                    imageURL: draft.imageURL, sentAt: Self.date(createdAt), seq: seq)
            }
            // Each conversation moves to the top of its members' lists; each sender has read up to their own
            // newest message in it. The group's messages are those from its first seq on (the database is ours).
            let first = seqs.values.min() ?? 0
            _ = try await connection.query(
                """
                UPDATE members SET
                    activity = max(activity, coalesce((SELECT max(seq) FROM messages m
                        WHERE m.conversation_id = members.conversation_id AND m.seq >= ?1), 0)),
                    read_seq = max(read_seq, coalesce((SELECT max(seq) FROM messages m
                        WHERE m.conversation_id = members.conversation_id AND m.sender_id = members.user_id
                          AND m.seq >= ?1), 0))
                WHERE conversation_id IN (SELECT DISTINCT conversation_id FROM messages WHERE seq >= ?1)
                """,
                [.integer(Int(first))]
            )
        }

        return zip(drafts, plans).map { draft, plan -> Result<PostOutcome, any Error> in
            switch plan {
            case .new:
                return stored[draft.id].map { .success(.stored($0)) }
                    ?? .failure(APIError(.internalServerError, .internalError, "the message was not stored"))
            case .repeatOf(let id):
                guard let message = known[id] ?? stored[id] else {
                    return .failure(APIError(.internalServerError, .internalError, "the message was not stored"))
                }
                guard message.senderID == draft.sender.id, message.conversationID == draft.conversation.id else {
                    return .failure(APIError(.conflict, .idConflict, "message id \(draft.id) is already used by another message"))
                }
                return .success(.existing(message))
            }
        }
    }
}
