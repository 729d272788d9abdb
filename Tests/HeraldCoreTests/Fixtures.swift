import Foundation
import HeraldCore

/// People and conversations of the demo: Alice is signed in, chatting with Bob; Charlie writes too.
enum Cast {
    static let alice = Person(id: "alice", displayName: "Alice Johnson")
    static let bob = Person(id: "bob", displayName: "Bob")
    static let charlie = Person(id: "charlie", displayName: "Charlie Davis")

    static let aliceBob = Conversation(id: "alice-bob", kind: .direct)
    static let aliceCharlie = Conversation(id: "alice-charlie", kind: .direct)
    static let team = Conversation(id: "team", kind: .group, title: "Team Chat")

    /// A message as the stream delivers it.
    static func message(
        _ id: String,
        in conversation: Conversation,
        from sender: Person,
        _ text: String? = "Hey, are you there?",
        imageURL: URL? = nil
    ) -> IncomingMessage {
        IncomingMessage(
            message: Message(
                id: id,
                conversationID: conversation.id,
                senderID: sender.id,
                text: text,
                imageURL: imageURL,
                sentAt: Date(timeIntervalSinceReferenceDate: 0)
            ),
            conversation: conversation,
            sender: sender
        )
    }
}

/// Seconds as an engine instant.
func at(_ seconds: Double) -> Duration {
    .microseconds(Int64((seconds * 1_000_000).rounded()))
}

/// A compact, comparable view of a timeline: `"4.0 dismiss m1 timeout"`.
func describe(_ timeline: [TimedEffect]) -> [String] {
    timeline.map { timed in
        let (whole, atto) = timed.at.components
        let seconds = String(format: "%.2f", Double(whole) + Double(atto) / 1e18)
        switch timed.effect {
        case .dismiss(let id, let reason): return "\(seconds) dismiss \(id) \(reason.rawValue)"
        case .navigate(let conversation): return "\(seconds) navigate \(conversation)"
        case .drop(let id, let reason): return "\(seconds) drop \(id) \(reason.rawValue)"
        case .skip(let id, let reason): return "\(seconds) skip \(id) \(reason.rawValue)"
        case .show(let banner): return "\(seconds) show \(banner.id)"
        case .update(let banner): return "\(seconds) update \(banner.id) x\(banner.count)"
        case .local(let notification): return "\(seconds) local \(notification.messageID)"
        case .clear(let conversation): return "\(seconds) clear \(conversation)"
        case .withdraw(let identifier): return "\(seconds) withdraw \(identifier)"
        }
    }
}

extension Notifier {
    /// Alice's device, in the foreground with her chat with Bob open.
    static func aliceInBobsChat(config: BannerConfig = .standard) -> Notifier {
        var notifier = Notifier(userID: "alice", config: config)
        _ = notifier.handle(.open(conversationID: Cast.aliceBob.id), at: .zero)
        return notifier
    }

    /// Handles `inputs` at their instants, then fires every deadline left; returns the whole timeline.
    mutating func run(_ inputs: [(Double, NotifierInput)], until end: Double? = nil) -> [TimedEffect] {
        var timeline: [TimedEffect] = []
        for (seconds, input) in inputs {
            timeline += handle(input, at: at(seconds))
        }
        if let end {
            timeline += advance(to: at(end))
        } else {
            while let deadline = nextDeadline {
                timeline += advance(to: deadline)
            }
        }
        return timeline
    }
}
