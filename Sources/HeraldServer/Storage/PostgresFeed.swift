import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A stored message as a node hands it to its live connections: the message, and who may see it.
public struct FeedMessage: Sendable {
    /// The message, its conversation and its sender.
    public var incoming: IncomingMessage
    /// The conversation's members.
    public var memberIDs: [String]
}

/// Hands every stored message, this node's and every other node's, to this node's live connections exactly once and
/// in `seq` order (docs/architecture.md, "Several nodes").
///
/// `published` is the last seq handed over. Three things move it on: this node's own group commits (``committed``:
/// their `onStored`, which publishes and makes the push decision), the other nodes' `NOTIFY herald_messages, '<seq>'`
/// (``notified``), and a listener that reconnects (``notified`` with the table's last seq). The messages between
/// `published` and a notified seq are read from the table in `seq` order; since seqs commit in order, all are
/// visible once the notified one is. A group of this node's between taking its seqs and committing is
/// ``reserve``d: nothing past its first seq is handed over until it committed (and was handed over itself) or
/// rolled back (and its seqs are given again to the next group).
actor MessageFeed {
    private var published: Int64
    /// The highest seq known to be committed.
    private var target: Int64
    /// This node's group between taking its seqs and committing.
    private var reserved: ClosedRange<Int64>?
    /// This node's committed messages not handed over yet, by seq, with what publishes them.
    private var own: [Int64: @Sendable () -> Void] = [:]
    /// Whether a drain is running (the actor is re-entered while it reads the table).
    private var draining = false
    /// Committers waiting for their messages to be handed over.
    private var waiters: [(seq: Int64, continuation: CheckedContinuation<Void, Never>)] = []
    /// Where other nodes' messages go (this node's hub).
    private var sink: (@Sendable (FeedMessage) -> Void)?
    private let client: PostgresClient
    private let logger: Logger

    init(client: PostgresClient, logger: Logger) {
        published = 0
        target = 0
        self.client = client
        self.logger = logger
    }

    /// Starts after `seq` (the table's last when the node starts): older messages are not news.
    func start(after seq: Int64) {
        published = seq
        target = seq
    }

    /// Where messages posted on other nodes are handed over.
    func setSink(_ sink: @escaping @Sendable (FeedMessage) -> Void) {
        self.sink = sink
    }

    /// The last seq handed over.
    var lastPublished: Int64 { published }

    /// This node took `seqs` for a group it is about to commit.
    func reserve(_ seqs: ClosedRange<Int64>) {
        reserved = seqs
    }

    /// The reserved group rolled back: its seqs were not used.
    func release() async {
        reserved = nil
        await drain()
    }

    /// The reserved group committed: `publishers` hand over its messages (by seq). Returns once they were.
    func committed(_ seqs: ClosedRange<Int64>, publishers: [Int64: @Sendable () -> Void]) async {
        reserved = nil
        own.merge(publishers) { $1 }
        target = max(target, seqs.upperBound)
        await drain()
        if published >= seqs.upperBound { return }
        await withCheckedContinuation { waiters.append((seqs.upperBound, $0)) }
    }

    /// Everything up to `seq` is committed (a notification, or the table's last seq after the listener reconnected).
    func notified(_ seq: Int64) async {
        target = max(target, seq)
        await drain()
    }

    private func drain() async {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while true {
            let upper = reserved.map { min(target, $0.lowerBound - 1) } ?? target
            guard upper > published else { break }
            let range = (published + 1)...upper
            if range.allSatisfy({ own[$0] != nil }) {
                for seq in range { own.removeValue(forKey: seq)?() }
                published = upper
            } else {
                do {
                    for message in try await read(after: published, through: upper) {
                        let seq = message.incoming.message.seq ?? 0
                        if let publish = own.removeValue(forKey: seq) { publish() } else { sink?(message) }
                        published = seq
                    }
                    // Seqs with no row (none: seqs are dense) would otherwise stall the feed.
                    published = upper
                } catch {
                    logger.warning("new messages could not be read from the database; trying again",
                                   metadata: ["error": "\(PostgresStore.describe(error))"])
                    try? await Task.sleep(for: .seconds(1))
                    continue
                }
            }
            let ready = waiters.filter { $0.seq <= published }
            waiters.removeAll { $0.seq <= published }
            for waiter in ready { waiter.continuation.resume() }
        }
    }

    /// The messages with `after < seq <= through`, in seq order, each with its conversation's members.
    private func read(after: Int64, through: Int64) async throws -> [FeedMessage] {
        let rows = try await client.query(
            """
            SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at,
                   c.kind, c.title, u.name AS sender_name, u.picture AS sender_picture,
                   (SELECT array_agg(me.user_id ORDER BY me.user_id) FROM members me
                    WHERE me.conversation_id = m.conversation_id) AS member_ids
            FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN users u ON u.id = m.sender_id
            WHERE m.seq > \(after) AND m.seq <= \(through) ORDER BY m.seq
            """, logger: logger).collect()
        return try rows.map { row in
            let columns = row.makeRandomAccess()
            let message = try PostgresStore.message(from: row)
            return FeedMessage(
                incoming: IncomingMessage(
                    message: message,
                    conversation: Conversation(
                        id: message.conversationID,
                        kind: Conversation.Kind(rawValue: try columns["kind"].decode(String.self)) ?? .group,
                        title: try columns["title"].decode(String?.self)),
                    sender: Person(
                        id: message.senderID, displayName: try columns["sender_name"].decode(String.self),
                        avatarURL: try columns["sender_picture"].decode(String?.self).flatMap(URL.init(string:)))),
                memberIDs: try columns["member_ids"].decode([String]?.self) ?? [])
        }
    }
}
