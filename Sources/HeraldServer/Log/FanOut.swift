import Dispatch
import HeraldCore
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
            var view: MemberView?
            do {
                view = try await memberships.view(of: entry.conversation.id) {
                    try await store.memberView(of: entry.conversation.id)
                }
            } catch {
                // The database did not answer: the entry reaches its members on their next catch-up instead.
                logger.warning("an entry's members could not be read; it is not sent live",
                               metadata: ["seq": "\(seq)", "error": "\(error)"])
                continue
            }
            if entry.message.event != nil { view = memberships.apply(entry.message) ?? view }
            guard let view else { continue }
            var frame = entry
            frame.conversation = view.conversation
            hub.publish(frame, to: view.recipients(of: seq))
            if entry.message.isMessage { HeraldMetrics.messagesPosted.increment() }
        }
    }
}
