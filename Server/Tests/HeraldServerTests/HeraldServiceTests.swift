import Foundation
import HeraldCore
import HeraldServer
import HeraldService
import HeraldTestSupport
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import Testing

/// `HeraldService`, the Swift client of the service API, against the real server; and a Swift backend (a
/// Hummingbird app) checking the webhooks it gets with ``HeraldService/verifyWebhook(body:headers:)``.
@Suite("HeraldService, the Swift backend's client", .timeLimit(.minutes(3)))
struct HeraldServiceTests {
    @Test("every call, retries answered as such, refusals as HeraldAPIError with their codes")
    func calls() async throws {
        try await ServiceTests.withServer(.sqlite) { server in
            let herald = HeraldService(server: URL(string: "http://127.0.0.1:\(server.port)")!, key: ServiceTests.key)
            for (id, name) in [("alice", "Alice"), ("bob", "Bob"), ("carol", "Carol")] {
                #expect(try await herald.putUser(id, name: name).name == name)
            }
            #expect(try await herald.user("bob").name == "Bob")
            let created = try await herald.createConversation(
                id: "team", kind: .group, title: "Team", members: ["alice", "bob"], owners: ["alice"])
            #expect(created.created && created.conversation.owners == ["alice"])
            #expect(try await herald.createConversation(
                id: "team", kind: .group, title: "Team", members: ["alice", "bob"], owners: ["alice"]).created == false)
            #expect(try await herald.addMembers(["carol"], to: "team").members == ["alice", "bob", "carol"])
            #expect(try await herald.rename("team", to: "Team 2").title == "Team 2")
            #expect(try await herald.setOwner("bob", in: "team").owners == ["alice", "bob"])
            #expect(try await herald.setOwner("bob", false, in: "team").owners == ["alice"])
            try await herald.removeMember("carol", from: "team")
            #expect(try await herald.conversation("team").members == ["alice", "bob"])
            let posted = try await herald.post(to: "team", id: "m1", sender: "bob", text: "Hi")
            #expect(posted.created && posted.message.senderId == "bob")
            #expect(try await herald.post(to: "team", id: "m1", sender: "bob", text: "Hi").created == false)
            let system = try await herald.post(to: "team", text: "Shipped", silent: true)
            #expect(system.message.senderId == "" && system.message.silent)
            let history = try await herald.messages(in: "team", limit: 200)
            #expect(history.suffix(2).map(\.id) == ["m1", system.message.id])
            #expect(try await herald.messages(in: "team", after: posted.message.seq).map(\.id) == [system.message.id])

            let refused = await Self.refusal { _ = try await herald.createConversation(id: "team", kind: .direct, members: ["alice", "bob"]) }
            #expect(refused?.code == "conversation_exists" && refused?.status == 409)
            try await herald.eraseUser("carol")
            #expect(await Self.refusal { try await herald.putUser("carol", name: "Carol") }?.code == "user_erased")
            #expect(await Self.refusal { _ = try await herald.user("carol") }?.code == "user_not_found")
            try await herald.deleteConversation("team")
            #expect(await Self.refusal { _ = try await herald.conversation("team") }?.code == "conversation_not_found")
            let wrongKey = HeraldService(server: herald.server, key: ServiceTests.otherKey)
            #expect(await Self.refusal { _ = try await wrongKey.user("alice") }?.code == "invalid_service_key")
        }
    }

    @Test("a Swift backend verifies the webhooks it gets, and refuses one signed with another secret")
    func verifiesWebhooks() async throws {
        let secret = WebhookTests.secret
        let events = NIOLockedValueBox<[WebhookEvent]>([])
        let refusals = NIOLockedValueBox(0)
        let herald = NIOLockedValueBox<HeraldService?>(nil)
        try await Self.withBackend(
            handle: { body, headers in
                guard let client = herald.withLockedValue({ $0 }) else { return .serviceUnavailable }
                do {
                    let event = try client.verifyWebhook(body: body, headers: headers)
                    events.withLockedValue { $0.append(event) }
                    return .noContent
                } catch {
                    refusals.withLockedValue { $0 += 1 }
                    return .unauthorized
                }
            }
        ) { backend in
            try await ServiceTests.withServer(.sqlite, configure: { configuration in
                configuration.webhooks.url = "http://127.0.0.1:\(backend)/herald"
                configuration.webhooks.secret = secret
                configuration.webhooks.allowPrivate = true
            }) { server in
                herald.withLockedValue {
                    $0 = HeraldService(server: URL(string: "http://127.0.0.1:\(server.port)")!, key: ServiceTests.key, webhookSecret: secret)
                }
                let client = try #require(herald.withLockedValue { $0 })
                try await client.putUser("alice", name: "Alice")
                _ = try await client.createConversation(id: "c", kind: .group, members: ["alice"], owners: ["alice"])
                let posted = try await client.post(to: "c", sender: "alice", text: "Hello")
                try await eventually("the message.new webhook verified") {
                    events.withLockedValue { $0 }.contains { $0.eventType == .messageNew }
                }
                let event = try #require(events.withLockedValue { $0 }.first { $0.eventType == .messageNew })
                #expect(event.conversationId == "c" && event.seq == posted.message.seq)
                #expect(event.data.message?.text == "Hello" && event.data.sender?.name == "Alice")
                #expect(event.data.conversation?.id == "c")
                #expect(refusals.withLockedValue { $0 } == 0)

                // Signed with another secret: refused, and Herald tries it again.
                let impostor = HeraldService(server: client.server, key: ServiceTests.key, webhookSecret: "another-secret-0123456789-0123456789")
                herald.withLockedValue { $0 = impostor }
                _ = try await client.post(to: "c", sender: "alice", text: "Again")
                try await eventually("a delivery refused") { refusals.withLockedValue { $0 } > 0 }
                herald.withLockedValue { $0 = client }
                try await eventually("the refused delivery tried again and verified", within: .seconds(20)) {
                    events.withLockedValue { $0 }.contains { $0.data.message?.text == "Again" }
                }
            }
        }
    }

    /// The ``HeraldAPIError`` `body` throws, or nil (recorded as an issue).
    static func refusal(_ body: () async throws -> Void) async -> HeraldAPIError? {
        await APIClientTests.refusal(body)
    }

    /// A Hummingbird app standing for the app's backend, on a free port, answering `POST /herald` with `handle`.
    static func withBackend(
        handle: @escaping @Sendable (Data, [String: String]) -> HTTPResponse.Status,
        _ body: (Int) async throws -> Void
    ) async throws {
        try await withBackend(answer: { (handle($0, $1), "") }, body)
    }

    /// The same, answering each delivery (its body and headers, by lower-cased name) with a status and a body.
    static func withBackend(
        answer: @escaping @Sendable (Data, [String: String]) -> (HTTPResponse.Status, String),
        _ body: (Int) async throws -> Void
    ) async throws {
        let router = Router()
        router.post("herald") { request, context -> Response in
            let buffer = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let (status, text) = answer(Data(buffer.readableBytesView), headers)
            return Response(status: status, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        var logger = Logger(label: "backend")
        logger.logLevel = .critical
        let (ports, sink) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { sink.yield($0.localAddress?.port ?? 0) }, logger: logger)
        try await TestServer.withRunning(app, ports: ports, logger: logger, body)
    }
}
