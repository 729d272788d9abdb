import Foundation
import HeraldClient
import HeraldPresentation
import HeraldProtocol
@testable import HeraldRecords
@testable import HeraldServer
import HeraldURLSession
import Testing

/// `HERALD_PUSH_CONTENT` and the device key (docs/push.md, "Private pushes"): what each push service is told in each
/// mode, and what a device key reads through `GET /v1/push/…`.
@Suite("Private pushes", .timeLimit(.minutes(3)))
struct PrivatePushTests {
    static let secret = "the launch code is 4721"

    @Test("HERALD_PUSH_CONTENT: full, sender or none; anything else is refused at start")
    func configuration() throws {
        #expect(try ServerConfiguration.fromEnvironment([:]).push.content == .full)
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_PUSH_CONTENT": "sender"]).push.content == .sender)
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_PUSH_CONTENT": "none"]).push.content == .none)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["HERALD_PUSH_CONTENT": "private"]) }
    }

    @Test("each mode: APNs, FCM and Expo carry the words, the sender alone, or ids alone; Web Push, encrypted, carries all (encrypted: EncryptedPushTests)", arguments: [PushContentMode.full, .sender, .none])
    func modes(mode: PushContentMode) async throws {
        try await PushHarness.run(configure: { $0.push.content = mode; $0.push.localizationKeys = true }) { push in
            let server = push.server
            let (alice, bob) = try await (
                server.token("alice", name: "Alice Liddell", picture: "https://example.com/alice.png"), server.token("bob", name: "Bob"))
            let team = try await server.createConversation(alice, kind: "group", title: "Falcon Team", members: ["bob"])
            let apnsToken = PushHarness.apnsToken(3)
            try await push.register(bob, device: "phone", platform: "apns", pushToken: apnsToken)
            try await push.register(bob, device: "pixel", platform: "fcm", pushToken: "fcm-pixel")
            try await push.register(bob, device: "rn", platform: "expo", pushToken: "ExponentPushToken[private-mode]")
            let browser = WebPushProviderTests.Browser(endpoint: push.fake.url + "/push/bob-laptop")
            #expect(try await server.request("PUT", "/v1/devices/laptop", token: bob, body: browser.registration).status == 200)
            try await server.post(alice, to: team, id: "secret-1", text: Self.secret)

            _ = try await push.fake.wait("a push on each service") { _ in
                !push.apns(apnsToken).isEmpty && !push.fake.requests(to: "/v1/projects").isEmpty
                    && !push.fake.requests(to: "/--/api/v2/push/send").isEmpty && !push.fake.requests(to: "/push/").isEmpty
            }
            let apns = try #require(push.apns(apnsToken).first)
            let fcm = try #require(push.fake.requests(to: "/v1/projects").first)
            let expo = try #require(push.fake.requests(to: "/--/api/v2/push/send").first)
            let web = try #require(push.fake.requests(to: "/push/").first)

            // What the push services can read.
            for (service, request) in [("APNs", apns), ("FCM", fcm), ("Expo", expo)] {
                #expect(request.text.contains("4721") == (mode == .full), "\(service) in \(mode)")
                #expect(request.text.contains("Alice") == (mode != .none), "\(service) in \(mode)")
                #expect(request.text.contains("Falcon") == (mode != .none), "\(service) in \(mode)")
                #expect(request.text.contains("\"alice\"") == (mode != .none), "\(service) in \(mode): the sender's id")
                #expect(request.text.contains("secret-1"), "\(service): the ids are always there")
                #expect(request.text.contains("HERALD_MESSAGE"), "\(service): the category too")
            }
            #expect(!web.text.contains("4721"), "Web Push is encrypted")

            // APNs: the words, the keys, and what tells the extension to fetch the rest.
            let aps = try #require(apns.json?["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(aps["mutable-content"] as? Int == 1)
            #expect(apns.json?["withheld"] as? String == (mode == .full ? nil : mode.rawValue))
            switch mode {
            case .full:
                #expect(alert["body"] as? String == "Alice Liddell: " + Self.secret)
            case .sender:
                #expect(alert["title"] as? String == "New message in Falcon Team")
                #expect(alert["body"] as? String == "Alice Liddell: New message")
                #expect(alert["loc-key"] as? String == "HERALD_GROUP_NEW_MESSAGE")
                #expect(alert["loc-args"] as? [String] == ["Alice Liddell"])
                #expect(apns.json?["senderAvatarURL"] as? String == "https://example.com/alice.png")
            case .none, .encrypted:
                #expect(alert["title"] == nil)
                #expect(alert["body"] as? String == "New message")
                #expect(alert["loc-key"] as? String == "HERALD_NEW_MESSAGE")
                #expect(apns.json?["senderId"] == nil && apns.json?["isGroup"] == nil && apns.json?["senderName"] == nil)
                #expect(apns.json?["conversationId"] as? String == team)
            }
            let notification = try #require((fcm.json?["message"] as? [String: Any])?["notification"] as? [String: Any])
            #expect(notification["body"] as? String == ["Alice Liddell: " + Self.secret, "Alice Liddell: New message", "New message"][mode.index])
            let expoMessage = try #require(expo.jsonArray?.first)
            #expect(expoMessage["body"] as? String == ["Alice Liddell: " + Self.secret, "Alice Liddell: New message", "New message"][mode.index])
            #expect((expoMessage["data"] as? [String: Any])?["withheld"] as? String == (mode == .full ? nil : mode.rawValue))

            let payload = try browser.decrypt(web.body)
            #expect(payload["body"] as? String == "Alice Liddell: " + Self.secret, "the browser reads everything in every mode")
            #expect(payload["withheld"] == nil)
        }
    }

    @Test("the device key reads the message pushed to its device, and nothing else: another device's, another user's, one not pushed, a removed member's, a removed device's")
    func deviceKey() async throws {
        try await PushHarness.run(configure: { $0.push.content = .none; $0.push.localizationKeys = true }) { push in
            let server = push.server
            let (alice, bob, carol) = try await (
                server.token("alice", name: "Alice", picture: "https://example.com/a.png"), server.token("bob"), server.token("carol"))
            let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob", "carol"])
            let direct = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let (bobsPhone, carolsPhone) = (PushHarness.apnsToken(1), PushHarness.apnsToken(2))
            let bobKey = try await push.register(bob, device: "phone", platform: "apns", pushToken: bobsPhone)
            let carolKey = try await push.register(carol, device: "phone", platform: "apns", pushToken: carolsPhone)
            #expect(bobKey.hasPrefix("hdk_") && bobKey.utf8.count == 47 && bobKey != carolKey)

            try await server.post(alice, to: team, id: "t-1", text: "@team " + Self.secret)
            try await server.post(alice, to: direct, id: "d-1", text: "just for Bob")
            _ = try await push.fake.wait("the pushes") { _ in push.apns(bobsPhone).count == 2 && push.apns(carolsPhone).count == 1 }
            // Bob's own message (posting reads the conversation, so it comes after his pushes went).
            try await server.post(bob, to: team, id: "own", text: "Bob's own words")
            _ = try await push.fake.wait("Carol's push of it") { _ in push.apns(carolsPhone).count == 2 }

            func read(_ key: String?, _ conversation: String, _ message: String) async throws -> HTTPResult {
                try await server.request("GET", "/v1/push/conversations/\(conversation)/messages/\(message)", token: key)
            }
            // What was pushed to the device: the words a full push would have carried, and the message.
            let fetched = try await read(bobKey, team, "t-1")
            #expect(fetched.status == 200, "\(fetched.text)")
            let answer = try WireJSON.decoder().decode(WirePushedMessage.self, from: fetched.body)
            #expect(answer.title == "New message in Team" && answer.body == "Alice: @team " + Self.secret)
            #expect(answer.data["senderName"] == "Alice" && answer.data["senderAvatarURL"] == "https://example.com/a.png")
            #expect(answer.data["conversationTitle"] == "Team" && answer.data["isGroup"] == "true" && answer.message.id == "t-1")
            #expect(answer.data["senderId"] == "alice" && answer.data["withheld"] == nil)
            #expect(answer.message.text == "@team " + Self.secret)
            #expect(try await read(bobKey, direct, "d-1").status == 200)

            // What the Notification Service Extension does with the push APNs handed it: sees that the words were
            // withheld, fetches them with the device key (over URLSession), and makes the chat-style notification.
            let delivered = try #require(push.apns(bobsPhone).first { $0.messageID == "t-1" }?.json)
            let withheld = try #require(WithheldPush(userInfo: delivered))
            #expect(CommunicationNotification(userInfo: delivered) == nil, "the push alone names no sender")
            let fetchedByExtension = try await HeraldAPI.pushedMessage(
                withheld.messageID, in: withheld.conversationID, deviceKey: bobKey,
                server: URL(string: "http://127.0.0.1:\(server.port)")!, http: URLSessionHTTPTransport())
            let filled = try #require(withheld.filled(
                title: fetchedByExtension.title, body: fetchedByExtension.body, data: fetchedByExtension.data, userInfo: delivered))
            #expect(filled.title == "New message in Team" && filled.body == "Alice: @team " + Self.secret)
            let chatStyle = try #require(CommunicationNotification(userInfo: filled.userInfo))
            #expect(chatStyle.senderID == "alice" && chatStyle.senderName == "Alice" && chatStyle.groupName == "Team")
            #expect(!chatStyle.mentioned, "text alone names no one: mentions are listed")
            #expect(chatStyle.senderPicture?.absoluteString == "https://example.com/a.png")
            let another = try await HeraldAPI.pushedMessage(
                "d-1", in: direct, deviceKey: bobKey, server: URL(string: "http://127.0.0.1:\(server.port)")!,
                http: URLSessionHTTPTransport())
            #expect(withheld.filled(title: another.title, body: another.body, data: another.data, userInfo: delivered) == nil,
                    "an answer about another message fills nothing")
            await #expect(throws: HeraldAPIError.self) {
                try await HeraldAPI.pushedMessage(
                    "d-1", in: direct, deviceKey: carolKey, server: URL(string: "http://127.0.0.1:\(server.port)")!,
                    http: URLSessionHTTPTransport())
            }
            #expect(try await read(carolKey, team, "t-1").status == 200)

            // Nothing else.
            for (what, key, conversation, message) in [
                ("another user's push", carolKey, direct, "d-1"),
                ("a message not pushed to it (the user's own)", bobKey, team, "own"),
                ("an id of another conversation", bobKey, direct, "t-1"),
                ("no such message", bobKey, team, "nope"),
            ] {
                let refused = try await read(key, conversation, message)
                #expect(refused.status == 404 && refused.errorCode == "not_found", "\(what): \(refused.status) \(refused.text)")
            }
            // Bob's tablet, registered after: not pushed to it.
            let tabletKey = try await push.register(bob, device: "tablet", platform: "apns", pushToken: PushHarness.apnsToken(9))
            #expect(try await read(tabletKey, team, "t-1").status == 404, "another device's push")

            // Keys are not tokens, nor tokens keys.
            #expect(try await read(nil, team, "t-1").errorCode == "missing_token")
            #expect(try await read(bob, team, "t-1").errorCode == "invalid_device_key")
            #expect(try await read("hdk_" + String(repeating: "A", count: 43), team, "t-1").errorCode == "invalid_device_key")
            #expect(try await read("hdk_" + String(repeating: "A", count: 42) + "!", team, "t-1").errorCode == "invalid_device_key")
            #expect(try await server.request("GET", "/v1/conversations", token: bobKey).errorCode == "invalid_token")

            // Carol leaves the group: her key reads none of it any more.
            let left = try await server.request("DELETE", "/v1/conversations/\(team)/members/carol", token: carol)
            #expect(left.status < 300, "\(left.text)")
            #expect(try await read(carolKey, team, "t-1").status == 404, "a member no more")

            // Registered again: the old key ends. Removed: the new one ends too.
            let renewed = try await push.register(bob, device: "phone", platform: "apns", pushToken: bobsPhone)
            #expect(try await read(bobKey, team, "t-1").errorCode == "invalid_device_key")
            #expect(try await read(renewed, team, "t-1").status == 200)
            #expect(try await server.request("DELETE", "/v1/devices/phone", token: bob).status == 204)
            #expect(try await read(renewed, team, "t-1").errorCode == "invalid_device_key")
        }
    }
}

extension PushContentMode {
    fileprivate var index: Int { Self.allCases.firstIndex(of: self)! }
}
