import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// Shown once after a freeze (behaviour §1, rule 8, "Shown once"): a message read late, which the server may have
/// pushed meanwhile, is bannered only after ``Notifier/localHold``, so that the stream's `pushed` word right behind it
/// skips it; a message that came at once is bannered at once. The traces are the conformance fixtures
/// (`Tests/Fixtures/traces/woken*.jsonl`, `late.jsonl`), which `WebEngineConformanceTests` also runs through the
/// JavaScript engine.
@Suite("A late message's banner waits for the server's pushed word")
struct LateMessageTests {
    @Test("woken: the message, then 2 ms later its pushed word, in the foreground with another chat open: no banner, no local notification")
    func wokenAndPushed() throws {
        let timeline = try TraceFixture.run("woken.jsonl")
        #expect(describe(timeline) == [
            "1.00 skip w0 own",
            "2.00 show w1",
            "6.00 dismiss w1 timeout",
            "15.01 skip w2 pushed",
            "20.00 show w3",
            "24.00 dismiss w3 timeout",
        ])
        #expect(!timeline.contains { timed in
            switch timed.effect {
            case .show(let banner), .update(let banner): banner.id == "w2"
            case .local(let notification): notification.messageID == "w2"
            default: false
            }
        })
    }

    @Test("woken, never pushed: the late message's banner shows after the half-second hold; live ones at once")
    func wokenNotPushed() throws {
        let timeline = try TraceFixture.run("woken-unpushed.jsonl")
        #expect(describe(timeline) == [
            "1.00 skip w0 own",
            "2.00 show w1",
            "6.00 dismiss w1 timeout",
            "15.50 show w2",
            "19.50 dismiss w2 timeout",
            "20.00 show w3",
            "24.00 dismiss w3 timeout",
        ])
        #expect(timeline.first { if case .show(let banner) = $0.effect { banner.id == "w2" } else { false } }?.at == at(15.504))
    }

    @Test("late: the first message is held, half a second late is live, a held banner follows opening, edits, deletions and taps")
    func lateRules() throws {
        let timeline = try TraceFixture.run("late.jsonl")
        #expect(describe(timeline) == [
            "1.50 show l1",
            "5.50 dismiss l1 timeout",
            "6.00 show l2",
            "10.00 dismiss l2 timeout",
            "11.20 skip l3 active",
            "13.10 skip l5 quiet",
            "13.50 show l4",
            "17.50 dismiss l4 timeout",
            "20.10 skip l7 quiet",
            "25.00 skip l8 pushed",
            "30.00 show l9",
            "30.20 dismiss l9 tap",
            "30.20 navigate team",
            "30.20 skip l10 active",
            "35.50 show l11",
            "39.50 dismiss l11 timeout",
        ])
        let l4 = timeline.lazy.compactMap { timed -> Banner? in if case .show(let banner) = timed.effect, banner.id == "l4" { banner } else { nil } }.first
        #expect(l4?.body == "late, and edited while held")
    }

    @Test("without a hold (localHold zero) a late banner shows at once, as before")
    func noHold() {
        var notifier = Notifier(userID: "alice")
        var late = Cast.message("m1", in: Cast.aliceBob, from: Cast.bob)
        late.message.sentAt = Date(timeIntervalSinceReferenceDate: -60)
        #expect(describe(notifier.run([(0, .message(late))])) == ["0.00 show m1", "4.00 dismiss m1 timeout"])
    }

    @Test("lateness is judged against the promptest message, whatever the two clocks' offset")
    func offset() {
        var notifier = Notifier(userID: "alice", localHold: .milliseconds(500))
        // The engine's instants start at zero; the server's clock reads an hour on: only differences count.
        func message(_ id: String, sent: Double) -> NotifierInput {
            var incoming = Cast.message(id, in: Cast.team, from: Cast.bob)
            incoming.message.sentAt = Date(timeIntervalSinceReferenceDate: 3600 + sent)
            return .message(incoming)
        }
        let timeline = notifier.run([
            (1, message("m1", sent: 0.9)),  // the first: held
            (10, message("m2", sent: 9.95)),  // 0.05 s later than m1 was: live
            (20, message("m3", sent: 19.2)),  // 0.75 s later than m2: held
            (30, message("m4", sent: 29.95)),
        ])
        #expect(describe(timeline) == [
            "1.50 show m1", "5.50 dismiss m1 timeout", "10.00 show m2", "14.00 dismiss m2 timeout",
            "20.50 show m3", "24.50 dismiss m3 timeout", "30.00 show m4", "34.00 dismiss m4 timeout",
        ])
    }
}

/// A fixture trace (`Tests/Fixtures/traces`, docs/replay.md's format) run through a ``Notifier``, as `herald replay`
/// runs it; only the events and fields these tests' traces use.
enum TraceFixture {
    struct Unsupported: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ name: String) throws -> [TimedEffect] {
        let url = packageRoot.appendingPathComponent("Tests/Fixtures/traces").appendingPathComponent(name)
        let text = try String(contentsOf: url, encoding: .utf8)
        var notifier: Notifier?
        var timeline: [TimedEffect] = []
        for line in text.split(separator: "\n") where !line.allSatisfy(\.isWhitespace) {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let seconds = (object["at"] as? NSNumber)?.doubleValue, let event = object["event"] as? String
            else { throw Unsupported(description: "\(name): \(line)") }
            if event == "configure" {
                let hold = (object["localHold"] as? NSNumber)?.doubleValue ?? 0
                notifier = Notifier(userID: object["me"] as? String ?? "", localHold: at(hold))
                continue
            }
            guard notifier != nil else { throw Unsupported(description: "\(name): no configure first") }
            timeline += notifier!.handle(try input(event, object, at: seconds), at: at(seconds))
        }
        while let deadline = notifier?.nextDeadline {
            timeline += notifier!.advance(to: deadline)
        }
        return timeline
    }

    private static func input(_ event: String, _ object: [String: Any], at seconds: Double) throws -> NotifierInput {
        switch event {
        case "app":
            return .app(object["state"] as? String == "background" ? .background : .foreground)
        case "open":
            return .open(conversationID: object["conversation"] as? String)
        case "tap":
            return .gesture(.tap)
        case "pushed":
            return .pushed(conversationID: object["conversation"] as? String ?? "", messageID: object["message"] as? String ?? "")
        case "message":
            guard let conversation = object["conversation"] as? [String: Any], let sender = object["sender"] as? [String: Any],
                  let id = object["id"] as? String, let conversationID = conversation["id"] as? String,
                  let senderID = sender["id"] as? String
            else { throw Unsupported(description: "a message without id, conversation or sender") }
            let sentAt = try (object["sentAt"] as? String).map { text in
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                guard let date = formatter.date(from: text) else { throw Unsupported(description: "sentAt \(text)") }
                return date
            } ?? Date(timeIntervalSinceReferenceDate: seconds)
            var event: ConversationEvent?
            if let change = object["change"] as? [String: Any] {
                guard let type = change["type"] as? String, let kind = ConversationEvent.Kind(rawValue: type) else {
                    throw Unsupported(description: "change \(change)")
                }
                event = ConversationEvent(kind: kind, messageID: change["messageId"] as? String)
            }
            let message = Message(
                id: id, conversationID: conversationID, senderID: senderID, text: object["text"] as? String,
                sentAt: sentAt, event: event)
            return .message(IncomingMessage(
                message: message,
                conversation: Conversation(
                    id: conversationID, kind: conversation["kind"] as? String == "group" ? .group : .direct,
                    title: conversation["title"] as? String),
                sender: Person(id: senderID, displayName: sender["name"] as? String ?? "")))
        default:
            throw Unsupported(description: "event \(event)")
        }
    }
}
