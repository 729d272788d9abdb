import Foundation
import HeraldCore
import HeraldProtocol
@testable import HeraldRecords
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// "Why didn't my phone ring?": the delivery trail of a group message to members in every situation, read by the
/// backend, by a member and by `herald explain`, then gone after HERALD_TRAIL_HOURS and with an erasure; a test
/// notification; the troubleshooter's checks.
///
/// The server's clock moves only when a test says: a push held for a confirmation waits ten minutes of it, so a
/// confirmation is never late on a busy machine.
@Suite("Delivery trail", .timeLimit(.minutes(3)))
struct DeliveryTrailTests {
    static let serviceKey = "hsk_delivery_trail_tests_0123456789abcdef"
    static let grace: TimeInterval = 600

    /// The push harness on `kind`'s store (SQLite in a file, so `herald explain` can read it beside the server).
    static func run(
        _ kind: StoreKind, clock: WallClock, configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in },
        _ body: (PushHarness, ServerConfiguration) async throws -> Void
    ) async throws {
        let keys = try ServiceKeys([serviceKey])
        let folder = try makeTemporaryFolder("herald-trail")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await kind.withServerDatabase { database in
            let postgres = database["HERALD_POSTGRES_URL"] ?? nil
            let file = folder.appendingPathComponent("herald.sqlite").path
            try await PushHarness.run(configure: {
                $0.clock = clock
                $0.push.confirmWithin = .seconds(grace)
                $0.serviceKeys = keys
                $0.postgresURL = postgres
                if postgres == nil { $0.databasePath = file }
                configure(&$0)
            }) { push in
                var reading = try ServerConfiguration.fromEnvironment([:])
                reading.postgresURL = postgres
                reading.databasePath = file
                reading.clock = clock
                try await body(push, reading)
            }
        }
    }

    @Test("a group message: the trail names each member's reason and each push service's answer; gone after HERALD_TRAIL_HOURS and with an erasure",
          arguments: StoreKind.available)
    func everySituation(kind: StoreKind) async throws {
        let clock = WallClock()
        try await Self.run(kind, clock: clock) { push, reading in
            let server = push.server
            let names = ["alice", "bob", "carol", "dave", "erin", "fay", "gus"]
            var tokens: [String: String] = [:]
            for name in names { tokens[name] = try await server.token(name, name: name.capitalized) }
            let alice = tokens["alice", default: ""]
            let team = try await server.createConversation(alice, kind: "group", title: "Team", members: Array(names.dropFirst()))
            let phones = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, PushHarness.apnsToken(0x7000 + $0)) })
            for name in names {
                try await push.register(tokens[name, default: ""], device: "\(name)-phone", platform: "apns", pushToken: try #require(phones[name]))
            }
            // Bob's push is answered with an id; Gus's token is dead.
            let bobsID = "0a1b2c3d-0000-4000-8000-00000000b0b0"
            push.fake.respond { request in
                if request.path.hasSuffix(phones["gus"]!) { return FakeAnswer(status: 410, body: #"{"reason":"Unregistered"}"#) }
                if request.path.hasSuffix(phones["bob"]!) { return FakeAnswer(status: 200, headers: ["apns-id": bobsID], body: "") }
                return nil
            }
            func put(_ name: String, _ path: String, _ body: String) async throws {
                let answer = try await server.request("PUT", path, token: tokens[name, default: ""], body: body)
                #expect(answer.status == 200 || answer.status == 204, "\(path): \(answer.text)")
            }
            // Carol muted the group; Dave hears of mentions only; Erin is in her quiet hours.
            try await put("carol", "/v1/conversations/\(team)/notifications", #"{"level": "nothing"}"#)
            try await put("dave", "/v1/conversations/\(team)/notifications", #"{"level": "mentions"}"#)
            try await put("erin", "/v1/me/notifications", NotificationLevelsServerTests.quietHoursAroundNow(clock))
            // Fay's phone is connected, in the background: it confirms what it takes in.
            let fay = try await server.stream(tokens["fay", default: ""], device: "fay-phone")
            var frames = FrameReader(fay)
            _ = try await frames.untilReady()
            fay.send(#"{"type": "app", "state": "background"}"#)
            _ = try await frames.drain(fay)

            let posted = try await server.post(alice, to: team, id: "ring", text: "does it ring?")
            let seq = posted.seq
            fay.confirm(through: try #require(try await frames.next().message?.seq))
            try await push.fake.wait("Bob's, Erin's and Gus's pushes") { _ in
                ["bob", "erin", "gus"].allSatisfy { !push.apns(phones[$0]!).isEmpty }
            }
            try await push.eventually("the outbox empty: Fay's push held back, the others answered") {
                try await server.environment.store.pushJobCount() == 0
            }
            try await push.eventually("Gus's dead phone removed") { try await push.devices(of: "gus").isEmpty }
            #expect(push.apns(phones["fay"]!).isEmpty && push.apns(phones["carol"]!).isEmpty && push.apns(phones["dave"]!).isEmpty)

            // The backend reads every member's.
            let answer = try await server.request(
                "GET", "/v1/service/conversations/\(team)/messages/ring/deliveries", token: Self.serviceKey)
            #expect(answer.status == 200, "\(answer.text)")
            let trail = try answer.wire(WireDeliveries.self)
            #expect(trail.message.seq == seq && trail.message.sender == "alice" && trail.trailHours == 24)
            let members = Dictionary(uniqueKeysWithValues: trail.members.map { ($0.user, $0) })
            #expect(trail.members.map(\.user) == names)
            #expect(members["alice"]?.summary == "own")
            #expect(members["carol"]?.summary == "muted" && members["carol"]?.steps.first?.reasons == ["muted"])
            #expect(members["dave"]?.summary == "unmentioned" && members["dave"]?.steps.first?.reasons == ["unmentioned"])
            let bob = try #require(members["bob"]?.devices.first)
            #expect(members["bob"]?.summary == "pushed")
            #expect(bob.steps.map(\.step) == ["queued", "sent"] && bob.steps.last?.detail == bobsID, "\(bob.steps)")
            let erin = try #require(members["erin"]?.devices.first)
            #expect(erin.steps.first?.reasons.contains("quiet_hours") == true && erin.steps.last?.step == "sent")
            let fayPhone = try #require(members["fay"]?.devices.first)
            #expect(members["fay"]?.summary == "confirmed" && fayPhone.confirmed)
            #expect(fayPhone.steps.map(\.step) == ["queued", "confirmed"] && fayPhone.steps.first?.reasons == ["waits_for_device"])
            let gus = try #require(members["gus"]?.devices.first)
            #expect(gus.steps.last?.step == "device_removed" && gus.steps.last?.detail == "Unregistered" && gus.platform == nil)

            // A member reads their own, and only theirs; someone else's conversation is not theirs to read.
            let bobs = try await server.request(
                "GET", "/v1/me/deliveries?conversation=\(team)&message=ring", token: tokens["bob", default: ""])
            #expect(try bobs.wire(WireDeliveries.self).members.map(\.user) == ["bob"])
            let stranger = try await server.token("zed", name: "Zed")
            let refused = try await server.request("GET", "/v1/me/deliveries?conversation=\(team)&message=ring", token: stranger)
            #expect(refused.status == 403 && refused.errorCode == "not_a_member")
            let missing = try await server.request("GET", "/v1/me/deliveries?conversation=\(team)&message=nope", token: alice)
            #expect(missing.status == 404 && missing.errorCode == "message_not_found")

            // The operator's words, read from the database beside the running server.
            let words = try await DeliveryExplanation.explain(
                conversationID: team, messageID: "ring", userID: nil, configuration: reading, logger: .init(label: "explain"))
            for expected in ["bob: pushed", "carol: not told: the conversation is muted", "sent: the push service took it (id \(bobsID))",
                             "held back: the device confirmed it live", "quietly: their quiet hours",
                             "the token is dead: the device was removed: Unregistered", "their level is Mentions"] {
                #expect(words.contains(expected), "\(expected) in:\n\(words)")
            }

            // An erasure takes the erased user's steps; HERALD_TRAIL_HOURS later, nothing is left.
            #expect(try await server.request("DELETE", "/v1/service/users/bob", token: Self.serviceKey).status == 204)
            let store = server.environment.store
            #expect(try await store.trail(of: team, seq: seq, userID: "bob").isEmpty)
            #expect(try await !store.trail(of: team, seq: seq, userID: "erin").isEmpty)
            clock.advance(by: 23 * 3600)
            #expect(try await server.environment.push.forgetOldTrail() == 0, "kept for 24 hours")
            clock.advance(by: 2 * 3600)
            #expect(try await server.environment.push.forgetOldTrail() > 0)
            #expect(try await store.trail(of: team, seq: seq, userID: nil).isEmpty)
            #expect(try await store.recentTrail(of: "erin", limit: 5).isEmpty)
            fay.close()
            _ = try await fay.closed()
        }
    }

    @Test("a decided alert the queueing left out (read, confirmed or left meanwhile) is a dropped step, not queued for ever; a service's words lose their control characters")
    func reconciled() {
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let steps = [
            TrailStep(conversationID: "c", seq: 7, userID: "bob", deviceID: "phone", at: at, kind: .queued),
            TrailStep(conversationID: "c", seq: 7, userID: "fay", deviceID: "phone", at: at, kind: .queued, reasons: [.waitsForDevice]),
            TrailStep(conversationID: "c", seq: 7, userID: "gus", deviceID: "phone", at: at, kind: .queued, reasons: [.followUp]),
            TrailStep(conversationID: "c", seq: 7, userID: "dave", at: at, kind: .skipped, reasons: [.muted]),
        ]
        let queued = QueuedAlerts()
        queued.add(.init(userID: "bob", deviceID: "phone", seq: 7))
        #expect(steps.reconciled(with: queued).map(\.kind) == [.queued, .dropped, .queued, .skipped])
        let words = TrailStep(
            conversationID: "c", seq: 7, userID: "bob", at: at, kind: .refused, detail: "Bad\u{0}Token\u{1B}[31m" + String(repeating: "é", count: 400))
        #expect(words.detail?.hasPrefix("Bad Token [31m") == true && (words.detail?.utf8.count ?? 0) <= TrailStep.maxDetailBytes)
    }

    @Test("with HERALD_TRAIL_HOURS=0 nothing is written; the answer still says who was told, from what is known now",
          arguments: StoreKind.available)
    func off(kind: StoreKind) async throws {
        try await Self.run(kind, clock: WallClock(), configure: { $0.trailHours = 0 }) { push, _ in
            let server = push.server
            let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob", name: "Bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let phone = PushHarness.apnsToken(0xB0B)
            try await push.register(bob, device: "phone", platform: "apns", pushToken: phone)
            let seq = try await server.post(alice, to: chat, id: "quiet", text: "untraced").seq
            try await push.fake.wait("Bob's push") { _ in !push.apns(phone).isEmpty }
            try await push.eventually("the outbox empty") { try await server.environment.store.pushJobCount() == 0 }
            #expect(try await server.environment.store.trail(of: chat, seq: seq, userID: nil).isEmpty)
            let trail = try await server.request(
                "GET", "/v1/service/conversations/\(chat)/messages/quiet/deliveries?user=bob", token: Self.serviceKey
            ).wire(WireDeliveries.self)
            #expect(trail.trailHours == 0 && trail.members.map(\.summary) == ["not_pushed"])
        }
    }

    @Test("a test notification: the push service's answer; a dead token removes the device; five a minute; permissions reported")
    func testNotification() async throws {
        try await Self.run(.sqlite, clock: WallClock()) { push, _ in
            let server = push.server
            let bob = try await server.token("bob", name: "Bob")
            let (good, dead) = (PushHarness.apnsToken(0x600D), PushHarness.apnsToken(0xDEAD))
            push.fake.respond { request in
                if request.path.hasSuffix(dead) { return FakeAnswer(status: 410, body: #"{"reason":"Unregistered"}"#) }
                if request.path.hasSuffix(good) { return FakeAnswer(status: 200, headers: ["apns-id": "test-apns-id"], body: "") }
                return nil
            }
            try await push.register(bob, device: "phone", platform: "apns", pushToken: good)
            try await push.register(bob, device: "old-phone", platform: "apns", pushToken: dead)

            let sent = try await server.request("POST", "/v1/devices/phone/test", token: bob)
            #expect(sent.status == 200, "\(sent.text)")
            let answer = try sent.wire(WireTestNotification.self)
            #expect(answer.outcome == .sent && answer.providerID == "test-apns-id" && answer.platform == .apns)
            let request = try #require(push.apns(good).last)
            #expect(request.json?["type"] as? String == "test")
            let aps = try #require(request.json?["aps"] as? [String: Any])
            #expect((aps["alert"] as? [String: Any])?["body"] as? String == "Test notification: notifications reach this device.")

            let removed = try await server.request("POST", "/v1/devices/old-phone/test", token: bob).wire(WireTestNotification.self)
            #expect(removed.outcome == .deviceRemoved && removed.reason == "Unregistered")
            #expect(try await push.devices(of: "bob") == ["phone"])
            #expect(try await server.request("POST", "/v1/devices/old-phone/test", token: bob).status == 404)

            // Five a minute: two were sent, three more go, the sixth is refused.
            for _ in 0..<3 { #expect(try await server.request("POST", "/v1/devices/phone/test", token: bob).status == 200) }
            let limited = try await server.request("POST", "/v1/devices/phone/test", token: bob)
            #expect(limited.status == 429 && limited.errorCode == "rate_limited" && limited.headers[.retryAfter] != nil)

            // What the device's system allows: reported, listed, refused when it is not a known value.
            #expect(try await server.request("PUT", "/v1/devices/phone/permission", token: bob, body: #"{"permission": "denied"}"#).status == 204)
            let bad = try await server.request("PUT", "/v1/devices/phone/permission", token: bob, body: #"{"permission": "maybe"}"#)
            #expect(bad.status == 400 && bad.errorCode == "invalid_request")
            #expect(try await server.request("PUT", "/v1/devices/none/permission", token: bob, body: #"{"permission": "granted"}"#).status == 404)
            let listed = try await server.request("GET", "/v1/devices", token: bob).wire(WireDeviceList.self)
            #expect(listed.devices.first?.permission == .denied && listed.devices.first?.lastSeen != nil)
        }
    }

    @Test("the troubleshooter: each check's state follows the devices, the permission, the level, the snooze, the quiet hours, the last pushes and the confirmations")
    func troubleshooter() async throws {
        let clock = WallClock()
        try await Self.run(.sqlite, clock: clock) { push, _ in
            let server = push.server
            let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob", name: "Bob"))
            func check() async throws -> [String: WireNotificationCheck.Check.State] {
                let answer = try await server.request("GET", "/v1/me/notifications/check", token: bob)
                #expect(answer.status == 200, "\(answer.text)")
                let checks = try answer.wire(WireNotificationCheck.self).checks
                #expect(checks.map(\.id) == ["devices", "permission", "level", "snooze", "quiet_hours", "pushes", "confirmations"])
                return Dictionary(uniqueKeysWithValues: checks.map { ($0.id, $0.state) })
            }
            #expect(try await check()["devices"] == .problem, "no device")

            let (good, dead) = (PushHarness.apnsToken(0x600D), PushHarness.apnsToken(0xDEAD))
            push.fake.respond { $0.path.hasSuffix(dead) ? FakeAnswer(status: 410, body: #"{"reason":"Unregistered"}"#) : nil }
            try await push.register(bob, device: "phone", platform: "apns", pushToken: good)
            var states = try await check()
            #expect(states["devices"] == .ok && states["permission"] == .warning, "registered; its permission never said")
            #expect(try await server.request("PUT", "/v1/devices/phone/permission", token: bob, body: #"{"permission": "granted"}"#).status == 204)
            states = try await check()
            #expect(states.values.allSatisfy { $0 == .ok }, "\(states)")

            #expect(try await server.request("PUT", "/v1/devices/phone/permission", token: bob, body: #"{"permission": "denied"}"#).status == 204)
            #expect(try await server.request("PUT", "/v1/me/notifications", token: bob, body: #"{"defaultLevel": "mentions"}"#).status == 200)
            let until = clock.now().addingTimeInterval(3600).formatted(Date.ISO8601FormatStyle())
            #expect(try await server.request("PUT", "/v1/me/notifications", token: bob, body: #"{"snoozeUntil": "\#(until)"}"#).status == 200)
            states = try await check()
            #expect(states["permission"] == .problem && states["level"] == .warning && states["snooze"] == .problem, "\(states)")

            // A phone whose token died: its last push failed. A page connected that never confirms.
            try await push.register(bob, device: "old-phone", platform: "apns", pushToken: dead)
            #expect(try await server.request("PUT", "/v1/me/notifications", token: bob, body: #"{"snoozeUntil": null, "defaultLevel": "all"}"#).status == 200)
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            try await server.post(alice, to: chat, id: "m1", text: "hello")
            try await push.eventually("the dead phone removed") { try await push.devices(of: "bob") == ["phone"] }
            let tablet = try await server.stream(bob, device: "phone")
            var frames = FrameReader(tablet)
            _ = try await frames.untilReady()
            try await push.eventually("the stream seen") { server.environment.hub.presence(of: "bob").isEmpty == false }
            states = try await check()
            #expect(states["pushes"] == .problem && states["confirmations"] == .warning && states["snooze"] == .ok, "\(states)")
            tablet.close()
            _ = try await tablet.closed()
        }
    }
}

extension HTTPResult {
    /// The body read as Herald's JSON (ISO 8601 times).
    func wire<T: Decodable>(_ type: T.Type) throws -> T {
        try WireJSON.decoder().decode(type, from: body)
    }
}
