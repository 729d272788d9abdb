import Foundation
import HeraldCore
import HeraldProtocol
@testable import HeraldRecords
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// Who hears what, through the real server: Alice's choices made over the API reach her laptop's stream live, her
/// laptop's engine and the server's push decision agree message by message, and her phone's pushes (a fake APNs) ring,
/// arrive quietly or do not come. The server's wall clock is moved by the test, never slept on.
@Suite("Who hears what, end to end: levels, mentions, snooze and quiet hours", .timeLimit(.minutes(3)))
struct NotificationLevelsServerTests {
    /// Settings whose quiet hours, in UTC, run from an hour before `clock`'s now to two hours after, every day.
    static func quietHoursAroundNow(_ clock: WallClock) -> String {
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        func clockTime(_ seconds: TimeInterval) -> String {
            let parts = utc.dateComponents([.hour, .minute], from: clock.now().addingTimeInterval(seconds))
            return String(format: "%02d:%02d", parts.hour!, parts.minute!)
        }
        let days = Weekday.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        return #"""
            {"timeZone": "UTC", "quietHours": [{"days": [\#(days)], "start": "\#(clockTime(-3600))", "end": "\#(clockTime(7200))"}]}
            """#
    }

    /// What one message should do: on Alice's laptop (in the background) and on her phone.
    enum Outcome: Equatable, CustomStringConvertible {
        case ring
        case quietly
        case skip(SkipReason)

        var description: String {
            switch self {
            case .ring: "ring"
            case .quietly: "quietly"
            case .skip(let reason): "skip(\(reason.rawValue))"
            }
        }
    }

    @Test("each level with and without a mention, @all, a direct chat, an end that passes, snooze, quiet hours",
          arguments: StoreKind.available)
    func decisionTable(kind: StoreKind) async throws {
        let clock = WallClock()
        try await kind.withServerDatabase { database in
            try await PushHarness.run(configure: { configuration in
                configuration.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
                configuration.clock = clock
                // Each row's own push, alerting or quiet by the table: bursts would quiet a conversation's later ones.
                configuration.push.burstWindow = .zero
            }) { harness in
                try await decisionTable(harness, clock: clock)
            }
        }
    }

    private func decisionTable(_ harness: PushHarness, clock: WallClock) async throws {
        let server = harness.server
        let alice = try await server.token("alice", name: "Alice")
        let bob = try await server.token("bob", name: "Bob")
        _ = try await server.token("carol", name: "Carol")
        let team = try await server.createConversation(bob, kind: "group", title: "Team", members: ["alice", "carol"])
        let direct = try await server.createConversation(bob, kind: "direct", members: ["alice"])
        let phone = PushHarness.apnsToken(0xA11CE)
        try await harness.register(alice, device: "alice-phone", platform: "apns", pushToken: phone)
        // Her laptop is connected, in the background: it notifies with its own engine; her phone gets pushes.
        let socket = try await server.stream(alice, device: "alice-laptop")
        var reader = FrameReader(socket)
        _ = try await reader.untilReady()
        socket.send(#"{"type": "app", "state": "background"}"#)
        _ = try await reader.drain(socket)

        var expected: [(id: String, outcome: Outcome)] = []
        var lastSeq: Int64 = 0
        func post(_ id: String, in conversation: String, mentions: [String] = [], all: Bool = false, _ outcome: Outcome) async throws {
            var body: [String: Any] = ["id": id, "text": "text of \(id)"]
            if !mentions.isEmpty { body["mentions"] = mentions }
            if all { body["mentionsAll"] = true }
            let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            let result = try await server.request("POST", "/v1/conversations/\(conversation)/messages", token: bob, body: json)
            #expect(result.status == 201, "\(id): \(result.text)")
            lastSeq = try result.decode(MessageJSON.self).seq
            expected.append((id, outcome))
        }
        // A push is decided a moment after its message, with the member's choices as they are then: each change
        // waits for the decisions on what came before it.
        func decided() async throws {
            let seq = lastSeq
            try await harness.eventually("the push decisions reach seq \(seq)") {
                server.environment.push.decidedThrough.withLockedValue { $0 } >= seq
            }
        }
        func put(_ path: String, _ body: String) async throws {
            try await decided()
            let result = try await server.request("PUT", path, token: alice, body: body)
            #expect((200...204).contains(result.status), "\(path) \(body): \(result.status) \(result.text)")
        }
        func instant(_ seconds: TimeInterval) -> String {
            clock.now().addingTimeInterval(seconds).formatted(Date.ISO8601FormatStyle())
        }

        // The default: every message.
        try await post("all-plain", in: team, .ring)
        // Mentions only: what names her or everyone; a direct chat's every message.
        try await put("/v1/conversations/\(team)/notifications", #"{"level": "mentions"}"#)
        try await put("/v1/conversations/\(direct)/notifications", #"{"level": "mentions"}"#)
        try await post("mentions-plain", in: team, .skip(.unmentioned))
        try await post("mentions-named", in: team, mentions: ["alice", "carol"], .ring)
        try await post("mentions-other", in: team, mentions: ["carol"], .skip(.unmentioned))
        try await post("mentions-all", in: team, all: true, .ring)
        try await post("direct-plain", in: direct, .ring)
        // Nothing for an hour: mentions too. Two hours later (the clock moved, not slept on), the default again.
        try await put("/v1/conversations/\(team)/notifications", #"{"level": "nothing", "until": "\#(instant(3600))"}"#)
        try await post("nothing-named", in: team, mentions: ["alice"], .skip(.muted))
        try await post("nothing-all", in: team, all: true, .skip(.muted))
        try await decided()
        clock.advance(by: 2 * 3600)
        try await post("nothing-ended", in: team, .ring)
        // Snooze: everything, direct chats too, until it ends.
        try await put("/v1/me/notifications", #"{"snoozeUntil": "\#(instant(3600))"}"#)
        try await post("snoozed-named", in: team, mentions: ["alice"], .skip(.snoozed))
        try await post("snoozed-direct", in: direct, .skip(.snoozed))
        try await decided()
        clock.advance(by: 2 * 3600)
        try await post("snooze-ended", in: direct, .ring)
        // Quiet hours around now, in UTC: quietly, mentions too; then mentions ring through.
        try await put("/v1/me/notifications", Self.quietHoursAroundNow(clock))
        try await post("quiet-plain", in: team, .quietly)
        try await post("quiet-named", in: team, mentions: ["alice"], .quietly)
        try await put("/v1/me/notifications", #"{"mentionsDuringQuietHours": true}"#)
        try await post("quiet-rings-through", in: team, mentions: ["alice"], .ring)
        try await post("quiet-direct", in: direct, .ring)
        // The old mute is `nothing` for ever, a mention included; unmuted, the default again.
        try await decided()
        #expect(try await server.request("PUT", "/v1/conversations/\(team)/mute", token: alice).status == 204)
        try await post("muted-named", in: team, mentions: ["alice"], .skip(.muted))
        try await decided()
        #expect(try await server.request("DELETE", "/v1/conversations/\(team)/mute", token: alice).status == 204)
        try await post("last", in: team, .quietly)

        // The laptop: every choice came on the stream before the messages it applies to; its engine decides.
        // Each row its own notification, as the server's pushes here (bursts are NotificationBurstsTests' and the traces').
        var notifier = Notifier(userID: "alice", device: DeviceState(appState: .background), burstWindow: .zero)
        var laptop: [String: Outcome] = [:]
        var frameTypes: [String] = []
        while laptop["last"] == nil {
            guard let text = await reader.nextText() else { throw TestFailure("Alice's stream ended") }
            let frame = try ServerFrame(parsing: text)
            let input: NotifierInput
            switch frame {
            case .message(let incoming): input = .message(incoming)
            case .level(let conversationID, let choice):
                frameTypes.append("level")
                input = .level(conversationID: conversationID, choice)
            case .notifications(let settings):
                frameTypes.append("notifications")
                input = .settings(settings)
            case .muted:
                frameTypes.append("muted")
                continue
            default: continue
            }
            for effect in notifier.handle(input, at: .zero).map(\.effect) {
                switch effect {
                case .skip(let id, let reason): laptop[id] = .skip(reason)
                case .local(let notification): laptop[notification.messageID] = notification.silent ? .quietly : .ring
                default: break
                }
            }
        }
        #expect(frameTypes == ["level", "level", "level", "notifications", "notifications", "notifications", "level",
                               "muted", "level", "muted"])
        for (id, outcome) in expected {
            #expect(laptop[id] == outcome, "the laptop on \(id)")
        }

        // The phone: a push for each message that rings or comes quietly, none for the others.
        let pushed = expected.filter { $0.outcome != .skip(.muted) && $0.outcome != .skip(.unmentioned) && $0.outcome != .skip(.snoozed) }
        try await harness.eventually("Alice's phone gets \(pushed.count) pushes") {
            Set(harness.apns(phone).compactMap(\.messageID)).isSuperset(of: pushed.map(\.id))
        }
        let pushes = Dictionary(harness.apns(phone).compactMap { push in push.messageID.map { ($0, push) } }) { first, _ in first }
        for (id, outcome) in expected {
            let aps = pushes[id]?.json?["aps"] as? [String: Any]
            switch outcome {
            case .skip:
                #expect(pushes[id] == nil, "no push for \(id)")
            case .ring:
                #expect(aps?["sound"] as? String == "default" && aps?["interruption-level"] as? String == "active", "\(id) rings: \(aps ?? [:])")
                #expect(pushes[id]?.headers["apns-priority"] == "10")
            case .quietly:
                #expect(aps?["sound"] == nil && aps?["interruption-level"] as? String == "passive", "\(id) is quiet: \(aps ?? [:])")
                #expect(pushes[id]?.json?["quiet"] as? String == "true")
            }
        }
        #expect(pushes["mentions-named"]?.json?["mentioned"] as? String == "true")
        #expect(pushes["all-plain"]?.json?["mentioned"] == nil)
        #expect(pushes["direct-plain"]?.json?["mentioned"] as? String == "true", "a direct chat's message is a mention")
    }

    @Test("choices are bounded like changes to groups: over HERALD_LIMIT_CHANGES_PER_HOUR, rate_limited with a wait")
    func rateLimited() async throws {
        try await TestServer.run(configure: { $0.limits.changesPerHour = 3 }) { server in
            let alice = try await server.token("alice")
            let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob"])
            let changes = [
                ("/v1/conversations/\(team)/notifications", #"{"level": "mentions"}"#),
                ("/v1/me/notifications", #"{"defaultLevel": "mentions"}"#),
                ("/v1/conversations/\(team)/mute", ""),
                ("/v1/me/notifications", #"{"defaultLevel": "all"}"#),
            ]
            var statuses: [Int] = []
            for (path, body) in changes {
                let result = try await server.request("PUT", path, token: alice, body: body.isEmpty ? nil : body)
                statuses.append(result.status)
                if result.status == 429 {
                    #expect(result.errorCode == "rate_limited" && result.headers[.retryAfter] != nil)
                }
            }
            #expect(statuses == [204, 200, 204, 429])
            // The refused one changed nothing.
            let kept = try WireJSON.decoder().decode(
                NotificationSettings.self, from: try await server.request("GET", "/v1/me/notifications", token: alice).body)
            #expect(kept.defaultLevel == .mentions)
        }
    }

    @Test("bad choices and mentions are refused with a clear error, and nothing changes")
    func badInput() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let bob = try await server.token("bob")
            _ = try await server.token("dave")
            let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob"])
            let far = Date().addingTimeInterval(400 * 86_400).formatted(Date.ISO8601FormatStyle())
            let past = Date().addingTimeInterval(-60).formatted(Date.ISO8601FormatStyle())
            let refusals: [(path: String, body: String, words: String)] = [
                ("/v1/conversations/\(team)/notifications", #"{"level": "loud"}"#, "must be all, mentions or nothing"),
                ("/v1/conversations/\(team)/notifications", #"{"level": "nothing", "until": "\#(past)"}"#, "in the past"),
                ("/v1/conversations/\(team)/notifications", #"{"level": "nothing", "until": "\#(far)"}"#, "more than 366 days"),
                ("/v1/conversations/\(team)/notifications", #"{"level": "nothing", "until": "tomorrow"}"#, "ISO 8601"),
                ("/v1/conversations/\(team)/notifications", #"{"until": "\#(far)"}"#, "needs a `level`"),
                ("/v1/conversations/\(team)/notifications", #"{"level": 3}"#, "`level`"),
                ("/v1/me/notifications", #"{"defaultLevel": "some"}"#, "must be all, mentions or nothing"),
                ("/v1/me/notifications", #"{"snoozeUntil": "\#(past)"}"#, "in the past"),
                ("/v1/me/notifications", #"{"snoozeUntil": "\#(far)"}"#, "more than 366 days"),
                ("/v1/me/notifications", #"{"timeZone": "Mars/Olympus"}"#, "not an IANA time zone"),
                ("/v1/me/notifications", #"{"timeZone": "../../../etc/passwd"}"#, "not an IANA time zone"),
                ("/v1/me/notifications", #"{"quietHours": [{"days": ["mon"], "start": "22:00", "end": "07:00"}]}"#, "need a timeZone"),
                ("/v1/me/notifications", #"{"timeZone": "UTC", "quietHours": [{"days": ["mon"], "start": "25:00", "end": "07:00"}]}"#, ".start"),
                ("/v1/me/notifications", #"{"timeZone": "UTC", "quietHours": [{"days": ["someday"], "start": "22:00", "end": "07:00"}]}"#, "days"),
                ("/v1/me/notifications", #"{"timeZone": "UTC", "quietHours": [{"days": [], "start": "22:00", "end": "07:00"}]}"#, "no days"),
                ("/v1/me/notifications", #"{"timeZone": "UTC", "quietHours": [\#(Array(repeating: #"{"days": ["mon"], "start": "22:00", "end": "07:00"}"#, count: 8).joined(separator: ","))]}"#, "at most 7"),
            ]
            for refusal in refusals {
                let result = try await server.request("PUT", refusal.path, token: alice, body: refusal.body)
                #expect(result.status == 400 && result.errorCode == "invalid_request", "\(refusal.body): \(result.status) \(result.text)")
                #expect(result.text.contains(refusal.words), "\(refusal.body): \(result.text)")
            }
            // Nothing changed.
            let settings = try await server.request("GET", "/v1/me/notifications", token: alice)
            let kept = try WireJSON.decoder().decode(NotificationSettings.self, from: settings.body)
            #expect(kept == NotificationSettings())
            let list = try await server.request("GET", "/v1/conversations", token: alice)
            let summaries = try WireJSON.decoder().decode(WireConversationList.self, from: list.body).conversations
            #expect(summaries.allSatisfy { $0.level == nil && !$0.muted })
            // A conversation the caller is not in: as for every other route.
            let strangers = try await server.createConversation(bob, kind: "group", title: "Strangers", members: ["dave"])
            let outside = try await server.request(
                "PUT", "/v1/conversations/\(strangers)/notifications", token: alice, body: #"{"level": "nothing"}"#)
            #expect(outside.status == 403 && outside.errorCode == "not_a_member")

            // Mentions: a non-member, too many, a malformed id: refused, nothing stored.
            let mentionRefusals: [(body: String, words: String)] = [
                (#"{"id": "m1", "text": "hi @Dave", "mentions": ["dave"]}"#, "dave, who is not a member"),
                (#"{"id": "m2", "text": "hi", "mentions": [\#((0..<51).map { "\"u\($0)\"" }.joined(separator: ","))]}"#, "at most 50"),
                (#"{"id": "m3", "text": "hi", "mentions": [""]}"#, "`mentions` has an id"),
                (#"{"id": "m4", "text": "hi", "mentions": "bob"}"#, "`mentions`"),
            ]
            for refusal in mentionRefusals {
                let result = try await server.request("POST", "/v1/conversations/\(team)/messages", token: alice, body: refusal.body)
                #expect(result.status == 400, "\(refusal.body): \(result.text)")
                #expect(result.text.contains(refusal.words), "\(refusal.body): \(result.text)")
            }
            let history = try await server.request("GET", "/v1/conversations/\(team)/messages", token: alice)
            #expect(try WireJSON.decoder().decode(WireMessageList.self, from: history.body).messages.allSatisfy { $0.kind == "event" })
            // A good one keeps each member once, in the order given, and is in history as sent.
            let good = try await server.request(
                "POST", "/v1/conversations/\(team)/messages", token: alice,
                body: #"{"id": "m5", "text": "@Bob @all", "mentions": ["bob", "bob", "alice"], "mentionsAll": true}"#)
            #expect(good.status == 201)
            let stored = try WireJSON.decoder().decode(WireMessageList.self, from: try await server.request(
                "GET", "/v1/conversations/\(team)/messages", token: bob).body).messages.last
            #expect(stored?.mentions == ["bob", "alice"] && stored?.mentionsAll == true)
        }
    }
}
