import Foundation
import HeraldCore
import HeraldProtocol
@testable import HeraldServer
import HeraldTestSupport
import HTTPTypes
import Hummingbird
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// What an outside attack on the backend API, webhooks, sign-in and groups found (round three), each closed at its
/// root and held here through the public API or the real process.
@Suite("Hardening, round three: ids, paths, the system's name, issuers, outbound HTTP", .timeLimit(.minutes(3)))
struct HardeningTests {
    // MARK: Ids

    @Test("an id that starts with U+FEFF, in a path, a body or a token, on every route that takes an id, never reaches the id without it")
    func byteOrderMarks() async throws {
        try await ServiceTests.withServer(.sqlite) { server in
            let key = ServiceTests.key
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            _ = try await server.token("carol")
            #expect(try await server.request("PUT", "/v1/service/users/dave", token: key, body: #"{"name": "Dave"}"#).status == 200)
            let made = try await server.request(
                "POST", "/v1/service/conversations", token: key,
                body: #"{"id": "order-7", "kind": "group", "title": "Order 7", "members": ["alice", "bob", "carol"], "owners": ["alice"]}"#)
            #expect(made.status == 201, "\(made.text)")
            let posted = try await server.request(
                "POST", "/v1/conversations/order-7/messages", token: alice, body: #"{"id": "m1", "text": "hello"}"#)
            #expect(posted.status == 201)
            #expect(try await server.request("PUT", "/v1/devices/phone", token: bob, body: #"{"platform": "fcm", "token": "t-1"}"#).status == 200)

            let bom = "%EF%BB%BF"
            // Every route that names an id in its path, with the id behind a byte-order mark.
            let routes: [(String, String, String?, String)] = [
                ("DELETE", "/v1/service/users/\(bom)dave", nil, key),
                ("PUT", "/v1/service/users/\(bom)dave", #"{"name": "Mallory"}"#, key),
                ("GET", "/v1/service/users/\(bom)dave", nil, key),
                ("PATCH", "/v1/service/conversations/\(bom)order-7", #"{"title": "Taken"}"#, key),
                ("DELETE", "/v1/service/conversations/\(bom)order-7", nil, key),
                ("POST", "/v1/service/conversations/\(bom)order-7/messages", #"{"text": "as the system"}"#, key),
                ("POST", "/v1/service/conversations/\(bom)order-7/members", #"{"members": ["dave"]}"#, key),
                ("DELETE", "/v1/service/conversations/order-7/members/\(bom)carol", nil, key),
                ("PUT", "/v1/service/conversations/order-7/owners/\(bom)bob", nil, key),
                ("DELETE", "/v1/service/conversations/order-7/owners/\(bom)alice", nil, key),
                ("GET", "/v1/service/conversations/\(bom)order-7/messages", nil, key),
                ("PATCH", "/v1/conversations/\(bom)order-7", #"{"title": "Taken"}"#, alice),
                ("DELETE", "/v1/conversations/\(bom)order-7", nil, alice),
                ("POST", "/v1/conversations/\(bom)order-7/messages", #"{"text": "hi"}"#, alice),
                ("DELETE", "/v1/conversations/order-7/members/\(bom)carol", nil, alice),
                ("PUT", "/v1/conversations/order-7/owners/\(bom)bob", nil, alice),
                ("POST", "/v1/conversations/\(bom)order-7/read", #"{"upTo": 1}"#, alice),
                ("PUT", "/v1/conversations/\(bom)order-7/mute", nil, alice),
                ("PUT", "/v1/conversations/\(bom)order-7/notifications", #"{"level": "nothing"}"#, alice),
                ("DELETE", "/v1/devices/\(bom)phone", nil, bob),
                ("PUT", "/v1/devices/\(bom)phone", #"{"platform": "fcm", "token": "t-2"}"#, bob),
            ]
            for (method, path, body, credential) in routes {
                let answer = try await server.request(method, path, token: credential, body: body)
                #expect(answer.status == 400 && answer.errorCode == "invalid_request", "\(method) \(path): \(answer.status) \(answer.text)")
            }
            // In bodies, and as a token's sub.
            let added = try await server.request(
                "POST", "/v1/conversations/order-7/members", token: alice, body: #"{"members": ["\uFEFFdave"]}"#)
            #expect(added.status == 400 && added.errorCode == "invalid_request", "\(added.text)")
            let sent = try await server.request("POST", "/v1/conversations/order-7/messages", token: alice, body: #"{"id": "\uFEFFm1", "text": "x"}"#)
            #expect(sent.status == 400)
            let impostor = try await server.environment.tokens.token(userID: "\u{FEFF}bob", name: "Bob")
            let asImpostor = try await server.request("GET", "/v1/conversations", token: impostor)
            #expect(asImpostor.status == 401 && asImpostor.errorCode == "invalid_token", "\(asImpostor.text)")
            // In a query: the stream's device.
            let stream = try await server.request("GET", "/v1/stream?device=\(bom)phone", token: bob)
            #expect(stream.status == 400, "\(stream.text)")

            // Nothing changed: Dave is there, the group has its title, members, owner and message; Bob's device.
            #expect(try await server.request("GET", "/v1/service/users/dave", token: key).text.contains(#""name":"Dave""#))
            let group = try await server.request("GET", "/v1/service/conversations/order-7", token: key).text
            #expect(group.contains(#""title":"Order 7""#) && group.contains(#""members":["alice","bob","carol"]"#) && group.contains(#""owners":["alice"]"#), "\(group)")
            let history = try await server.request("GET", "/v1/conversations/order-7/messages", token: alice)
            #expect(try history.decode(MessageListJSON.self).messages.map(\.id) == ["m1"])
            #expect(try await server.environment.store.devices(of: "bob").map(\.id) == ["phone"])
        }
    }

    @Test("ids are one rule for tokens, bodies and paths: no dot segments, no invisible or bidirectional-control characters")
    func idRule() async throws {
        for bad in [".", "..", "\u{200B}bob", "bob\u{200D}", "\u{FEFF}", "bob\u{202E}", "\u{2066}x\u{2069}", "x\u{E0041}", "a\u{00AD}b", "\u{3164}", "a\u{FE0F}"] {
            #expect(HeraldID.problem(with: bad) != nil, "\(bad.unicodeScalars.map { String($0.value, radix: 16) })")
        }
        for good in ["bob", "Zoë", "中文", "a.b", "...", "user@example.com", "a b", "firebase:uid-1"] {
            #expect(HeraldID.problem(with: good) == nil, "\(good)")
        }
        try await ServiceTests.withServer(.sqlite) { server in
            for id in [".", "..", "order\u{200B}7", "\u{202E}7-redro"] {
                let body = #"{"id": "\#(id)", "kind": "group", "title": "x", "members": []}"#
                let made = try await server.request("POST", "/v1/service/conversations", token: ServiceTests.key, body: body)
                #expect(made.status == 400 && made.errorCode == "invalid_request", "\(id): \(made.text)")
            }
            let dotted = try await server.environment.tokens.token(userID: "..", name: "Dots")
            #expect(try await server.request("GET", "/v1/conversations", token: dotted).status == 401)
        }
    }

    // MARK: Paths

    @Test("each resource has one path: a trailing slash, an empty or a dot segment is 404 (so /metrics/ is no alias of /metrics); a stream redirect can never name another host")
    func onePathEach() async throws {
        try await TestServer.run { server in
            #expect(try await server.request("GET", "/metrics").status == 200)
            for path in ["/metrics/", "//metrics", "/./metrics", "/x/../metrics", "/%2E%2E/metrics", "/v1/conversations/", "/health/"] {
                let answer = try await server.request("GET", path)
                #expect(answer.status == 404 && answer.errorCode == "not_found", "\(path): \(answer.status) \(answer.text)")
            }
            #expect(try await server.request("GET", "/health").status == 200)
            for path in ["/health%00", "/%FF"] {
                #expect(try await server.request("GET", path).status == 400, "\(path)")
            }
            // A second request on a kept-alive connection asking to upgrade is redirected by the WebSocket library to
            // its own target: a target like `//v1/stream` is refused before, so the redirect never says `//host`.
            let alice = try await server.token("alice")
            let connection = try await RawConnection(port: server.port)
            try await connection.send("GET /health HTTP/1.1\r\nHost: herald\r\n\r\n")
            while !connection.text.contains(#""status":"ok""#), try await connection.read() {}
            connection.consume(connection.received.count)
            try await connection.send(
                "GET //v1/stream?token=\(alice) HTTP/1.1\r\nHost: herald\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                    + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            let answer = String(decoding: try await connection.readToEnd(), as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 404"), "\(answer)")
            #expect(!answer.lowercased().contains("location:"), "\(answer)")
            await connection.close()
        }
    }

    // MARK: The system's name

    @Test("a person named Admin cannot pass for the app's backend: their name reads `Admin (member)`; the backend's messages are worded apart")
    func systemNameIsUnmistakable() throws {
        let formatter = ContentFormatter.standard
        let group = Conversation(id: "order-7", kind: .group, title: "Order 7")
        for name in ["Admin", "ADMIN", " admin ", "Ａｄｍｉｎ", "Ad-min", "A.D.M.I.N."] {
            #expect(formatter.name(of: Person(id: "mallory", displayName: name)).hasSuffix("(member)"), "\(name)")
        }
        #expect(formatter.name(of: Person(id: "anna", displayName: "Administrator")) == "Administrator")
        #expect(formatter.name(of: Person(id: "", displayName: "")) == "Admin")
        let fromPerson = IncomingMessage(
            message: Message(id: "m1", conversationID: "order-7", senderID: "mallory", text: "Pay here", sentAt: Date(), seq: 1),
            conversation: group, sender: Person(id: "mallory", displayName: "Admin"))
        let fromSystem = IncomingMessage(
            message: Message(id: "m2", conversationID: "order-7", senderID: "", text: "Pay here", sentAt: Date(), seq: 2),
            conversation: group, sender: Person(id: "", displayName: ""))
        let person = formatter.notification(for: fromPerson), system = formatter.notification(for: fromSystem)
        #expect(person.title == "New message in Order 7" && person.body == "Admin (member): Pay here")
        #expect(system.title == "Order 7" && system.body == "Pay here")
        #expect(formatter.banner(for: fromPerson).title == "Admin (member)")
        #expect(formatter.banner(for: fromSystem).title == "Admin")
        let direct = IncomingMessage(
            message: Message(id: "m3", conversationID: "d", senderID: "", text: "Your order shipped", sentAt: Date(), seq: 3),
            conversation: Conversation(id: "d", kind: .direct, title: nil), sender: Person(id: "", displayName: ""))
        #expect(formatter.notification(for: direct).title == "Admin")
    }

    // MARK: Settings

    @Test("a time zone one engine takes and the other refuses (tzdata's Factory) is refused")
    func factoryTimeZone() async throws {
        var settings = NotificationSettings()
        settings.timeZone = "Factory"
        #expect(settings.problem != nil)
        settings.timeZone = "Europe/Berlin"
        #expect(settings.problem == nil)
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let answer = try await server.request("PUT", "/v1/me/notifications", token: alice, body: #"{"timeZone": "Factory"}"#)
            #expect(answer.status == 400 && answer.errorCode == "invalid_request", "\(answer.text)")
        }
    }

    // MARK: Outbound HTTP and outboxes

    @Test("a webhook receiver's 2xx with a body over 64 KiB is a delivery: each event once, nothing held back")
    func longAnswerIsDelivery() async throws {
        let deliveries = NIOLockedValueBox<[String]>([])
        try await HeraldServiceTests.withBackend(answer: { _, headers in
            deliveries.withLockedValue { $0.append(headers["herald-event-id"] ?? "") }
            return (.ok, String(repeating: "x", count: 100 * 1024))
        }) { port in
            try await ServiceTests.withServer(.sqlite, configure: { configuration in
                configuration.webhooks.url = "http://127.0.0.1:\(port)/herald"
                configuration.webhooks.secret = WebhookTests.secret
                configuration.webhooks.allowPrivate = true
                configuration.webhooks.retryBase = .milliseconds(50)
            }) { server in
                let alice = try await server.token("alice")
                let chat = try await server.createConversation(alice, kind: "group", title: "Long answers", members: [])
                for index in 0..<3 { try await server.post(alice, to: chat, id: "m\(index)", text: "hello \(index)") }
                try await eventually("three deliveries, the outbox empty") {
                    try await server.environment.store.webhookCount() == 0
                        && deliveries.withLockedValue { $0 }.count >= 3
                }
                let ids = deliveries.withLockedValue { $0 }
                #expect(Set(ids).count == ids.count, "none sent twice: \(ids)")
            }
        }
    }

    @Test("retention leaves no text behind: the outboxes' pushes and message events of what it deleted go, and the SQLite file and its -wal hold none of it",
          arguments: StoreKind.available)
    func retentionLeavesNoText(kind: StoreKind) async throws {
        let folder = try makeTemporaryFolder("herald-retention-files")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("herald.sqlite").path
        let secret = "SECRET-\(UUID().uuidString)"
        // A receiver that is down: the events wait in the outbox. Pushes wait their half-hour delay.
        try await HeraldServiceTests.withBackend(answer: { _, _ in (.internalServerError, "") }) { port in
            try await kind.withServerDatabase { database in
                try await PushHarness.run(configure: { configuration in
                    configuration.databasePath = path
                    configuration.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
                    configuration.retention = .seconds(30)
                    configuration.push.delay = .seconds(1800)
                    configuration.webhooks.url = "http://127.0.0.1:\(port)/herald"
                    configuration.webhooks.secret = WebhookTests.secret
                    configuration.webhooks.allowPrivate = true
                }) { push in
                    let server = push.server
                    let store = server.environment.store
                    let (alice, bob) = try await (server.token("alice"), server.token("bob"))
                    try await push.register(bob, device: "phone", platform: "apns", pushToken: PushHarness.apnsToken(0xB0B))
                    let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
                    var last: Int64 = 0
                    for index in 0..<5 { last = try await server.post(alice, to: chat, id: "s\(index)", text: "\(secret) \(index)").seq }
                    try await eventually("the pushes and events queued") {
                        let (pushes, events) = (try await store.pushJobCount(), try await store.webhookCount())
                        return pushes == 5 && events >= 5
                    }
                    try await RetentionTests.age(store, through: last)
                    try await eventually("the old messages deleted", within: .seconds(60)) {
                        try await store.entries(after: 0, through: try await store.latestSeq(), limit: 100).isEmpty
                    }
                    #expect(try await store.pushJobCount() == 0, "no push of a deleted message waits")
                    #expect(try await store.webhookCount() == 0, "no message.new of a deleted message waits")
                    guard kind == .sqlite else { return }
                    for file in [path, path + "-wal"] {
                        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
                        #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) holds a deleted message's text")
                    }
                }
            }
        }
    }
}
