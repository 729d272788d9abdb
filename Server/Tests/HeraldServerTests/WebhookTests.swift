import Foundation
import HeraldServer
import HeraldService
import HeraldTestSupport
import NIOConcurrencyHelpers
import Testing

/// Webhooks end to end: `herald serve` delivering to a receiver written with Python's standard library
/// (Tests/Backend/webhook_receiver.py), which checks every signature itself.
@Suite("Webhooks to the app's backend", .timeLimit(.minutes(4)), .childProcesses)
struct WebhookTests {
    static let secret = "webhook-secret-0123456789-abcdefghijklmnopqrstuv"

    /// The receiver: a Python process on a free port, logging each delivery; down (500) while its flag file exists.
    final class Receiver: Sendable {
        let child: ChildProcess
        let port: Int
        let log: URL
        let flag: URL

        init(folder: URL) async throws {
            log = folder.appendingPathComponent("deliveries.jsonl")
            flag = folder.appendingPathComponent("down")
            let script = packageRoot.appendingPathComponent("Tests/Backend/webhook_receiver.py")
            child = try ChildProcess(
                URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, WebhookTests.secret, log.path, flag.path],
                output: .pipe)
            let output = child.output!
            let line = await onOwnThread { firstLine(of: output) }
            guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                child.signal(SIGKILL)
                throw TestFailure("the receiver did not say its port: \(line)")
            }
            self.port = port
        }

        var url: String { "http://127.0.0.1:\(port)/herald" }

        /// Whether it answers 500.
        func down(_ down: Bool) {
            if down {
                _ = FileManager.default.createFile(atPath: flag.path, contents: Data())
            } else {
                try? FileManager.default.removeItem(at: flag)
            }
        }

        /// Every delivery so far, in the order they arrived.
        var deliveries: [StreamDelivery] {
            guard let text = try? String(contentsOf: log, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(StreamDelivery.self, from: Data($0.utf8)) }
        }

        func stop() {
            child.signal(SIGKILL)
        }
    }

    /// One delivery as the receiver logged it.
    struct StreamDelivery: Decodable {
        struct Person: Decodable {
            var id: String
        }

        struct Device: Decodable {
            var id: String
            var platform: String
        }

        struct Message: Decodable {
            var id: String
            var text: String?
        }

        struct Data: Decodable {
            var message: Message?
            var sender: Person?
            var members: [Person]?
            var reason: String?
            var title: String?
            var userId: String?
            var upTo: Int64?
            var device: Device?
            var unreadCount: Int?
            var by: String?
        }

        var status: Int
        var id: String?
        var type: String?
        var seq: Int64?
        var conversationId: String?
        var data: Data?
        var headerId: String?
        /// The body's keys, and its `data`'s.
        var keys: [String]?
        var dataKeys: [String]?
    }

    @Test("a receiver down with 3,000 events queued in 30 conversations: the idle server waits for the next retry it can make, it does not spin (processor time and memory over 15 s, printed and bounded)")
    func idleWhileDown() async throws {
        let folder = try makeTemporaryFolder("herald-webhooks-idle")
        defer { try? FileManager.default.removeItem(at: folder) }
        let receiver = try await Receiver(folder: folder)
        defer { receiver.stop() }
        receiver.down(true)
        let path = folder.appendingPathComponent("herald.sqlite").path
        let server = try await ServerProcess(database: path, secret: TestServer.secret, environment: [
            "HERALD_WEBHOOK_URL": receiver.url, "HERALD_WEBHOOK_SECRET": Self.secret, "HERALD_WEBHOOK_ALLOW_PRIVATE": "1",
            "HERALD_SERVICE_KEY": ServiceTests.key,
        ])
        defer { server.stop() }
        let key = ServiceTests.key
        #expect(try await HTTPClient.request(port: server.port, "PUT", "/v1/service/users/alice", token: key, body: #"{"name": "Alice"}"#).status == 200)
        for chat in 0..<30 {
            let body = #"{"id": "c\#(chat)", "kind": "group", "title": "Chat \#(chat)", "members": ["alice"], "owners": ["alice"]}"#
            #expect(try await HTTPClient.request(port: server.port, "POST", "/v1/service/conversations", token: key, body: body).status == 201)
        }
        // 100 messages in each, posted eight at a time.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in stride(from: worker, to: 3_000, by: 8) {
                        let answer = try await HTTPClient.request(
                            port: server.port, "POST", "/v1/service/conversations/c\(index % 30)/messages", token: key,
                            body: #"{"id": "m\#(index)", "sender": "alice", "text": "message \#(index)"}"#)
                        guard answer.status == 201 else { throw TestFailure("post \(index): \(answer.status) \(answer.text)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await eventually("3,000 events queued") { try await Self.queued(in: path) >= 3_000 }
        // Idle now but for the retries: the first of each conversation fails, the rest wait behind it.
        let (cpu, memory) = (try #require(server.processorSeconds), try #require(server.residentBytes))
        try await Task.sleep(for: .seconds(15))
        let used = try #require(server.processorSeconds) - cpu
        let grown = (try #require(server.residentBytes) - memory) >> 20
        print("webhook receiver down, 3,000 events queued: \(String(format: "%.2f", used)) s of processor time in 15 s, memory grew \(grown) MiB")
        #expect(used < 1.5, "the idle server used \(used) s of processor time in 15 s")
        #expect(grown < 32, "its memory grew by \(grown) MiB")
        #expect(try await Self.queued(in: path) >= 3_000, "nothing was given up")
        await server.expectCleanStop()
    }

    /// The events waiting in the outbox of the SQLite file at `path` (read beside the server, as any reader may).
    static func queued(in path: String) async throws -> Int {
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-c", "import sqlite3, sys; print(sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).execute('SELECT count(*) FROM webhook_jobs').fetchone()[0])", path])
        return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    @Test("a Python receiver verifies every signature and gets every event type at least once, in seq order per conversation, across a receiver answering 500 and a SIGKILL of the server",
          arguments: StoreKind.available)
    func deliveries(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            let folder = try makeTemporaryFolder("herald-webhooks")
            defer { try? FileManager.default.removeItem(at: folder) }
            let receiver = try await Receiver(folder: folder)
            defer { receiver.stop() }
            try await FakeAPNs.run { apns in
                let deadToken = PushHarness.apnsToken(0xDEAD)
                apns.fake.respond { request in
                    request.path.hasSuffix(deadToken) ? FakeAnswer(status: 410, body: #"{"reason": "Unregistered"}"#) : nil
                }
                let environment = database.merging(apns.environment) { $1 }.merging([
                    "HERALD_WEBHOOK_URL": receiver.url, "HERALD_WEBHOOK_SECRET": Self.secret,
                    "HERALD_WEBHOOK_ALLOW_PRIVATE": "1", "HERALD_UNREAD_REMINDER": "1",
                    "HERALD_SERVICE_KEY": ServiceTests.key,
                    // On PostgreSQL a delivery in flight at the SIGKILL stays the dead node's until its lease runs
                    // out (another node may be sending it): 15 s here, so the wait below covers it; 120 s by default.
                    "HERALD_PUSH_LEASE": "15",
                ]) { $1 }
                let path = folder.appendingPathComponent("herald.sqlite").path
                try await deliveries(receiver: receiver, environment: environment, database: path, deadToken: deadToken)
            }
        }
    }

    private func deliveries(receiver: Receiver, environment: [String: String?], database: String, deadToken: String) async throws {
        let authority = await TokenAuthority(secret: TestServer.secret)
        var tokens: [String: String] = [:]
        for id in ["alice", "bob", "carol", "dave"] {
            tokens[id] = try await authority.token(userID: id, name: id.capitalized)
        }
        // The backend is down from the start.
        receiver.down(true)
        var server = try await ServerProcess(database: database, secret: TestServer.secret, environment: environment)
        defer { server.stop() }
        func service(_ method: String, _ path: String, _ body: String? = nil) async throws -> HTTPResult {
            try await HTTPClient.request(port: server.port, method, "/v1/service" + path, token: ServiceTests.key, body: body)
        }
        func user(_ id: String, _ method: String, _ path: String, _ body: String? = nil) async throws -> HTTPResult {
            try await HTTPClient.request(port: server.port, method, path, token: tokens[id], body: body)
        }
        for id in ["alice", "bob", "carol", "dave"] {
            #expect(try await service("PUT", "/users/\(id)", #"{"name": "\#(id.capitalized)"}"#).status == 200)
        }
        let created = try await service(
            "POST", "/conversations", #"{"id": "g1", "kind": "group", "title": "Team", "members": ["alice", "bob", "carol"], "owners": ["alice"]}"#)
        #expect(created.status == 201)
        // Bob's phone has a dead token: the first push to it removes it.
        #expect(try await user("bob", "PUT", "/v1/devices/bobs-phone", #"{"platform": "apns", "token": "\#(deadToken)"}"#).status == 200)
        #expect(try await user("alice", "POST", "/v1/conversations/g1/messages", #"{"id": "hello", "text": "Hello team"}"#).status == 201)
        #expect(try await service("POST", "/conversations/g1/messages", #"{"id": "note", "text": "Order shipped"}"#).status == 201)
        #expect(try await service("PATCH", "/conversations/g1", #"{"title": "Team 42"}"#).status == 200)
        #expect(try await service("POST", "/conversations/g1/members", #"{"members": ["dave"]}"#).status == 200)

        // Deliveries fail while the backend is down; the server is killed with events waiting, and started again.
        try await eventually("deliveries tried and refused with 500", detail: { "\(receiver.deliveries.count)" }) {
            receiver.deliveries.filter { $0.status == 500 }.count >= 2
        }
        await server.kill()
        server = try await ServerProcess(database: database, secret: TestServer.secret, environment: environment)
        receiver.down(false)

        #expect(try await user("carol", "DELETE", "/v1/conversations/g1/members/carol").status == 204)
        #expect(try await service("DELETE", "/conversations/g1/members/dave").status == 204)
        #expect(try await user("alice", "PATCH", "/v1/conversations/g1/messages/hello", #"{"text": "Hello team!"}"#).status == 200)
        #expect(try await user("alice", "POST", "/v1/conversations/g1/messages", #"{"id": "oops", "text": "wrong chat"}"#).status == 201)
        #expect(try await user("alice", "DELETE", "/v1/conversations/g1/messages/oops").status == 200)
        #expect(try await user("alice", "POST", "/v1/conversations/g1/read", #"{"upTo": 1000000}"#).status == 204)
        #expect(try await service("POST", "/conversations", #"{"id": "g2", "kind": "group", "members": ["alice"]}"#).status == 201)
        #expect(try await service("DELETE", "/conversations/g2").status == 204)

        func delivered() -> [StreamDelivery] { receiver.deliveries.filter { (200..<300).contains($0.status) } }
        func has(_ type: String, _ matches: (StreamDelivery) -> Bool = { _ in true }) -> Bool {
            delivered().contains { $0.type == type && matches($0) }
        }
        let expected: [(String, (StreamDelivery) -> Bool)] = [
            ("message.new", { $0.data?.message?.id == "hello" && $0.data?.sender?.id == "alice" }),
            ("message.new", { $0.data?.message?.id == "note" && $0.data?.sender?.id == "" }),
            ("conversation.renamed", { $0.data?.title == "Team 42" }),
            ("message.edited", { $0.data?.message?.id == "hello" && $0.data?.message?.text == "Hello team!" && $0.data?.by == "alice" }),
            ("message.deleted", { $0.data?.message?.id == "oops" && $0.data?.message?.text == nil && $0.data?.by == "alice" }),
            ("member.added", { $0.data?.members?.map(\.id) == ["dave"] }),
            ("member.removed", { $0.data?.reason == "left" && $0.data?.members?.map(\.id) == ["carol"] }),
            ("member.removed", { $0.data?.reason == "removed" && $0.data?.members?.map(\.id) == ["dave"] }),
            ("read", { $0.data?.userId == "alice" && $0.conversationId == "g1" }),
            ("device.removed", { $0.data?.userId == "bob" && $0.data?.device?.id == "bobs-phone" && $0.conversationId == nil }),
            ("unread.reminder", { $0.conversationId == "g1" && ["bob", "carol"].contains($0.data?.userId ?? "") }),
            ("conversation.deleted", { $0.conversationId == "g2" }),
        ]
        try await eventually("every event delivered", within: .seconds(90), detail: {
            expected.filter { !has($0.0, $0.1) }.map(\.0).joined(separator: ", ")
        }) {
            expected.allSatisfy { has($0.0, $0.1) }
        }
        #expect(Set(delivered().compactMap(\.type)) == Set(WebhookEventType.allCases.map(\.rawValue)))
        // Each body is as /openapi.yaml describes its type: the envelope's fields, and its data's (every required
        // one there, nothing undescribed).
        let document = try OpenAPIDocument()
        for delivery in delivered() {
            let type = delivery.type ?? ""
            #expect(Set(delivery.keys ?? []) == document.required("WebhookEvent"), "\(type): \(delivery.keys ?? [])")
            let schema = OpenAPIDocument.webhookDataSchema(type)
            let keys = Set(delivery.dataKeys ?? [])
            #expect(document.required(schema).isSubset(of: keys) && keys.isSubset(of: document.properties(schema)), "\(type): \(keys) against \(schema)")
        }
        #expect(receiver.deliveries.allSatisfy { $0.status != 401 }, "every signature verified")
        #expect(delivered().allSatisfy { $0.headerId == $0.id })
        // In seq order per conversation (a delivery repeated after the SIGKILL repeats its seq, never goes back).
        var last: [String: Int64] = [:]
        for delivery in delivered() {
            guard let conversation = delivery.conversationId, let seq = delivery.seq else { continue }
            #expect(seq >= last[conversation, default: 0], "\(delivery.type ?? "") at \(seq) after \(last[conversation] ?? 0)")
            last[conversation] = seq
        }
        await server.expectCleanStop()
    }

    @Test("unread.reminder: only for a member who had no device connected meanwhile, is still a member, has not muted nor read the conversation")
    func reminders() async throws {
        let events = NIOLockedValueBox<[WebhookEvent]>([])
        try await HeraldServiceTests.withBackend(handle: { body, headers in
            guard let event = try? HeraldService(server: URL(string: "http://127.0.0.1")!, key: "", webhookSecret: Self.secret)
                .verifyWebhook(body: body, headers: headers)
            else { return .unauthorized }
            events.withLockedValue { $0.append(event) }
            return .noContent
        }) { backend in
            try await TestServer.run(configure: { configuration in
                configuration.webhooks.url = "http://127.0.0.1:\(backend)/herald"
                configuration.webhooks.secret = Self.secret
                configuration.webhooks.allowPrivate = true
                configuration.webhooks.events = [.unreadReminder]
                // Long enough that the connect and the read below land before it, however loaded the machine.
                configuration.webhooks.reminder = .seconds(10)
            }) { server in
                let alice = try await server.token("alice")
                var tokens: [String: String] = [:]
                for id in ["bob", "carol", "dave", "erin"] { tokens[id] = try await server.token(id) }
                let group = try await server.createConversation(alice, kind: "group", title: "Team", members: Array(tokens.keys))
                #expect(try await server.request("PUT", "/v1/conversations/\(group)/mute", token: tokens["dave"]).status == 204)
                let message = try await server.post(alice, to: group, id: "hello", text: "Anyone?")
                // Before the reminders fall due: Bob's phone connects, Dave muted it, Erin reads it. Carol does nothing.
                let socket = try await server.stream(tokens["bob"]!)
                var reader = FrameReader(socket)
                _ = try await reader.untilReady()
                socket.close()
                #expect(try await server.request(
                    "POST", "/v1/conversations/\(group)/read", token: tokens["erin"], body: #"{"upTo": \#(message.seq)}"#).status == 204)
                try await eventually("Carol's reminder", within: .seconds(40)) { !events.withLockedValue { $0 }.isEmpty }
                // Past the others' due time by a margin: none of theirs came.
                try await Task.sleep(for: .seconds(1))
                let reminded = events.withLockedValue { $0 }
                #expect(reminded.map(\.data.userId) == ["carol"])
                #expect(reminded.first?.data.firstUnreadSeq == message.seq && reminded.first?.data.unreadCount == 1)
                #expect(reminded.first?.conversationId == group && reminded.first?.type == "unread.reminder")
            }
        }
    }

    @Test("a webhook URL is refused on a private address unless allowed, and without a secret of 32 bytes; the event filter is checked")
    func settings() throws {
        let secret = ["HERALD_WEBHOOK_SECRET": Self.secret]
        for url in ["http://127.0.0.1:9000/hook", "http://localhost/hook", "http://10.1.2.3/hook", "http://[::1]/hook"] {
            #expect(throws: ConfigurationError.self, "\(url)") {
                _ = try ServerConfiguration.fromEnvironment(secret.merging(["HERALD_WEBHOOK_URL": url]) { $1 })
            }
        }
        let allowed = try ServerConfiguration.fromEnvironment(
            secret.merging(["HERALD_WEBHOOK_URL": "http://127.0.0.1:9000/hook", "HERALD_WEBHOOK_ALLOW_PRIVATE": "1"]) { $1 })
        #expect(allowed.webhooks.isOn)
        let public_ = try ServerConfiguration.fromEnvironment(
            secret.merging(["HERALD_WEBHOOK_URL": "https://backend.example.com/herald", "HERALD_WEBHOOK_EVENTS": "message.new, read"]) { $1 })
        #expect(public_.webhooks.events == [.messageNew, .read])
        #expect(!public_.webhooks.wants(.unreadReminder), "reminders are off unless HERALD_UNREAD_REMINDER is set")
        #expect(throws: ConfigurationError.self) {
            _ = try ServerConfiguration.fromEnvironment(["HERALD_WEBHOOK_URL": "https://backend.example.com/herald"])
        }
        #expect(throws: ConfigurationError.self) {
            _ = try ServerConfiguration.fromEnvironment(
                ["HERALD_WEBHOOK_URL": "https://backend.example.com/herald", "HERALD_WEBHOOK_SECRET": "short"])
        }
        #expect(throws: ConfigurationError.self) {
            _ = try ServerConfiguration.fromEnvironment(secret.merging(
                ["HERALD_WEBHOOK_URL": "https://backend.example.com/herald", "HERALD_WEBHOOK_EVENTS": "message.new,nope"]) { $1 })
        }
    }

    @Test("a signature verifies under the secret (or one of several), and not with another secret, another body, or too old")
    func signatures() throws {
        let body = Data(#"{"id":"1","type":"read"}"#.utf8)
        let now = Date()
        let header = WebhookSignature.sign(body: body, secret: Self.secret, time: now)
        #expect(header.hasPrefix("t=\(Int(now.timeIntervalSince1970)),v1="))
        try WebhookSignature.verify(body: body, header: header, secrets: [Self.secret], now: now)
        try WebhookSignature.verify(body: body, header: header, secrets: ["old-secret-0123456789-0123456789-0", Self.secret], now: now)
        #expect(throws: WebhookSignature.Failure.mismatch) {
            try WebhookSignature.verify(body: body, header: header, secrets: ["another-secret-0123456789-0123456789"], now: now)
        }
        #expect(throws: WebhookSignature.Failure.mismatch) {
            try WebhookSignature.verify(body: body + Data(" ".utf8), header: header, secrets: [Self.secret], now: now)
        }
        #expect(throws: WebhookSignature.Failure.stale) {
            try WebhookSignature.verify(body: body, header: header, secrets: [Self.secret], now: now.addingTimeInterval(600))
        }
        #expect(throws: WebhookSignature.Failure.malformed) {
            try WebhookSignature.verify(body: body, header: "v1=abc", secrets: [Self.secret], now: now)
        }
    }
}
