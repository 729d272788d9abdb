import HeraldCore
import HeraldRecords
import Logging

/// The node's live fan-out: each entry the log hands on goes to the connections of the people it reaches, as they
/// were at its `seq` (a member removed gets the entry that removed them, and nothing after it; one added, the entry
/// that added them, and what follows).
///
/// The members come from ``Memberships``, which this consumer keeps current: it applies each event as it hands it
/// on, in `seq` order, so an entry is sent by the members as of that entry on every node alike.
final class FanOut: LogConsumer {
    private let hub: Hub
    private let memberships: Memberships
    private let store: any ConversationStore
    private let logger: Logger

    init(hub: Hub, memberships: Memberships, store: any ConversationStore, logger: Logger) {
        self.hub = hub
        self.memberships = memberships
        self.store = store
        self.logger = logger
    }

    func take(_ entries: [IncomingMessage]) async {
        for entry in entries {
            guard let seq = entry.message.seq else { continue }
            send(entry, members: await members(of: entry.conversation.id, for: seq))
        }
    }

    /// Sends the entries whose conversation's members are in memory, up to the first that is not.
    func takeAtOnce(_ entries: [IncomingMessage]) -> Int {
        for (index, entry) in entries.enumerated() {
            guard entry.message.seq != nil else { continue }
            guard let view = memberships.cached(entry.conversation.id) else { return index }
            send(entry, members: view)
        }
        return entries.count
    }

    /// Sends `entry` to the people it reaches, given its conversation's members before it (nil: no such
    /// conversation); an event is applied to the members first.
    private func send(_ entry: IncomingMessage, members: MemberView?) {
        var view = members
        if entry.message.event != nil { view = memberships.apply(entry.message) ?? view }
        guard let view else { return }
        var frame = entry
        frame.conversation = view.conversation
        hub.publish(frame, to: view.recipients(of: entry.message))
        if entry.message.isMessage { HeraldMetrics.messagesPosted.increment() }
    }

    /// The members of `conversationID`, from memory or the database. While the database does not answer, asked
    /// again every second: an entry is never skipped (a live stream would miss it), and the log, which waits for
    /// this, hands on nothing later meanwhile. Nil for a conversation that does not exist, or once the node stops.
    private func members(of conversationID: String, for seq: Int64) async -> MemberView? {
        while !Task.isCancelled {
            do {
                return try await memberships.view(of: conversationID) { try await store.memberView(of: conversationID) }
            } catch {
                logger.warning("an entry's members could not be read; trying again",
                               metadata: ["seq": "\(seq)", "error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
        return nil
    }
}
