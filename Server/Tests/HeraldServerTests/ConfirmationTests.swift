import Foundation
@testable import HeraldServer
import HeraldTestSupport
import JWTKit
import PostgresNIO
import Testing

/// Suppression needs proof (docs/behaviour.md §1, rule 8), against `herald serve` with a phone in a process of its own
/// (the JavaScript client in Node, ``DeviceProcess``) that a test freezes as iOS suspends an app: a connected device
/// holds back a push only for what it confirmed; a frozen one, one behind a network that went silent, one whose
/// server was killed meanwhile, is pushed once the grace period is over, once.
///
/// Bob's phone is registered for APNs (a local fake) and connected in the background; Alice writes to him. A push
/// that must not come is checked for once the server's outbox is empty: the job that waited for the confirmation is
/// gone, so nothing more can be sent.
@Suite("Confirmations: a connected device holds back only the pushes it confirmed", .timeLimit(.minutes(5)), .childProcesses)
struct ConfirmationTests {
    /// `HERALD_CONFIRM_WITHIN` for these servers, in seconds: how long a running phone has to confirm what it took in
    /// before the server pushes it anyway. A CI run with a build beside it (a load of 6 on two cores) once took longer
    /// than 3 s from a post to the phone's confirmation, and pushed what the test says is not; two CI runs at once, with
    /// a test run beside them (a load of 9), once took longer than 6 s.
    static let grace = 10.0

    /// A server with Bob's phone registered, the chat, and the tokens.
    struct Scene: Sendable {
        let server: ServerProcess
        let fake: FakePushService
        let chat: String
        let alice: String
        let bob: String
        static let phone = PushHarness.apnsToken(0xF0F0)

        /// Starts a server on `database` (and the store's environment) sending APNs to `apns`; a conversation of
        /// Alice and Bob; Bob's phone registered.
        static func start(
            database: String, environment: [String: String?], apns: FakeAPNs, grace: Double = ConfirmationTests.grace
        ) async throws -> Scene {
            let tokens = await TokenAuthority(secret: TestServer.secret)
            let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
            let server = try await ServerProcess(
                database: database, secret: TestServer.secret,
                environment: environment.merging(apns.environment) { $1 }.merging(["HERALD_CONFIRM_WITHIN": "\(grace)"]) { $1 })
            do {
                let chat = try await RemoteServer(port: server.port).createConversation(alice, members: ["bob"])
                try await register(bob, on: server.port)
                return Scene(server: server, fake: apns.fake, chat: chat, alice: alice, bob: bob)
            } catch {
                server.stop()
                throw error
            }
        }

        static func register(_ bob: String, on port: Int) async throws {
            let registered = try await HTTPClient.request(
                port: port, "PUT", "/v1/devices/bob-phone", token: bob, body: #"{"platform": "apns", "token": "\#(phone)"}"#)
            guard registered.status == 200 else { throw TestFailure("registering the phone: \(registered.status) \(registered.text)") }
        }

        /// Bob's phone, connected to `port` (the server's, unless a proxy's).
        func phone(port: Int? = nil, appState: String = "background", open: String? = nil) throws -> DeviceProcess {
            try DeviceProcess(port: port ?? server.port, token: bob, user: "bob", device: "bob-phone", appState: appState, open: open)
        }

        /// Posts `id` as Alice; its seq.
        @discardableResult
        func post(_ id: String, port: Int? = nil) async throws -> Int64 {
            let result = try await HTTPClient.request(
                port: port ?? server.port, "POST", "/v1/conversations/\(chat)/messages", token: alice,
                body: #"{"id": "\#(id)", "text": "message \#(id)"}"#)
            guard result.status == 201 else { throw TestFailure("posting \(id): \(result.status) \(result.text)") }
            return try result.decode(MessageJSON.self).seq
        }

        /// The pushes Bob's phone got of `id`.
        func pushes(of id: String) -> [RecordedRequest] {
            fake.requests(to: "/3/device/\(Self.phone)").filter { $0.messageID == id }
        }
    }

    /// Waits until the server at `port` has no push job left.
    static func outboxEmpty(port: Int) async throws {
        try await waitForOutboxDepth(0, port: port)
    }

    @Test("a background client that confirms is not pushed; frozen (SIGSTOP, socket open), it is pushed once the grace period is over, once; woken, it does not notify that message itself",
          arguments: StoreKind.available)
    func confirmsThenFrozen(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            let folder = try makeTemporaryFolder("herald-confirm")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await FakeAPNs.run { apns in
                let scene = try await Scene.start(
                    database: folder.appendingPathComponent("herald.sqlite").path, environment: database, apns: apns)
                defer { scene.server.stop() }
                let phone = try scene.phone()
                defer { phone.wake() }
                try await phone.live()

                // Running: it notifies the message itself and confirms it, and the push that waited is dropped.
                try await scene.post("while-running")
                try await phone.wait("its own notification") { _ in phone.notified == ["while-running"] }
                try await Self.outboxEmpty(port: scene.server.port)
                #expect(scene.pushes(of: "while-running").isEmpty, "no push for what it confirmed")

                // Frozen: nothing confirms the next message, which is pushed once the grace period is over.
                phone.freeze()
                let posted = ContinuousClock.now
                let seq = try await scene.post("while-frozen")
                try await scene.fake.wait("the push of the message the frozen phone never confirmed") { _ in
                    !scene.pushes(of: "while-frozen").isEmpty
                }
                #expect(ContinuousClock.now - posted >= .seconds(Self.grace), "not before the grace period is over")
                try await Self.outboxEmpty(port: scene.server.port)
                #expect(scene.pushes(of: "while-frozen").count == 1, "pushed once")
                let push = try #require(scene.pushes(of: "while-frozen").first)
                #expect(push.headers["apns-collapse-id"] == "herald-\(seq)", "under the identifier of the app's own notification")
                #expect(try await metric("herald_push_unconfirmed_total", port: scene.server.port) == 1)
                #expect(try await metric("herald_confirmations_total", port: scene.server.port) ?? 0 >= 1)

                // Woken: it reads the message and the server's word that it was pushed, and notifies it no more.
                phone.wake()
                try await phone.wait("the pushed message skipped") { _ in phone.skippedAsPushed == ["while-frozen"] }
                try await scene.post("after-waking")
                try await phone.wait("the next message notified") { _ in phone.notified.contains("after-waking") }
                #expect(phone.notified == ["while-running", "after-waking"], "never the pushed one")
                try await Self.outboxEmpty(port: scene.server.port)
                #expect(scene.pushes(of: "after-waking").isEmpty)
                await scene.server.expectCleanStop()
            }
        }
    }

    @Test("a frozen client in the foreground with the chat open does not hold back the push", arguments: StoreKind.available)
    func frozenInTheForeground(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            let folder = try makeTemporaryFolder("herald-confirm-foreground")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await FakeAPNs.run { apns in
                let scene = try await Scene.start(
                    database: folder.appendingPathComponent("herald.sqlite").path, environment: database, apns: apns)
                defer { scene.server.stop() }
                let phone = try scene.phone(appState: "foreground", open: scene.chat)
                defer { phone.wake() }
                try await phone.live()
                try await scene.post("on-screen")
                try await phone.wait("skipped: on screen") { lines in lines.contains { $0.reason == "active" } }
                try await Self.outboxEmpty(port: scene.server.port)
                #expect(scene.pushes(of: "on-screen").isEmpty, "looking at it, confirmed: no push")

                phone.freeze()
                try await scene.post("frozen-on-screen")
                try await scene.fake.wait("the push: the chat on a frozen screen shows nothing") { _ in
                    scene.pushes(of: "frozen-on-screen").count == 1
                }
                try await Self.outboxEmpty(port: scene.server.port)
                #expect(scene.pushes(of: "frozen-on-screen").count == 1)
                await scene.server.expectCleanStop()
            }
        }
    }

    @Test("a client behind a network that stops forwarding (no FIN, the connection half-open) is pushed once the grace period is over",
          arguments: StoreKind.available)
    func networkGone(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            let folder = try makeTemporaryFolder("herald-confirm-network")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await FakeAPNs.run { apns in
                let scene = try await Scene.start(
                    database: folder.appendingPathComponent("herald.sqlite").path, environment: database, apns: apns)
                defer { scene.server.stop() }
                try await Self.behindAStalledNetwork(scene)
            }
        }
    }

    private static func behindAStalledNetwork(_ scene: Scene) async throws {
        let proxy = try await TCPProxy.start(to: scene.server.port)
        let phone = try scene.phone(port: proxy.port)
        try await phone.live()
        try await scene.post("through-the-network")
        try await phone.wait("its own notification") { _ in phone.notified == ["through-the-network"] }
        try await Self.outboxEmpty(port: scene.server.port)
        #expect(scene.pushes(of: "through-the-network").isEmpty)

        // A lift: nothing goes either way, and nobody closes anything.
        proxy.stall()
        let posted = ContinuousClock.now
        try await scene.post("in-the-lift")
        try await scene.fake.wait("the push of the message that never got through") { _ in
            !scene.pushes(of: "in-the-lift").isEmpty
        }
        #expect(ContinuousClock.now - posted >= .seconds(Self.grace))
        try await Self.outboxEmpty(port: scene.server.port)
        #expect(scene.pushes(of: "in-the-lift").count == 1)
        await proxy.close()
        await scene.server.expectCleanStop()
    }

    @Test("a SIGKILL while a push waits for a confirmation, then a restart: pushed once", arguments: StoreKind.available)
    func killedWhileWaiting(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            let folder = try makeTemporaryFolder("herald-confirm-kill")
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("herald.sqlite").path
            try await FakeAPNs.run { apns in
                // Ten seconds of grace: the kill comes well within it, however busy the machine.
                let scene = try await Scene.start(database: file, environment: database, apns: apns, grace: 10)
                defer { scene.server.stop() }
                let phone = try scene.phone()
                defer { phone.wake() }
                try await phone.live()
                phone.freeze()
                try await scene.post("across-the-kill")
                try await waitForOutboxDepth(1, port: scene.server.port)
                await scene.server.kill()
                #expect(scene.pushes(of: "across-the-kill").isEmpty, "it was waiting when the server died")

                let second = try await ServerProcess(
                    database: file, secret: TestServer.secret,
                    environment: database.merging(apns.environment) { $1 }.merging(["HERALD_CONFIRM_WITHIN": "10"]) { $1 })
                defer { second.stop() }
                try await scene.fake.wait("the push after the restart") { _ in !scene.pushes(of: "across-the-kill").isEmpty }
                try await Self.outboxEmpty(port: second.port)
                #expect(scene.pushes(of: "across-the-kill").count == 1, "pushed once")
                await second.expectCleanStop()
            }
        }
    }

    @Test("two nodes: the phone on one, the post on the other; confirmed, no push; frozen, pushed once",
          .enabled(if: StoreKind.postgresURL != nil))
    func acrossNodes() async throws {
        try await StoreKind.postgres.withServerDatabase { database in
            try await FakeAPNs.run { apns in
                let scene = try await Scene.start(database: "unused.sqlite", environment: database, apns: apns)
                defer { scene.server.stop() }
                let other = try await ServerProcess(
                    database: "unused.sqlite", secret: TestServer.secret,
                    environment: database.merging(apns.environment) { $1 }.merging(["HERALD_CONFIRM_WITHIN": "\(Self.grace)"]) { $1 })
                defer { other.stop() }
                let phone = try scene.phone()
                defer { phone.wake() }
                try await phone.live()
                // The other node decides from the connections the first wrote down.
                let url = try #require(database["HERALD_POSTGRES_URL"] ?? nil)
                try await eventually("the phone's connection written for the other nodes") {
                    try await PostgresServeTests.withClient(url) { client in
                        try await client.query("SELECT 1 FROM presence WHERE user_id = 'bob' AND device_id = 'bob-phone'").collect().count == 1
                    }
                }

                try await scene.post("posted-elsewhere", port: other.port)
                try await phone.wait("its own notification") { _ in phone.notified == ["posted-elsewhere"] }
                try await Self.outboxEmpty(port: scene.server.port)
                #expect(scene.pushes(of: "posted-elsewhere").isEmpty, "its confirmation held the other node's push back")

                phone.freeze()
                try await scene.post("frozen-elsewhere", port: other.port)
                try await scene.fake.wait("the push of what the frozen phone never confirmed") { _ in
                    !scene.pushes(of: "frozen-elsewhere").isEmpty
                }
                try await Self.outboxEmpty(port: other.port)
                #expect(scene.pushes(of: "frozen-elsewhere").count == 1, "pushed once, by one of the nodes")
                phone.wake()
                try await phone.wait("the pushed message skipped, told by the node it is on") { _ in
                    phone.skippedAsPushed == ["frozen-elsewhere"]
                }
                #expect(phone.notified == ["posted-elsewhere"])
                await other.expectCleanStop()
                await scene.server.expectCleanStop()
            }
        }
    }
}
