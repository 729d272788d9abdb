import Foundation
import HeraldCore
import HeraldServer

/// How fast the notifier decides, and what a waiting banner costs: the figures of docs/benchmarks.md.
public enum EngineBenchmark {
    /// What one run measured.
    public struct Report: Sendable {
        /// Messages decided.
        public var messages: Int
        /// Conversations they were spread over.
        public var conversations: Int
        /// How many times the whole run was repeated from scratch.
        public var rounds: Int
        /// Wall time for all decisions: the median round.
        public var elapsed: Duration
        /// Wall time of the fastest round.
        public var fastest: Duration
        /// How many messages ended in each outcome (`banner`, `local`, `skip:<reason>`).
        public var outcomes: [String: Int]
        /// Banners held waiting during the memory measurement.
        public var waitingBanners: Int
        /// Heap bytes per waiting banner, nil where the platform does not report heap use.
        public var bytesPerWaitingBanner: Double?
        /// The inline size of a ``Banner`` (its strings' storage comes on top when they are long).
        public var bannerStride: Int

        /// Decisions a second.
        public var decisionsPerSecond: Double {
            Double(messages) / max(elapsed.seconds, 1e-9)
        }

        /// The report, for a terminal.
        public var text: String {
            var lines = [
                "engine: \(messages) messages over \(conversations) conversations",
                String(format: "  decisions: %.0f a second (%.0f ns each; median of %d rounds, fastest %.0f a second)",
                       decisionsPerSecond, elapsed.seconds * 1e9 / Double(messages), rounds,
                       Double(messages) / max(fastest.seconds, 1e-9)),
                "  outcomes: " + outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                    .joined(separator: ", "),
            ]
            if let bytes = bytesPerWaitingBanner {
                lines.append(String(format: "  memory: %.0f bytes a waiting banner (%d waiting; Banner stride %d bytes)",
                                    bytes, waitingBanners, bannerStride))
            } else {
                lines.append("  memory: not measurable on this platform (Banner stride \(bannerStride) bytes)")
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Decides `messages` messages spread over `conversations` conversations on one device, through policy,
    /// wording and queue, `rounds` times from scratch, then measures the heap cost of `conversations` waiting banners.
    ///
    /// The mix: the device is in the foreground with one conversation open, one conversation in a hundred is
    /// muted, one message in a hundred is the user's own and one in a hundred repeats the one before it;
    /// messages come 10 µs apart in virtual time, so banners time out and the queue turns over.
    public static func run(messages: Int = 1_000_000, conversations: Int = 10_000, rounds: Int = 5) -> Report {
        let conversations = max(1, conversations)
        var times: [Duration] = []
        var outcomes: [String: Int] = [:]
        for _ in 0..<max(1, rounds) {
            let (elapsed, counted) = decide(messages: messages, conversations: conversations)
            times.append(elapsed)
            outcomes = counted
        }
        times.sort()
        let (waiting, bytes) = waitingBannerCost(count: conversations)
        return Report(
            messages: messages,
            conversations: conversations,
            rounds: times.count,
            elapsed: times[times.count / 2],
            fastest: times[0],
            outcomes: outcomes,
            waitingBanners: waiting,
            bytesPerWaitingBanner: bytes,
            bannerStride: MemoryLayout<Banner>.stride
        )
    }

    /// One round: the time to decide every message, and how many ended in each outcome.
    private static func decide(messages: Int, conversations: Int) -> (Duration, [String: Int]) {
        var inputs = workload(messages: messages, conversations: conversations)
        inputs.reverse()
        var notifier = Notifier(
            userID: "me",
            device: DeviceState(
                openConversationID: "conversation-0",
                levels: Dictionary(uniqueKeysWithValues: (0..<conversations).filter { $0 % 100 == 50 }
                    .map { ("conversation-\($0)", LevelChoice.muted) })
            )
        )
        var outcomes: [String: Int] = [:]
        let clock = ContinuousClock()
        let start = clock.now
        var index = 0
        while let input = inputs.popLast() {
            defer { index += 1 }
            for timed in notifier.handle(consume input, at: .microseconds(10 * index)) {
                switch timed.effect {
                case .skip(_, let reason): outcomes["skip:\(reason.rawValue)", default: 0] += 1
                case .local: outcomes["local", default: 0] += 1
                case .show, .drop, .dismiss, .update, .navigate, .clear, .withdraw: break
                }
            }
        }
        let elapsed = start.duration(to: clock.now)
        outcomes["banner"] = messages - outcomes.values.reduce(0, +)
        return (elapsed, outcomes)
    }

    private static let senders = (0..<100).map { index in
        Person(id: "user-\(index)", displayName: ["Alice Johnson", "Bob", "Charlie Davis", "Dana Li"][index % 4])
    }

    private static let texts = [
        "Hey, are you there?",
        "Running ten minutes late, start without me please",
        "Did you see the new design for the onboarding screens? I think the second one reads much better.",
        "👍🏽",
        "Lunch?\nThe usual place at 12:30",
    ]

    private static func conversation(_ index: Int) -> Conversation {
        index % 3 == 0
            ? Conversation(id: "conversation-\(index)", kind: .group, title: "Team \(index)")
            : Conversation(id: "conversation-\(index)", kind: .direct)
    }

    private static func workload(messages: Int, conversations: Int) -> [NotifierInput] {
        let rooms = (0..<conversations).map(conversation)
        var inputs: [NotifierInput] = []
        inputs.reserveCapacity(messages)
        for index in 0..<messages {
            let room = rooms[(index &* 7919) % conversations]
            let id = index % 100 == 99 ? "message-\(index - 1)" : "message-\(index)"
            let sender = index % 100 == 42 ? Person(id: "me", displayName: "Me") : senders[index % senders.count]
            let message = Message(
                id: id,
                conversationID: room.id,
                senderID: sender.id,
                text: texts[index % texts.count],
                sentAt: Date(timeIntervalSinceReferenceDate: 0)
            )
            inputs.append(.message(IncomingMessage(message: message, conversation: room, sender: sender)))
        }
        return inputs
    }

    /// Fills a queue with `count` waiting banners, one per conversation, and returns the heap bytes each costs.
    private static func waitingBannerCost(count: Int) -> (Int, Double?) {
        let formatter = ContentFormatter.standard
        var queue = BannerQueue(config: BannerConfig(capacity: count))
        let before = HeapUsage.bytesInUse()
        for index in 0...count {
            let incoming = IncomingMessage(
                message: Message(
                    id: UUID().uuidString,
                    conversationID: UUID().uuidString,
                    senderID: "user-\(index)",
                    text: texts[index % texts.count] + " #\(index)",
                    sentAt: Date(timeIntervalSinceReferenceDate: 0)
                ),
                conversation: conversation(index),
                sender: senders[index % senders.count]
            )
            var banner = formatter.banner(for: incoming)
            banner.conversationID = incoming.message.conversationID
            _ = queue.handle(.enqueue(banner), at: .zero)
        }
        let after = HeapUsage.bytesInUse()
        let waiting = queue.waiting.count
        guard let before, let after, waiting > 0 else { return (waiting, nil) }
        return (waiting, Double(after - before) / Double(waiting))
    }
}
