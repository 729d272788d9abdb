import Foundation
import HeraldClient
@testable import HeraldRecords
@testable import HeraldServer
import HeraldTestSupport
import Testing
import HeraldNIOTransport

/// Who gets a push, end to end: real stream connections say where each member is, the fake APNs says what was
/// sent. A push that should not happen is checked for after one that should, posted later, has arrived and the
/// outbox is empty: decisions are taken in order, so the first would have been sent by then.
///
/// A push a connected device would hold back waits for its confirmation (`received`) for ten minutes of the
/// server's clock, which moves only when a test says: a confirmation is never late on a busy machine, and one that
/// does not come is "late" only once the test moves the clock past it.
@Suite("Push decision", .timeLimit(.minutes(3)))
struct PushDecisionTests {
    /// The grace period here: longer than any test, so only moving the clock ends it.
    static let grace: TimeInterval = 600

    /// The harness with the grace period and a clock the test moves.
    static func run(clock: WallClock = WallClock(), _ body: (PushHarness) async throws -> Void) async throws {
        try await PushHarness.run(configure: {
            $0.clock = clock
            $0.push.confirmWithin = .seconds(grace)
        }, body)
    }

    /// Bob has two phones; Alice writes to him.
    private struct Scene {
        let push: PushHarness
        let alice: String
        let bob: String
        let chat: String
        let phone1 = PushHarness.apnsToken(0xB0B1)
        let phone2 = PushHarness.apnsToken(0xB0B2)

        static func make(_ push: PushHarness) async throws -> Scene {
            let server = push.server
            let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob", name: "Bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let scene = Scene(push: push, alice: alice, bob: bob, chat: chat)
            try await push.register(bob, device: "phone-1", platform: "apns", pushToken: scene.phone1)
            try await push.register(bob, device: "phone-2", platform: "apns", pushToken: scene.phone2)
            // The sender has a phone too: it must never hear of its own messages.
            try await push.register(alice, device: "alice-phone", platform: "apns", pushToken: PushHarness.apnsToken(0xA1))
            return scene
        }

        /// Bob's phone 1, connected in the background and caught up: its socket and a reader of its frames.
        func phoneInTheBackground() async throws -> (socket: TestSocket, frames: FrameReader) {
            let phone = try await push.server.stream(bob, device: "phone-1")
            var frames = FrameReader(phone)
            _ = try await frames.untilReady()
            phone.send(#"{"type": "app", "state": "background"}"#)
            _ = try await frames.drain(phone)
            return (phone, frames)
        }

        /// The messages pushed to `token` so far. A set: a push retried after a dropped connection comes again
        /// with the same collapse id, which the device shows once.
        func pushed(_ token: String) -> Set<String> {
            Set(push.apns(token).compactMap(\.messageID))
        }

        /// Posts `id` as Alice, and returns once the push decision on it was made: it is made from the log just after
        /// the commit, from where the devices are then, so a test changes them only after it.
        func post(_ id: String) async throws {
            let seq = try await push.server.post(alice, to: chat, id: id, text: "message \(id)").seq
            try await push.eventually("the push decision on \(id)") {
                push.server.environment.push.decidedThrough.withLockedValue { $0 } >= seq
            }
        }

        /// Posts a marker message with Bob away from everything, waits until it reached phone 2, and returns
        /// what each phone was sent before it.
        func settle(_ marker: String) async throws -> (phone1: Set<String>, phone2: Set<String>) {
            try await post(marker)
            try await push.fake.wait("the marker \(marker)") { _ in pushed(phone2).contains(marker) }
            // Decisions are taken in order, so any job of an earlier message was queued before the marker's; once
            // the outbox is empty, every one of them has reached the fake.
            try await push.eventually("the outbox empty") { try await push.server.environment.store.pushJobCount() == 0 }
            return (pushed(phone1).filter { $0 != marker }, pushed(phone2).filter { $0 != marker })
        }
    }

    static func isClear(_ request: RecordedRequest) -> Bool {
        request.headers["apns-push-type"] == "background"
    }

    @Test("all devices away: a push to each; the sender: none")
    func allAway() async throws {
        try await PushHarness.run { push in
            let scene = try await Scene.make(push)
            try await scene.post("m1")
            try await push.fake.wait("both phones") { _ in scene.pushed(scene.phone1) == ["m1"] && scene.pushed(scene.phone2) == ["m1"] }
            #expect(push.apns(PushHarness.apnsToken(0xA1)).isEmpty, "the sender gets no push for their own message")
        }
    }

    @Test("a push waiting out its delay is dropped when its member is removed before it goes; the others' still go",
          arguments: StoreKind.available)
    func removalDropsWaitingPush(kind: StoreKind) async throws {
        // The pushes wait half an hour on the server's clock, which moves only when the test says: the removal comes
        // before the push's time by construction, however slow the machine.
        let clock = WallClock()
        try await kind.withServerDatabase { database in
            try await PushHarness.run(configure: {
                $0.clock = clock
                $0.push.delay = .seconds(1800)
                $0.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
            }) { push in
                let server = push.server
                let (alice, dave, erin) = try await (
                    server.token("alice", name: "Alice"), server.token("dave", name: "Dave"), server.token("erin", name: "Erin"))
                let chat = try await server.createConversation(alice, kind: "group", title: "Team Chat", members: ["dave", "erin"])
                let (davesPhone, erinsPhone) = (PushHarness.apnsToken(0xDA7E), PushHarness.apnsToken(0xE414))
                try await push.register(dave, device: "phone", platform: "apns", pushToken: davesPhone)
                try await push.register(erin, device: "phone", platform: "apns", pushToken: erinsPhone)

                try await server.post(alice, to: chat, id: "for-erin", text: "you will not hear this")
                try await push.eventually("the message decided on: a push for each phone, waiting") {
                    try await server.environment.store.pushJobCount() == 2
                }
                #expect(try await server.request("DELETE", "/v1/conversations/\(chat)/members/erin", token: alice).status == 204)

                clock.advance(by: 1800)
                server.environment.push.wakeSenders()
                try await push.fake.wait("Dave's push") { _ in push.apns(davesPhone).contains { $0.messageID == "for-erin" } }
                // Once the outbox is empty, anything still queued for Erin would have reached the fake too.
                try await push.eventually("the outbox empty") { try await server.environment.store.pushJobCount() == 0 }
                #expect(push.apns(erinsPhone).isEmpty, "her waiting push was dropped")
            }
        }
    }

    @Test("in the foreground elsewhere (the web page, no device id), which confirms the message: no push")
    func foregroundElsewhere() async throws {
        try await Self.run { push in
            let scene = try await Scene.make(push)
            let page = try await push.server.stream(scene.bob)
            var frames = FrameReader(page)
            _ = try await frames.untilReady()
            try await scene.post("while-on-page")
            let message = try await frames.next()
            #expect(message.message?.id == "while-on-page", "the page gets it live")
            #expect(try await push.server.environment.store.pushJobCount() == 2, "both phones' pushes wait for the page")
            page.confirm(through: try #require(message.message?.seq))
            try await push.eventually("the confirmation drops them") {
                try await push.server.environment.store.pushJobCount() == 0
            }
            page.close()
            _ = try await page.closed()
            try await push.eventually("the page gone") { push.server.environment.hub.presence(of: "bob").isEmpty }
            let before = try await scene.settle("after-page")
            #expect(before.phone1.isEmpty && before.phone2.isEmpty)
        }
    }

    @Test("in the foreground elsewhere, a message nobody confirmed: pushed to every phone once the grace period is over")
    func foregroundUnconfirmed() async throws {
        let clock = WallClock()
        try await Self.run(clock: clock) { push in
            let scene = try await Scene.make(push)
            let page = try await push.server.stream(scene.bob)
            var frames = FrameReader(page)
            _ = try await frames.untilReady()
            try await scene.post("never-confirmed")
            #expect(try await frames.next().message?.id == "never-confirmed", "the page has it, but says nothing")
            #expect(try await push.server.environment.store.pushJobCount() == 2)
            #expect(scene.pushed(scene.phone1).isEmpty && scene.pushed(scene.phone2).isEmpty, "nothing before the grace period ends")

            clock.advance(by: Self.grace)
            push.server.environment.push.wakeSenders()
            try await push.fake.wait("both phones, as if Bob were away") { _ in
                scene.pushed(scene.phone1) == ["never-confirmed"] && scene.pushed(scene.phone2) == ["never-confirmed"]
            }
            try await push.eventually("both counted as sent unconfirmed") { push.server.environment.push.counts.unconfirmed == 2 }
            // A confirmation that comes late changes nothing more.
            page.confirm(through: 1_000_000)
            page.close()
            _ = try await page.closed()
        }
    }

    @Test("looking at the conversation on another device, which confirms the message: no push")
    func looking() async throws {
        try await Self.run { push in
            let scene = try await Scene.make(push)
            let tablet = try await push.server.stream(scene.bob, device: "tablet")
            var frames = FrameReader(tablet)
            _ = try await frames.untilReady()
            tablet.send(#"{"type": "focus", "conversation": "\#(scene.chat)"}"#)
            _ = try await frames.drain(tablet)
            #expect(push.server.environment.hub.isLooking(userID: "bob", at: scene.chat))
            try await scene.post("while-looking")
            tablet.confirm(through: try #require(try await frames.next().message?.seq))
            try await push.eventually("the confirmation drops the pushes") {
                try await push.server.environment.store.pushJobCount() == 0
            }
            tablet.close()
            _ = try await tablet.closed()
            try await push.eventually("the tablet gone") { push.server.environment.hub.presence(of: "bob").isEmpty }
            let before = try await scene.settle("after-looking")
            #expect(before.phone1.isEmpty && before.phone2.isEmpty)
        }
    }

    @Test("a device connected in the background that confirms: no push to it (it shows its own), a push to the other at once")
    func connectedInBackground() async throws {
        try await Self.run { push in
            let scene = try await Scene.make(push)
            let (phone, reader) = try await scene.phoneInTheBackground()
            var frames = reader
            try await scene.post("m-bg")
            try await push.fake.wait("phone 2's push") { _ in scene.pushed(scene.phone2) == ["m-bg"] }
            let message = try await frames.next()
            #expect(message.message?.id == "m-bg", "phone 1 has it on its stream")
            phone.confirm(through: try #require(message.message?.seq))
            try await push.eventually("its confirmation drops phone 1's push") {
                try await push.server.environment.store.pushJobCount() == 0
            }
            phone.close()
            _ = try await phone.closed()
            try await push.eventually("phone 1 gone") { push.server.environment.hub.presence(of: "bob").isEmpty }
            let before = try await scene.settle("after-bg")
            #expect(before.phone1.isEmpty, "no push to the connected device")
            #expect(before.phone2 == ["m-bg"])
        }
    }

    @Test("a device connected in the background that does not confirm (frozen): pushed once the grace period is over, and told so on its stream")
    func connectedButSilent() async throws {
        let clock = WallClock()
        try await Self.run(clock: clock) { push in
            let scene = try await Scene.make(push)
            let (phone, reader) = try await scene.phoneInTheBackground()
            var frames = reader
            try await scene.post("m-silent")
            try await push.fake.wait("phone 2's push, at once") { _ in scene.pushed(scene.phone2) == ["m-silent"] }
            let message = try await frames.next()
            #expect(message.message?.id == "m-silent")
            #expect(scene.pushed(scene.phone1).isEmpty)

            clock.advance(by: Self.grace)
            push.server.environment.push.wakeSenders()
            try await push.fake.wait("phone 1's push: no confirmation came") { _ in scene.pushed(scene.phone1) == ["m-silent"] }
            let told = try await frames.next()
            #expect(told.type == "pushed" && told.seq == message.message?.seq, "the stream says it was pushed")
            #expect(told.pushed?.conversation == scene.chat && told.pushed?.message == "m-silent")
            phone.close()
            _ = try await phone.closed()
        }
    }

    @Test("a confirmation is checked: one from the future covers nothing posted after it, a negative one is refused")
    func confirmationsChecked() async throws {
        let clock = WallClock()
        try await Self.run(clock: clock) { push in
            let scene = try await Scene.make(push)
            let (phone, reader) = try await scene.phoneInTheBackground()
            var frames = reader
            phone.send(#"{"type": "received", "through": -1}"#)
            let refused = try await frames.drain(phone)
            #expect(refused.map(\.code) == ["invalid_request"])
            phone.confirm(through: 1_000_000_000)
            _ = try await frames.drain(phone)
            try await scene.post("after-the-boast")
            #expect(try await frames.next().message?.id == "after-the-boast")
            try await push.fake.wait("phone 2's push") { _ in scene.pushed(scene.phone2) == ["after-the-boast"] }
            // Phone 2's job goes once its push is answered; phone 1's waits for the grace period.
            try await push.eventually("phone 1's push still waits, and only it") {
                try await push.server.environment.store.pushJobCount() == 1
            }

            clock.advance(by: Self.grace)
            push.server.environment.push.wakeSenders()
            try await push.fake.wait("phone 1's push") { _ in scene.pushed(scene.phone1) == ["after-the-boast"] }
            phone.close()
            _ = try await phone.closed()
        }
    }

    @Test("a flood of confirmations is a few writes, of each device's furthest: at most one a second")
    func floodOfConfirmations() async throws {
        try await Self.run { push in
            let scene = try await Scene.make(push)
            let (phone, reader) = try await scene.phoneInTheBackground()
            var frames = reader
            for index in 1...20 { try await scene.post("flood-\(index)") }
            var last: Int64 = 0
            while last == 0 {
                if let message = try await frames.next().message, message.id == "flood-20" { last = message.seq }
            }
            let writesBefore = push.server.environment.push.counts.confirmationWrites
            let started = ContinuousClock.now
            // Two thousand frames, each a little further, as fast as the socket takes them.
            for through in (last - 1_999)...last { phone.confirm(through: max(0, through)) }
            _ = try await frames.drain(phone)
            // The write that dropped them is counted once it returned, a moment after its commit.
            try await push.eventually("the pushes the confirmations covered dropped, and the write counted") {
                try await push.server.environment.store.pushJobCount() == 0
                    && push.server.environment.push.counts.confirmationWrites > writesBefore
            }
            let writes = push.server.environment.push.counts.confirmationWrites - writesBefore
            let bound = 1 + Int((ContinuousClock.now - started) / push.server.environment.push.confirmationWriteInterval)
            #expect(writes >= 1 && writes <= bound, "\(writes) writes for 2,000 confirmations (at most \(bound) in the time taken)")
            phone.close()
            _ = try await phone.closed()
        }
    }

    @Test("muted: no push")
    func muted() async throws {
        try await PushHarness.run { push in
            let scene = try await Scene.make(push)
            let mute = try await push.server.request("PUT", "/v1/conversations/\(scene.chat)/mute", token: scene.bob)
            #expect(mute.status == 204)
            try await scene.post("while-muted")
            #expect(try await push.server.request("DELETE", "/v1/conversations/\(scene.chat)/mute", token: scene.bob).status == 204)
            let before = try await scene.settle("after-unmute")
            #expect(before.phone1.isEmpty && before.phone2.isEmpty)
        }
    }

    @Test("a delay, and a read on any device meanwhile: no push; without a read, the push after the delay")
    func delayCancelledByRead() async throws {
        // Eight seconds: long enough that the read lands within it on a loaded machine too (three were not, once,
        // with CI's two cores shared by the browser tests and a build).
        try await PushHarness.run(configure: { $0.push.delay = .seconds(8) }) { push in
            let scene = try await Scene.make(push)
            try await scene.post("read-in-time")
            let read = try await push.server.request(
                "POST", "/v1/conversations/\(scene.chat)/read", token: scene.bob, body: #"{"upTo": 1000000}"#)
            #expect(read.status == 204)
            let posted = ContinuousClock.now
            try await scene.post("not-read")
            // Both phones' pushes go out at once, each in its own request: wait for the two.
            try await push.fake.wait(timeout: .seconds(30), "the delayed push to both phones") { _ in
                scene.pushed(scene.phone2) == ["not-read"] && scene.pushed(scene.phone1) == ["not-read"]
            }
            #expect(ContinuousClock.now - posted >= .milliseconds(7_900), "it waited for the delay")
            try await push.eventually("the outbox empty") { try await push.server.environment.store.pushJobCount() == 0 }
        }
    }

    @Test("read on one device clears the others: a silent push with the new badge to each device shown the conversation, not the one that read")
    func readClearsOthers() async throws {
        try await PushHarness.run { push in
            let scene = try await Scene.make(push)
            try await scene.post("r1")
            try await scene.post("r2")
            try await push.fake.wait("both phones, twice") { _ in scene.pushed(scene.phone1) == ["r1", "r2"] && scene.pushed(scene.phone2) == ["r1", "r2"] }
            let second = push.apns(scene.phone2).first { $0.messageID == "r2" }
            #expect(second?.json.flatMap { ($0["aps"] as? [String: Any])?["badge"] as? Int } == 2)

            let read = try await push.server.request(
                "POST", "/v1/conversations/\(scene.chat)/read", token: scene.bob, body: #"{"upTo": 1000000, "device": "phone-1"}"#)
            #expect(read.status == 204)
            try await push.fake.wait("the clear") { _ in push.apns(scene.phone2).contains(where: Self.isClear) }
            let clear = try #require(push.apns(scene.phone2).first(where: Self.isClear))
            #expect(clear.headers["apns-push-type"] == "background")
            #expect(clear.headers["apns-priority"] == "5")
            #expect(clear.headers["apns-collapse-id"] == nil)
            let body = try #require(clear.json)
            let aps = try #require(body["aps"] as? [String: Any])
            #expect(aps.keys.sorted() == ["content-available"], "content-available alone in aps, as Apple asks")
            #expect(aps["content-available"] as? Int == 1)
            #expect(body["badge"] as? Int == 0, "the badge, for the app to set")
            #expect(body["type"] as? String == "read")
            #expect(body["conversationId"] as? String == scene.chat)
            // Reading again clears nothing new; phone 1, which read, got no clear.
            _ = try await push.server.request(
                "POST", "/v1/conversations/\(scene.chat)/read", token: scene.bob, body: #"{"upTo": 1000000, "device": "phone-1"}"#)
            let before = try await scene.settle("r3")
            #expect(before.phone1 == ["r1", "r2"])
            #expect(Set(push.apns(scene.phone2).filter(Self.isClear).map { $0.headers["apns-id"] ?? "" }).count == 1,
                    "one clear (a resend would carry the same apns-id)")
        }
    }

    @Test("LiveNotifications closes the stream in the background: the phone is pushed at once; back in the foreground, no banner for what was pushed, a banner for the next")
    func liveNotificationsInTheBackground() async throws {
        try await Self.run { push in
            let scene = try await Scene.make(push)
            var configuration = ClientConfiguration(server: URL(string: "http://127.0.0.1:\(push.server.port)")!, token: scene.bob, transport: .nio())
            configuration.deviceID = "phone-1"
            let client = HeraldClient(configuration: configuration)
            let live = LiveNotifications(client: client, userID: "bob")
            #expect(live.inBackground == .close, "the default")
            let record = ClientRecord()
            try await withBackground([record.watching(client), record.watching(live), { await live.run() }]) {
                try await record.wait { $0.liveCount >= 1 }
                live.setAppState(.background)
                try await push.eventually("the stream closed") { push.server.environment.hub.presence(of: "bob").isEmpty }
                // The grace period is ten minutes here: a push now says the server knew at once that the phone was away.
                try await scene.post("while-away")
                try await push.fake.wait("the phone's push, at once") { _ in scene.pushed(scene.phone1) == ["while-away"] }

                live.setAppState(.foreground)
                try await record.wait { $0.liveCount >= 2 && $0.skips["while-away"] != nil }
                #expect(record.skips["while-away"] == .pushed, "caught up, and told it was pushed")
                #expect(!record.shows.contains("while-away"))
                try await scene.post("on-screen-again")
                try await record.wait { $0.shows.contains("on-screen-again") }
                try await push.eventually("its push dropped once confirmed") {
                    try await push.server.environment.store.pushJobCount() == 0
                }
                #expect(!scene.pushed(scene.phone1).contains("on-screen-again"))
            }
        }
    }

    @Test("HeraldClient: a phone registered through the client and connected with its deviceID confirms what it receives and gets no push; its read clears the user's other phone")
    func swiftClient() async throws {
        try await Self.run { push in
            let scene = try await Scene.make(push)
            var configuration = ClientConfiguration(server: URL(string: "http://127.0.0.1:\(push.server.port)")!, token: scene.bob, transport: .nio())
            configuration.deviceID = "phone-1"
            let client = HeraldClient(configuration: configuration, resumeAfter: 0)
            try await client.api.registerDevice("phone-1", platform: .apns, token: scene.phone1)
            #expect(try await client.api.devices().map(\.id) == ["phone-1", "phone-2"])
            let record = ClientRecord()
            try await withBackground([record.watching(client), { await client.run() }]) {
                try await record.wait { $0.liveCount >= 1 }
                client.setAppState(.background)
                try await push.eventually("the app in the background") {
                    !push.server.environment.hub.hasForegroundConnection(userID: "bob")
                }
                #expect(push.server.environment.hub.connectedDevices(of: "bob") == ["phone-1"])
                try await scene.post("c1")
                try await push.fake.wait("phone 2's push") { _ in scene.pushed(scene.phone2) == ["c1"] }
                try await record.wait { $0.messages.contains { $0.id == "c1" } }
                // The client confirms by itself (a read would drop the push too: it comes after).
                try await push.eventually("phone 1's confirmation drops its push") {
                    try await push.server.environment.store.pushJobCount() == 0
                }
                try await client.api.markRead(scene.chat, upTo: 1_000_000)
                try await push.fake.wait("phone 2's clear") { _ in push.apns(scene.phone2).contains(where: Self.isClear) }
            }
            try await push.eventually("the client gone") { push.server.environment.hub.presence(of: "bob").isEmpty }
            let before = try await scene.settle("c2")
            #expect(before.phone1.isEmpty, "no push to the phone while its stream was open")
            try await client.api.removeDevice("phone-1")
            #expect(try await client.api.devices().map(\.id) == ["phone-2"])
        }
    }
}
