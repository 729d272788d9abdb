import Crypto
import Foundation
import HeraldProtocol
@testable import HeraldServer
import JWTKit
import Testing

/// Web Push against a local push service over HTTPS: what it receives, and what its answers lead to.
@Suite("Web Push provider", .timeLimit(.minutes(2)))
struct WebPushProviderTests {
    /// A browser's subscription to the fake push service: its keys, and the JSON a page registers.
    struct Browser {
        /// The browser's key pair and secret (HeraldServer's `PushKeyPair`, the receiver's side it shares with apps).
        let keys = PushKeyPair()
        let endpoint: String

        var subscription: String {
            let json: [String: Any] = [
                "endpoint": endpoint,
                "keys": ["p256dh": keys.registration.p256dh, "auth": keys.registration.auth],
            ]
            return String(decoding: try! JSONSerialization.data(withJSONObject: json), as: UTF8.self)
        }

        /// The registration body for `PUT /v1/devices/{id}`.
        var registration: String {
            let json: [String: Any] = ["platform": "webpush", "token": subscription]
            return String(decoding: try! JSONSerialization.data(withJSONObject: json), as: UTF8.self)
        }

        /// What the browser reads from a push: opened with its keys (the sender's key is in the header).
        func decrypt(_ body: Data) throws -> [String: Any] {
            let plaintext = try keys.decrypt(body)
            return try #require(try JSONSerialization.jsonObject(with: plaintext) as? [String: Any])
        }
    }

    @Test("a push to a subscription: encrypted for the browser, VAPID-signed for the push service's origin, with TTL, Urgency and Topic")
    func request() async throws {
        try await PushHarness.run { push in
            let server = push.server
            let (alice, bob) = try await (
                server.token("alice", name: "Alice", picture: "https://example.com/alice.png"), server.token("bob", name: "Bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let browser = Browser(endpoint: push.fake.url + "/push/bob-laptop")
            let registered = try await server.request("PUT", "/v1/devices/laptop", token: bob, body: browser.registration)
            #expect(registered.status == 200, "\(registered.text)")
            let posted = try await server.post(alice, to: chat, id: "web-1", text: "Lunch at one?")
            let request = try #require(try await push.fake.wait("the push") { _ in !push.fake.requests(to: "/push/").isEmpty }
                .first { $0.path == "/push/bob-laptop" })

            #expect(request.headers["content-encoding"] == "aes128gcm")
            #expect(request.headers["content-type"] == "application/octet-stream")
            #expect(request.headers["urgency"] == "high")
            // The topic names the message in its conversation: 32 characters of base64url.
            let topic = try #require(request.headers["topic"])
            #expect(topic.utf8.count == 32 && topic.utf8.allSatisfy { $0 == 0x2D || $0 == 0x5F || ($0 < 0x80 && Character(UnicodeScalar($0)).isLetter) || ($0 >= 0x30 && $0 <= 0x39) })
            let ttl = try #require(request.headers["ttl"].flatMap(Int.init))
            #expect((3500...3600).contains(ttl))
            let authorization = try #require(request.headers["authorization"])
            let match = try #require(authorization.wholeMatch(of: /vapid t=([^,]+), k=(.+)/))
            let publicKey = try #require(Data(base64URL: String(match.2)))
            #expect(String(match.2) == server.environment.vapid.publicKey)
            let keys = await JWTKeyCollection().add(
                ecdsa: try ES256PublicKey(backing: P256.Signing.PublicKey(x963Representation: publicKey)))
            let claims = try await keys.verify(String(match.1), as: VAPID.Claims.self)
            #expect(claims.aud.value == [push.fake.url])
            #expect(claims.sub?.value == "mailto:tests@herald.example")

            let payload = try browser.decrypt(request.body)
            #expect(payload["title"] as? String == "New message from Alice")
            #expect(payload["body"] as? String == "Lunch at one?")
            #expect(payload["conversationId"] as? String == chat)
            #expect(payload["messageId"] as? String == "web-1")
            #expect(payload["seq"] as? String == String(posted.seq))
            #expect(payload["badge"] as? Int == 1)
            // The service worker's icon and actions.
            #expect(payload["senderAvatarURL"] as? String == "https://example.com/alice.png")
            #expect(payload["senderName"] as? String == "Alice")
            #expect(payload["category"] as? String == "HERALD_MESSAGE")
            #expect(request.body.count < 4096)

            let listed = try await server.request("GET", "/v1/devices", token: bob)
            #expect(listed.text.contains("webpush"))
        }
    }

    @Test("the push service's 404 and 410 remove the subscription, 413 drops, 429 (Retry-After) and 5xx retry")
    func answers() async throws {
        try await PushHarness.run { push in
            let server = push.server
            let alice = try await server.token("alice", name: "Alice")
            let users = ["gone404", "gone410", "huge", "busy", "broken"]
            var chats: [String: String] = [:]
            for user in users {
                let browser = Browser(endpoint: push.fake.url + "/push/\(user)")
                let registered = try await server.request("PUT", "/v1/devices/\(user)-laptop", token: try await server.token(user), body: browser.registration)
                #expect(registered.status == 200)
                chats[user] = try await server.createConversation(alice, kind: "direct", members: [user])
            }
            let answered = ManagedCounts()
            push.fake.respond { request in
                guard request.path.hasPrefix("/push/") else { return nil }
                let user = String(request.path.dropFirst("/push/".count))
                switch (user, answered.next(user)) {
                case ("gone404", _): return FakeAnswer(status: 404, body: "")
                case ("gone410", _): return FakeAnswer(status: 410, body: "")
                case ("huge", _): return FakeAnswer(status: 413, body: "")
                case ("busy", 1): return FakeAnswer(status: 429, headers: ["retry-after": "1"], body: "")
                case ("broken", 1): return FakeAnswer(status: 502, body: "")
                default: return nil
                }
            }
            for user in users {
                try await server.post(alice, to: chats[user]!, text: "hello \(user)")
            }
            for user in ["gone404", "gone410"] {
                try await push.eventually("\(user)'s subscription removed") { try await push.devices(of: user).isEmpty }
            }
            try await push.eventually("the busy and broken pushes sent") { server.environment.push.counts.sent == 2 }
            try await push.eventually("the outbox empty") { try await server.environment.store.pushJobCount() == 0 }
            #expect(push.fake.requests(to: "/push/busy").count == 2)
            #expect(push.fake.requests(to: "/push/broken").count == 2)
            #expect(push.fake.requests(to: "/push/huge").count == 1)
            #expect(try await push.devices(of: "huge") == ["huge-laptop"])
            #expect(server.environment.push.counts.dropped == 1)
        }
    }

    @Test("subscriptions are checked: https only, no loopback, private or link-local host, real keys")
    func subscriptionChecks() async throws {
        try await TestServer.run { server in
            let bob = try await server.token("bob")
            let good = Browser(endpoint: "https://fcm.googleapis.com/fcm/send/abc:def")
            #expect(try await server.request("PUT", "/v1/devices/ok", token: bob, body: good.registration).status == 200)
            for endpoint in ["http://fcm.googleapis.com/x", "https://127.0.0.1/x", "https://localhost:8443/x", "https://10.1.2.3/x",
                             "https://192.168.1.10/x", "https://172.20.0.1/x", "https://169.254.169.254/latest", "https://[::1]/x",
                             "https://[fe80::1]/x", "https://[fd00::1]/x", "https://[::ffff:127.0.0.1]/x", "https://0.0.0.0/x",
                             "https://intranet/x", "https://printer.local/x", "ftp://push.example.com/x",
                             // The forms the second round of hardening found passing.
                             "https://[fe80::1%25lo]/x", "https://[::127.0.0.1]/x", "https://[64:ff9b::a9fe:a9fe]/x",
                             "https://[2002:a9fe:a9fe::1]/x", "https://[fec0::1]/x", "https://[::ffff:0:7f00:1]/x",
                             "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x", "https://2130706433/x",
                             "https://127.1/x", "https://0x7f.0.0.1/x", "https://localhost./x",
                             "https://push.example.com/" + String(repeating: "a", count: 2_100)] {
                let result = try await server.request(
                    "PUT", "/v1/devices/bad", token: bob, body: Browser(endpoint: endpoint).registration)
                #expect(result.status == 400, "\(endpoint)")
                #expect(result.errorCode == "invalid_request")
            }
            let badKey = #"{"platform": "webpush", "token": "{\"endpoint\": \"https://push.example.com/x\", \"keys\": {\"p256dh\": \"AAAA\", \"auth\": \"AAAAAAAAAAAAAAAAAAAAAA\"}}"}"#
            #expect(try await server.request("PUT", "/v1/devices/bad", token: bob, body: badKey).status == 400)
            let notJSON = #"{"platform": "webpush", "token": "https://push.example.com/x"}"#
            #expect(try await server.request("PUT", "/v1/devices/bad", token: bob, body: notJSON).status == 400)
            #expect(try await server.environment.store.devices(of: "bob").map(\.id) == ["ok"])
        }
    }

    @Test("a push service's redirect is never followed: the listener it points at sees nothing, the device stays, the push is dropped")
    func redirectsNotFollowed() async throws {
        let target = try await ConnectionCounter.start()
        defer { target.stop() }
        try await PushHarness.run { push in
            let server = push.server
            let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob", name: "Bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let browser = Browser(endpoint: push.fake.url + "/push/redirected")
            #expect(try await server.request("PUT", "/v1/devices/laptop", token: bob, body: browser.registration).status == 200)
            push.fake.respond { request in
                guard request.path == "/push/redirected" else { return nil }
                return FakeAnswer(status: 307, headers: ["location": "http://127.0.0.1:\(target.port)/internal-admin/x"], body: "")
            }
            try await server.post(alice, to: chat, text: "follow me")
            try await push.eventually("the push dropped") { server.environment.push.counts.dropped == 1 }
            #expect(push.fake.requests(to: "/push/redirected").count == 1, "tried once, not retried")
            #expect(target.accepted == 0, "the redirect's target was never connected to")
            #expect(try await push.devices(of: "bob") == ["laptop"], "a redirect says nothing about the device")
            #expect(server.environment.push.counts.removedDevices == 0)
        }
    }
}
