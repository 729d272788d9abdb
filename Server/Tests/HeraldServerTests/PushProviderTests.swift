import Foundation
import HeraldServer
import JWTKit
import NIOConcurrencyHelpers
import Testing

/// Each provider against a local fake that checks requests as the real service would, and each error answer
/// leading to the documented action.
@Suite("Push providers", .timeLimit(.minutes(3)))
struct PushProviderTests {
    @Test("APNs: HTTP/2 over TLS, an ES256 provider token verified with the key's public half, Apple's headers and payload")
    func apnsRequest() async throws {
        try await PushHarness.run(configure: { $0.push.localizationKeys = true }) { push in
            let server = push.server
            let (alice, bob) = try await (
                server.token("alice", name: "Alice", picture: "https://example.com/alice.png"), server.token("bob", name: "Bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let deviceToken = PushHarness.apnsToken(1)
            try await push.register(bob, device: "bob-phone", platform: "apns", pushToken: deviceToken)
            let posted = try await server.post(alice, to: chat, id: "m-apns-1", text: "Lunch at one?")

            let request = try #require(try await push.fake.wait("the APNs push") { _ in !push.apns(deviceToken).isEmpty }.last {
                $0.path == "/3/device/\(deviceToken)" })
            #expect(request.method == "POST")
            let authorization = try #require(request.headers["authorization"])
            #expect(authorization.hasPrefix("bearer "))
            let jwt = String(authorization.dropFirst("bearer ".count))
            let keys = await JWTKeyCollection().add(ecdsa: try ES256PublicKey(pem: push.apnsKey.publicKey.pemRepresentation))
            let claims = try await keys.verify(jwt, as: APNsProviderClaims.self)
            #expect(claims.iss.value == PushHarness.teamID)
            #expect(abs(claims.iat.value.timeIntervalSinceNow) < 60)
            #expect(jwtHeader(jwt)["kid"] as? String == PushHarness.keyID)
            #expect(jwtHeader(jwt)["alg"] as? String == "ES256")

            #expect(request.headers["apns-topic"] == PushHarness.topic)
            #expect(request.headers["apns-push-type"] == "alert")
            #expect(request.headers["apns-priority"] == "10")
            // The collapse id, which iOS makes the notification's identifier, is the one the app's own notification of
            // the message has: `herald-<seq>` (LocalNotification.identifier), so the two show once.
            let collapse = try #require(request.headers["apns-collapse-id"])
            let seq = try #require(request.json?["seq"] as? String)
            #expect(collapse == "herald-\(seq)")
            #expect(request.json?["notificationId"] as? String == collapse)
            #expect(request.messageID == "m-apns-1")
            #expect(UUID(uuidString: request.headers["apns-id"] ?? "") != nil)
            let expiration = try #require(request.headers["apns-expiration"].flatMap(TimeInterval.init))
            #expect(abs(expiration - Date().addingTimeInterval(3600).timeIntervalSince1970) < 60)

            let body = try #require(request.json)
            let aps = try #require(body["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(alert["title"] as? String == "New message from Alice")
            #expect(alert["body"] as? String == "Lunch at one?")
            #expect(aps["thread-id"] as? String == chat)
            #expect(aps["badge"] as? Int == 1)
            #expect(aps["sound"] as? String == "default")
            #expect(aps["mutable-content"] as? Int == 1)
            #expect(body["conversationId"] as? String == chat)
            #expect(body["messageId"] as? String == "m-apns-1")
            #expect(body["seq"] as? String == String(posted.seq))
            #expect(body["senderId"] as? String == "alice")
            // What the app's actions and a chat-style notification need, and the keys its own strings translate.
            #expect(aps["category"] as? String == "HERALD_MESSAGE")
            #expect(aps["interruption-level"] as? String == "active" && aps["relevance-score"] as? Double == 1)
            #expect(alert["title-loc-key"] as? String == "HERALD_MESSAGE_FROM")
            #expect(alert["title-loc-args"] as? [String] == ["Alice"])
            #expect(alert["loc-key"] == nil, "a direct chat's text is the body as it is")
            #expect(body["category"] as? String == "HERALD_MESSAGE")
            #expect(body["senderName"] as? String == "Alice")
            #expect(body["senderAvatarURL"] as? String == "https://example.com/alice.png")
            #expect(body["isGroup"] as? String == "false")
            #expect(body["conversationTitle"] == nil)

            // The provider token is reused, not made for every push.
            try await server.post(alice, to: chat, id: "m-apns-2", text: "Or two?")
            let second = try await push.fake.wait("the second push") { _ in push.apns(deviceToken).count == 2 }
            #expect(second.last?.headers["authorization"] == authorization)
        }
    }

    @Test("HERALD_PUSH_TIME_SENSITIVE_MENTIONS=1: a group message that names the member breaks through Focus; the rest, and every push without it, do not")
    func timeSensitiveMentions() async throws {
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_PUSH_TIME_SENSITIVE_MENTIONS": "1"]).push.timeSensitiveMentions)
        #expect(try !ServerConfiguration.fromEnvironment([:]).push.timeSensitiveMentions)
        for enabled in [true, false] {
            // Three messages in one minute would be a burst: each is its own here (bursts are PushBurstTests').
            try await PushHarness.run(configure: { $0.push.timeSensitiveMentions = enabled; $0.push.burstWindow = .zero }) { push in
                let server = push.server
                let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob", name: "Bob"))
                let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob"])
                let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
                let token = PushHarness.apnsToken(7)
                try await push.register(bob, device: "bob-phone", platform: "apns", pushToken: token)
                let named = try await server.request(
                    "POST", "/v1/conversations/\(team)/messages", token: alice,
                    body: #"{"id": "named", "text": "@Bob look", "mentions": ["bob"]}"#)
                #expect(named.status == 201, "\(named.text)")
                try await server.post(alice, to: team, id: "plain", text: "for everyone")
                try await server.post(alice, to: chat, id: "direct", text: "just you")
                let requests = try await push.fake.wait("three pushes") { _ in push.apns(token).count == 3 }
                func level(_ id: String) -> String? {
                    let body = requests.last { $0.messageID == id }?.json
                    return (body?["aps"] as? [String: Any])?["interruption-level"] as? String
                }
                #expect(level("named") == (enabled ? "time-sensitive" : "active"), "enabled: \(enabled)")
                #expect(level("plain") == "active")
                #expect(level("direct") == "active", "a direct chat counts as a mention for levels, not for Focus")
            }
        }
    }

    @Test("APNs answers: 410 and 400 BadDeviceToken/DeviceTokenNotForTopic remove the device, 403 ExpiredProviderToken makes a new token, 429 and 5xx retry, 413 drops")
    func apnsAnswers() async throws {
        try await PushHarness.run { push in
            let server = push.server
            let alice = try await server.token("alice", name: "Alice")
            let users = ["gone", "bad", "topic", "expired", "busy", "broken", "huge"]
            var tokens: [String: String] = [:]
            var chats: [String: String] = [:]
            for (index, user) in users.enumerated() {
                let token = try await server.token(user)
                tokens[user] = PushHarness.apnsToken(100 + index)
                try await push.register(token, device: "\(user)-phone", platform: "apns", pushToken: tokens[user]!)
                chats[user] = try await server.createConversation(alice, kind: "direct", members: [user])
            }
            let byToken = tokens
            let answered = ManagedCounts()
            push.fake.respond { request in
                guard request.path.hasPrefix("/3/device/"),
                      let user = byToken.first(where: { request.path.hasSuffix($0.value) })?.key else { return nil }
                let attempt = answered.next(user)
                switch (user, attempt) {
                case ("gone", _): return FakeAnswer(status: 410, body: #"{"reason":"Unregistered","timestamp":1700000000000}"#)
                case ("bad", _): return FakeAnswer(status: 400, body: #"{"reason":"BadDeviceToken"}"#)
                case ("topic", _): return FakeAnswer(status: 400, body: #"{"reason":"DeviceTokenNotForTopic"}"#)
                case ("expired", 1): return FakeAnswer(status: 403, body: #"{"reason":"ExpiredProviderToken"}"#)
                case ("busy", 1): return FakeAnswer(status: 429, headers: ["retry-after": "1"], body: #"{"reason":"TooManyRequests"}"#)
                case ("broken", 1), ("broken", 2): return FakeAnswer(status: 503, body: #"{"reason":"ServiceUnavailable"}"#)
                case ("huge", _): return FakeAnswer(status: 413, body: #"{"reason":"PayloadTooLarge"}"#)
                default: return nil
                }
            }
            for user in users {
                try await server.post(alice, to: chats[user]!, id: "to-\(user)", text: "hello \(user)")
            }
            for user in ["gone", "bad", "topic"] {
                try await push.eventually("\(user)'s device removed") { try await push.devices(of: user).isEmpty }
                #expect(push.apns(tokens[user]!).count == 1)
            }
            // A new provider token at once, and the push goes.
            let expired = try await push.fake.wait("the retry with a new token") { _ in push.apns(tokens["expired"]!).count == 2 }
                .filter { $0.path.hasSuffix(tokens["expired"]!) }
            #expect(expired[0].headers["authorization"] != expired[1].headers["authorization"])
            #expect(try await push.devices(of: "expired") == ["expired-phone"])

            let busy = try await push.fake.wait("the retry after Retry-After") { _ in push.apns(tokens["busy"]!).count == 2 }
            _ = busy
            let broken = try await push.fake.wait("two retries after 503") { _ in push.apns(tokens["broken"]!).count == 3 }
            _ = broken
            // Every retry of one message carries the same collapse id and apns-id: a device shows it once.
            #expect(Set(push.apns(tokens["broken"]!).map { $0.headers["apns-collapse-id"] ?? "" }).count == 1)
            #expect(Set(push.apns(tokens["broken"]!).compactMap(\.messageID)) == ["to-broken"])
            #expect(Set(push.apns(tokens["broken"]!).map { $0.headers["apns-id"] ?? "" }).count == 1)

            try await push.eventually("the 413 dropped") { server.environment.push.counts.dropped == 1 }
            #expect(push.apns(tokens["huge"]!).count == 1)
            #expect(try await push.devices(of: "huge") == ["huge-phone"], "a payload too large says nothing about the device")
            try await push.eventually("the outbox empty") { try await server.environment.store.pushJobCount() == 0 }
            let counts = server.environment.push.counts
            #expect(counts.sent == 3)
            #expect(counts.removedDevices == 3)
            #expect(counts.retried == 3, "429 once, 503 twice; the expired token is made anew within the same try")
        }
    }

    @Test("APNs: a Retry-After is honoured, not hurried")
    func retryAfterHonoured() async throws {
        try await PushHarness.run { push in
            let server = push.server
            let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let deviceToken = PushHarness.apnsToken(7)
            try await push.register(bob, device: "phone", platform: "apns", pushToken: deviceToken)
            let answered = ManagedCounts()
            push.fake.respond { request in
                guard request.path.hasPrefix("/3/device/"), answered.next("bob") == 1 else { return nil }
                return FakeAnswer(status: 429, headers: ["retry-after": "2"], body: #"{"reason":"TooManyRequests"}"#)
            }
            try await server.post(alice, to: chat, text: "hi")
            try await push.fake.wait("the retry") { _ in push.apns(deviceToken).count == 2 }
            // Measured where the requests arrived, not where the test noticed them.
            let tries = push.apns(deviceToken)
            #expect(tries[1].receivedAt - tries[0].receivedAt >= .milliseconds(1_950))
        }
    }

    @Test("FCM: the service account's RS256 assertion exchanged for an access token, kept, and the v1 message")
    func fcmRequest() async throws {
        try await PushHarness.run(configure: { $0.push.localizationKeys = true }) { push in
            let server = push.server
            let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob", name: "Bob"))
            let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob"])
            try await push.register(bob, device: "bob-pixel", platform: "fcm", pushToken: "fcm-token:APA91b-xyz_1")
            // The second is posted once the first was sent: decided together, both would count both as unread.
            try await server.post(alice, to: team, id: "m-fcm-1", text: "Standup in 5")
            _ = try await push.fake.wait("the first FCM send") { _ in push.fake.requests(to: "/v1/projects").count == 1 }
            try await server.post(alice, to: team, id: "m-fcm-2", text: "Now")
            let requests = try await push.fake.wait("two FCM sends") { _ in push.fake.requests(to: "/v1/projects").count == 2 }

            let exchanges = requests.filter { $0.path == "/token" }
            #expect(exchanges.count == 1, "the access token is kept for the second send")
            let exchange = try #require(exchanges.first)
            #expect(exchange.headers["content-type"] == "application/x-www-form-urlencoded")
            let form = Dictionary(uniqueKeysWithValues: exchange.text.split(separator: "&").map {
                let parts = $0.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), String(parts.count > 1 ? parts[1] : "").removingPercentEncoding ?? "")
            })
            #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
            let keys = await JWTKeyCollection().add(rsa: push.fcmKey.publicKey, digestAlgorithm: .sha256)
            let assertion = try await keys.verify(try #require(form["assertion"]), as: FCMAssertionClaims.self)
            #expect(assertion.iss.value == PushHarness.fcmEmail)
            #expect(assertion.aud.value == [push.fake.url + "/token"])
            #expect(assertion.scope == "https://www.googleapis.com/auth/firebase.messaging")
            #expect(jwtHeader(form["assertion"]!)["alg"] as? String == "RS256")

            let sends = requests.filter { $0.path.hasSuffix("/messages:send") }
            #expect(sends.allSatisfy { $0.path == "/v1/projects/\(PushHarness.fcmProject)/messages:send" })
            let granted = try #require(FakePushService.lastAccessToken(in: exchanges))
            #expect(sends.allSatisfy { $0.headers["authorization"] == "Bearer \(granted)" })
            let messages = sends.compactMap { $0.json?["message"] as? [String: Any] }
            let message = try #require(messages.first { ($0["data"] as? [String: String])?["messageId"] == "m-fcm-1" })
            #expect(message["token"] as? String == "fcm-token:APA91b-xyz_1")
            let notification = try #require(message["notification"] as? [String: Any])
            #expect(notification["title"] as? String == "New message in Team")
            #expect(notification["body"] as? String == "Alice: Standup in 5")
            let data = try #require(message["data"] as? [String: String], "data holds strings only")
            #expect(data["conversationId"] == team)
            #expect(data["messageId"] == "m-fcm-1")
            #expect(data["senderId"] == "alice")
            #expect(data["seq"] != nil)
            #expect(data["category"] == "HERALD_MESSAGE")
            #expect(data["senderName"] == "Alice")
            #expect(data["senderAvatarURL"] == nil, "Alice has no picture")
            #expect(data["conversationTitle"] == "Team")
            #expect(data["isGroup"] == "true")
            let android = try #require(message["android"] as? [String: Any])
            #expect(android["priority"] as? String == "high")
            let ttl = try #require((android["ttl"] as? String).flatMap { Int($0.dropLast()) })
            #expect((3500...3600).contains(ttl), "the push expires with its maximum age")
            let androidNotification = try #require(android["notification"] as? [String: Any])
            // The tag and collapse id are the app's own notification's identifier: `herald-<seq>`.
            let tag = try #require(androidNotification["tag"] as? String)
            #expect(tag == "herald-\(try #require((message["data"] as? [String: Any])?["seq"] as? String))")
            #expect(androidNotification["notification_count"] as? Int == 1)
            #expect(androidNotification["title_loc_key"] as? String == "HERALD_MESSAGE_IN")
            #expect(androidNotification["title_loc_args"] as? [String] == ["Team"])
            #expect(androidNotification["body_loc_key"] as? String == "HERALD_GROUP_MESSAGE")
            #expect(androidNotification["body_loc_args"] as? [String] == ["Alice", "Standup in 5"])
            let apns = try #require(message["apns"] as? [String: Any])
            #expect((apns["headers"] as? [String: Any])?["apns-collapse-id"] as? String == tag)
            let aps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
            #expect(aps?["thread-id"] as? String == team)
            #expect(aps?["category"] as? String == "HERALD_MESSAGE")
        }
    }

    @Test("FCM answers: 404 UNREGISTERED and 400 INVALID_ARGUMENT about the token remove the device, 401 gets a new access token, 5xx retries")
    func fcmAnswers() async throws {
        try await PushHarness.run { push in
            let server = push.server
            let alice = try await server.token("alice", name: "Alice")
            let users = ["gone", "invalid", "stale", "busy"]
            var chats: [String: String] = [:]
            for user in users {
                try await push.register(try await server.token(user), device: "\(user)-pixel", platform: "fcm", pushToken: "tok-\(user)")
                chats[user] = try await server.createConversation(alice, kind: "direct", members: [user])
            }
            let answered = ManagedCounts()
            push.fake.respond { request in
                guard request.path.hasSuffix("/messages:send"),
                      let token = (request.json?["message"] as? [String: Any])?["token"] as? String else { return nil }
                let user = String(token.dropFirst(4))
                switch (user, answered.next(user)) {
                case ("gone", _):
                    return FakeAnswer(status: 404, body: #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#)
                case ("invalid", _):
                    return FakeAnswer(status: 400, body: #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]}]}}"#)
                case ("stale", 1):
                    return FakeAnswer(status: 401, body: #"{"error":{"code":401,"status":"UNAUTHENTICATED","message":"Request had invalid authentication credentials."}}"#)
                case ("busy", 1):
                    return FakeAnswer(status: 503, headers: ["retry-after": "1"], body: #"{"error":{"code":503,"status":"UNAVAILABLE"}}"#)
                default:
                    return nil
                }
            }
            for user in users {
                try await server.post(alice, to: chats[user]!, text: "hello \(user)")
            }
            for user in ["gone", "invalid"] {
                try await push.eventually("\(user)'s device removed") { try await push.devices(of: user).isEmpty }
            }
            try await push.eventually("the stale and busy pushes sent") { server.environment.push.counts.sent == 2 }
            #expect(push.fake.requests(to: "/token").count == 2, "the 401 got a new access token")
            #expect(try await push.devices(of: "stale") == ["stale-pixel"])
            #expect(try await push.devices(of: "busy") == ["busy-pixel"])
        }
    }

    @Test("Expo: the send body, DeviceNotRegistered in a ticket or in a receipt removes the device")
    func expo() async throws {
        try await PushHarness.run(configure: { $0.push.receiptDelay = .milliseconds(200) }) { push in
            let server = push.server
            let alice = try await server.token("alice", name: "Alice")
            var chats: [String: String] = [:]
            for user in ["ok", "ticket", "receipt"] {
                try await push.register(
                    try await server.token(user), device: "\(user)-phone", platform: "expo",
                    pushToken: "ExponentPushToken[\(user)-xxxxxxxx]")
                chats[user] = try await server.createConversation(alice, kind: "direct", members: [user])
            }
            push.fake.respond { request in
                if request.path == "/--/api/v2/push/send",
                   let to = request.jsonArray?.first?["to"] as? String {
                    if to.contains("ticket") {
                        return FakeAnswer(status: 200, body: #"{"data":[{"status":"error","message":"\"ExponentPushToken[ticket-xxxxxxxx]\" is not a registered push notification recipient","details":{"error":"DeviceNotRegistered"}}]}"#)
                    }
                    let id = to.contains("receipt") ? "ticket-receipt" : "ticket-ok"
                    return FakeAnswer(status: 200, body: #"{"data":[{"status":"ok","id":"\#(id)"}]}"#)
                }
                if request.path == "/--/api/v2/push/getReceipts", let ids = request.json?["ids"] as? [String] {
                    if ids == ["ticket-receipt"] {
                        return FakeAnswer(status: 200, body: #"{"data":{"ticket-receipt":{"status":"error","message":"not registered","details":{"error":"DeviceNotRegistered"}}}}"#)
                    }
                    return FakeAnswer(status: 200, body: #"{"data":{"\#(ids.first ?? "")":{"status":"ok"}}}"#)
                }
                return nil
            }
            for user in ["ok", "ticket", "receipt"] {
                try await server.post(alice, to: chats[user]!, id: "expo-\(user)", text: "hello \(user)")
            }
            try await push.eventually("the ticket's device removed") { try await push.devices(of: "ticket").isEmpty }
            try await push.eventually("the receipt's device removed") { try await push.devices(of: "receipt").isEmpty }
            try await push.eventually("the receipts checked") { try await server.environment.store.pushJobCount() == 0 }
            #expect(try await push.devices(of: "ok") == ["ok-phone"])
            #expect(push.fake.requests(to: "/--/api/v2/push/getReceipts").count == 2)

            let send = try #require(push.fake.requests(to: "/--/api/v2/push/send").first {
                ($0.jsonArray?.first?["to"] as? String)?.contains("ok-") == true })
            #expect(send.headers["content-type"] == "application/json")
            let message = try #require(send.jsonArray?.first)
            #expect(message["title"] as? String == "New message from Alice")
            #expect(message["body"] as? String == "hello ok")
            #expect(message["categoryId"] as? String == "HERALD_MESSAGE")
            #expect(message["interruptionLevel"] as? String == "active")
            let expoData = try #require(message["data"] as? [String: Any])
            #expect(expoData["senderName"] as? String == "Alice" && expoData["isGroup"] as? String == "false")
            #expect(message["badge"] as? Int == 1)
            #expect(message["priority"] as? String == "high")
            let data = try #require(message["data"] as? [String: Any])
            #expect(data["messageId"] as? String == "expo-ok")
            #expect(data["conversationId"] as? String == chats["ok"])
        }
    }
}

/// How many times each key was answered, across the fake's handler tasks.
final class ManagedCounts: Sendable {
    private let counts = NIOLockedValueBox<[String: Int]>([:])

    /// Counts one more for `key`; the count so far, this one included.
    func next(_ key: String) -> Int {
        counts.withLockedValue { counts in
            counts[key, default: 0] += 1
            return counts[key]!
        }
    }
}

extension FakePushService {
    /// The access token the last token exchange granted.
    static func lastAccessToken(in exchanges: [RecordedRequest]) -> String? {
        guard let answer = exchanges.last?.answer,
              let json = try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any]
        else { return nil }
        return json["access_token"] as? String
    }
}
