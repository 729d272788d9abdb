import Foundation
import HeraldCore
import HeraldPresentation
import HeraldProtocol
@testable import HeraldRecords
@testable import HeraldServer
import Testing

/// `HERALD_PUSH_CONTENT=encrypted` (docs/push.md, "Encrypted pushes"): devices register push keys; APNs, FCM and
/// Expo carry the words encrypted to them, ids and `New message` in clear. (Tests/Browser/test_encrypted_push.py
/// opens the same pushes with PyPI's `http_ece`, an implementation no one here wrote.)
@Suite("Encrypted pushes", .timeLimit(.minutes(3)))
struct EncryptedPushTests {
    static let secret = "the launch code is 4721"

    /// A device's keys, and its registration body.
    struct Phone {
        // HeraldServer's: on Apple platforms HeraldPresentation has the same type, from the same file.
        let keys = HeraldServer.PushKeyPair()
        let platform: String
        let token: String

        var registration: String {
            let (p256dh, auth) = keys.registration
            return #"{"platform": "\#(platform)", "token": "\#(token)", "keys": {"p256dh": "\#(p256dh)", "auth": "\#(auth)"}}"#
        }

        /// The plaintext of the `encrypted` field of `data`.
        func open(_ data: [String: Any]?) throws -> [String: Any] {
            let field = try #require(data?["encrypted"] as? String, "no encrypted field in \(data ?? [:])")
            let body = try #require(Data(base64URL: field))
            let plaintext = try keys.decrypt(body)
            return try #require(try JSONSerialization.jsonObject(with: plaintext) as? [String: Any])
        }
    }

    @Test("HERALD_PUSH_CONTENT=encrypted; HERALD_PUSH_REQUIRE_ENCRYPTION=1 only with it")
    func configuration() throws {
        let encrypted = try ServerConfiguration.fromEnvironment(["HERALD_PUSH_CONTENT": "encrypted"])
        #expect(encrypted.push.content == .encrypted && !encrypted.push.requireEncryption)
        let required = try ServerConfiguration.fromEnvironment(
            ["HERALD_PUSH_CONTENT": "encrypted", "HERALD_PUSH_REQUIRE_ENCRYPTION": "1"])
        #expect(required.push.requireEncryption)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["HERALD_PUSH_REQUIRE_ENCRYPTION": "1"]) }
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.fromEnvironment(["HERALD_PUSH_CONTENT": "encrypted", "HERALD_PUSH_REQUIRE_ENCRYPTION": "yes"])
        }
    }

    @Test("keys are checked; a subscription's are its own; with encryption required a device without keys is refused, encryption_required")
    func registration() async throws {
        try await PushHarness.run(configure: { $0.push.content = .encrypted; $0.push.requireEncryption = true }) { push in
            let server = push.server
            let bob = try await server.token("bob")
            let phone = Phone(platform: "apns", token: PushHarness.apnsToken(1))
            #expect(try await server.request("PUT", "/v1/devices/phone", token: bob, body: phone.registration).status == 200)
            let (p256dh, auth) = phone.keys.registration
            func register(_ keys: String, platform: String = "fcm", token: String = "fcm-1") async throws -> HTTPResult {
                try await server.request(
                    "PUT", "/v1/devices/other", token: bob, body: #"{"platform": "\#(platform)", "token": "\#(token)"\#(keys)}"#)
            }
            let refusals: [(String, String)] = [
                (#", "keys": {"p256dh": "\#(p256dh.dropLast(2))", "auth": "\#(auth)"}"#, "keys.p256dh"),
                (#", "keys": {"p256dh": "\#(String(repeating: "A", count: 87))", "auth": "\#(auth)"}"#, "keys.p256dh"),
                (#", "keys": {"p256dh": "\#(p256dh)", "auth": "\#(auth)AA"}"#, "keys.auth"),
                (#", "keys": {"p256dh": "\#(p256dh)", "auth": "not base64url!"}"#, "keys.auth"),
                (#", "keys": {"p256dh": "\#(p256dh)"}"#, "auth"),
            ]
            for (keys, field) in refusals {
                let refused = try await register(keys)
                #expect(refused.status == 400 && refused.errorCode == "invalid_request" && refused.text.contains(field), "\(keys): \(refused.text)")
            }
            let missing = try await register("")
            #expect(missing.status == 400 && missing.errorCode == "encryption_required", "\(missing.text)")
            // A browser's subscription carries its keys: it needs no others, and takes none.
            let browser = WebPushProviderTests.Browser(endpoint: push.fake.url + "/push/bob")
            #expect(try await server.request("PUT", "/v1/devices/laptop", token: bob, body: browser.registration).status == 200)
            let twice = try await server.request(
                "PUT", "/v1/devices/laptop", token: bob,
                body: #"{"platform": "webpush", "token": \#(String(reflecting: browser.subscription)), "keys": {"p256dh": "\#(p256dh)", "auth": "\#(auth)"}}"#)
            #expect(twice.status == 400 && twice.errorCode == "invalid_request", "\(twice.text)")
            #expect(try await push.devices(of: "bob") == ["laptop", "phone"], "nothing refused was stored")

            let listed = try WireJSON.decoder().decode(
                WireDeviceList.self, from: try await server.request("GET", "/v1/devices", token: bob).body)
            #expect(listed.devices.map(\.encrypted) == [true, true])
            let stored = try #require(try await server.environment.store.devices(of: "bob").first { $0.id == "phone" }?.keys)
            #expect(stored == PushEncryptionKeys(p256dh: phone.keys.publicKey, auth: phone.keys.auth))
        }
    }

    @Test("APNs, FCM and Expo read no words, no name, no sender: the device decrypts a full push's fields; its edit, deletion and clear likewise; a device without keys gets ids alone")
    func endToEnd() async throws {
        try await PushHarness.run(configure: { $0.push.content = .encrypted }) { push in
            let server = push.server
            let (alice, bob) = try await (
                server.token("alice", name: "Alice Liddell", picture: "https://example.com/alice.png"), server.token("bob", name: "Bob"))
            let team = try await server.createConversation(alice, kind: "group", title: "Falcon Team", members: ["bob"])
            let phone = Phone(platform: "apns", token: PushHarness.apnsToken(7))
            let pixel = Phone(platform: "fcm", token: "fcm-pixel")
            let expo = Phone(platform: "expo", token: "ExponentPushToken[encrypted]")
            for (device, registration) in [("phone", phone.registration), ("pixel", pixel.registration), ("rn", expo.registration)] {
                #expect(try await server.request("PUT", "/v1/devices/\(device)", token: bob, body: registration).status == 200)
            }
            let oldPhone = PushHarness.apnsToken(8)
            try await push.register(bob, device: "old-phone", platform: "apns", pushToken: oldPhone)
            let posted = try await server.post(alice, to: team, id: "secret-1", text: Self.secret)

            func fcm() -> [RecordedRequest] { push.fake.requests(to: "/v1/projects") }
            func expoSends() -> [RecordedRequest] { push.fake.requests(to: "/--/api/v2/push/send") }
            func fcmData(_ request: RecordedRequest) -> [String: Any]? {
                (request.json?["message"] as? [String: Any])?["data"] as? [String: Any]
            }
            func expoData(_ request: RecordedRequest) -> [String: Any]? { request.jsonArray?.first?["data"] as? [String: Any] }
            _ = try await push.fake.wait("the alert on each service") { _ in
                push.apns(phone.token).count == 1 && push.apns(oldPhone).count == 1 && fcm().count == 1 && expoSends().count == 1
            }
            let apns = try #require(push.apns(phone.token).first)
            for (service, request) in [("APNs", apns), ("FCM", fcm()[0]), ("Expo", expoSends()[0])] {
                for secret in ["4721", "Alice", "Falcon", #""alice""#, "example.com"] {
                    #expect(!request.text.contains(secret), "\(service) reads \(secret): \(request.text)")
                }
                #expect(request.text.contains("secret-1") && request.text.contains(#""encrypted""#), "\(service): ids in clear")
            }
            // In clear: what shows something should decryption fail, and the ids to fetch the rest with.
            let aps = try #require(apns.json?["aps"] as? [String: Any])
            #expect(aps["alert"] as? [String: String] == ["body": "New message"] && aps["mutable-content"] as? Int == 1)
            #expect(aps["thread-id"] as? String == team && aps["badge"] as? Int == 1)
            let clear = try #require(apns.json).filter { $0.key != "aps" && $0.key != "encrypted" }
            #expect(Set(clear.keys) == ["type", "conversationId", "messageId", "seq", "notificationId", "category", "withheld"])
            #expect(clear["withheld"] as? String == "encrypted")
            let fcmMessage = try #require(fcm()[0].json?["message"] as? [String: Any])
            #expect(fcmMessage["notification"] == nil && (fcmMessage["android"] as? [String: Any])?["notification"] == nil,
                    "a data message: Android's messaging service runs and decrypts")
            #expect(expoSends()[0].jsonArray?.first?["mutableContent"] as? Bool == true)
            #expect(expoSends()[0].jsonArray?.first?["_contentAvailable"] as? Bool == true, "an app in the background decrypts")
            // Padded: the record (words, delimiter, zeros) is a whole number of 128-byte blocks.
            let sealedBody = try #require((apns.json?["encrypted"] as? String).flatMap { Data(base64URL: $0) })
            #expect((sealedBody.count - 86 - 16) % 128 == 0, "\(sealedBody.count) bytes")

            // What the device reads: a full push's fields.
            for (service, opened) in [
                ("APNs", try phone.open(apns.json)), ("FCM", try pixel.open(fcmData(fcm()[0]))),
                ("Expo", try expo.open(expoData(expoSends()[0]))),
            ] {
                #expect(opened["title"] as? String == "New message in Falcon Team", "\(service)")
                #expect(opened["body"] as? String == "Alice Liddell: " + Self.secret, "\(service)")
                #expect(opened["badge"] as? Int == 1, "\(service)")
                let data = try #require(opened["data"] as? [String: String])
                #expect(data["senderName"] == "Alice Liddell" && data["senderId"] == "alice" && data["isGroup"] == "true")
                #expect(data["conversationTitle"] == "Falcon Team" && data["senderAvatarURL"] == "https://example.com/alice.png")
                #expect(data["messageId"] == "secret-1" && data["seq"] == String(posted.seq) && data["withheld"] == nil)
            }
            // What the app's Notification Service Extension does with what APNs hands it (HeraldPresentation): opens
            // it, and shows a communication notification of it.
            let delivered = try #require(apns.json)
            let encrypted = try #require(EncryptedPush(userInfo: delivered))
            let shown = try encrypted.open(userInfo: delivered, decrypt: phone.keys.decrypt)
            #expect(shown.title == "New message in Falcon Team" && shown.body == "Alice Liddell: " + Self.secret)
            let chatStyle = try #require(CommunicationNotification(userInfo: shown.userInfo))
            #expect(chatStyle.senderName == "Alice Liddell" && chatStyle.groupName == "Falcon Team" && chatStyle.senderID == "alice")
            #expect(throws: EncryptedPush.Failure.undecryptable, "another device's keys: the extension fetches instead") {
                try encrypted.open(userInfo: delivered, decrypt: pixel.keys.decrypt)
            }
            #expect(WithheldPush(userInfo: delivered)?.messageID == "secret-1")
            #expect(throws: HeraldServer.WebPushEncryption.OpenFailure.unreadable, "another device's keys open nothing") {
                try pixel.open(apns.json)
            }
            // The device without keys: what `none` sends; its app fetches the words with its device key.
            let old = try #require(push.apns(oldPhone).first?.json)
            #expect(old["withheld"] as? String == "none" && old["encrypted"] == nil && !push.apns(oldPhone)[0].text.contains("Alice"))

            // The edit's and the deletion's follow-ups, and the clear, are encrypted too.
            #expect(try await server.request(
                "PATCH", "/v1/conversations/\(team)/messages/secret-1", token: alice, body: #"{"text": "the code is 9000"}"#).status == 200)
            _ = try await push.fake.wait("the edit") { _ in push.apns(phone.token).count == 2 && fcm().count == 2 && expoSends().count == 2 }
            for (service, request, device, data) in [
                ("APNs", push.apns(phone.token)[1], phone, push.apns(phone.token)[1].json),
                ("FCM", fcm()[1], pixel, fcmData(fcm()[1])), ("Expo", expoSends()[1], expo, expoData(expoSends()[1])),
            ] {
                #expect(!request.text.contains("9000") && !request.text.contains("Alice"), "\(service): \(request.text)")
                let opened = try device.open(data)
                #expect(opened["body"] as? String == "Alice Liddell: the code is 9000", "\(service)")
                #expect((opened["data"] as? [String: String])?["type"] == "message_edited", "\(service)")
            }
            #expect(try await server.request("DELETE", "/v1/conversations/\(team)/messages/secret-1", token: alice).status == 200)
            _ = try await push.fake.wait("the deletion") { _ in push.apns(phone.token).count == 3 && fcm().count == 3 }
            let deletion = try phone.open(push.apns(phone.token)[2].json)
            #expect((deletion["data"] as? [String: String])?["type"] == "message_deleted" && deletion["body"] as? String == "This message was deleted")
            #expect(push.apns(phone.token)[2].json?["type"] as? String == "message_deleted", "what to do with it is in clear")

            try await server.post(alice, to: team, id: "second", text: "and another")
            _ = try await push.fake.wait("the second alert") { _ in push.apns(phone.token).count == 4 }
            let second = try #require(push.apns(phone.token)[3].json?["seq"] as? String)
            #expect(try await server.request(
                "POST", "/v1/conversations/\(team)/read", token: bob, body: #"{"upTo": \#(second), "device": "desk"}"#).status == 204)
            _ = try await push.fake.wait("the clear") { _ in push.apns(phone.token).count == 5 }
            let cleared = push.apns(phone.token)[4]
            #expect(cleared.json?["type"] as? String == "read" && cleared.json?["badge"] as? Int == 0)
            let opened = try phone.open(cleared.json)
            #expect(opened["data"] as? [String: String] == ["type": "read", "conversationId": team, "seq": second] && opened["badge"] as? Int == 0)
        }
    }

    @Test("a plaintext too large to encrypt within 4 KB sheds the picture, then goes as ids alone; every provider's encrypted payload of the heaviest alert is under 4 KB")
    func sizes() async throws {
        var job = PushPayloadTests.heaviestAlert()
        let keys = HeraldServer.PushKeyPair()
        job.device.keys = PushEncryptionKeys(p256dh: keys.publicKey, auth: keys.auth)
        job.content.withheld = .encrypted
        let apns = APNsProvider.payload(for: job, localized: true, encrypt: true)
        #expect(apns.count <= 4_096, "APNs: \(apns.count)")
        // Ids that large leave no room: the words are withheld. With ids of a usual size, they go encrypted.
        #expect(apns.json?["withheld"] as? String == "none")
        let fcm = try #require(
            (try JSONSerialization.jsonObject(with: FCMProvider.body(for: job, maxAge: .seconds(3600), localized: true, encrypt: true))
                as? [String: Any])?["message"] as? [String: Any])
        #expect(try JSONSerialization.data(withJSONObject: fcm.filter { $0.key != "token" }).count <= 4_096)
        let http = try PushHTTP(caFile: nil)
        var expo = ExpoProvider(url: "https://exp.host", accessToken: nil, http: http, maxAge: .seconds(3600), concurrency: 1, encrypt: true)
            .message(for: job)
        await http.shutdown()
        expo["to"] = nil
        #expect(try JSONSerialization.data(withJSONObject: expo).count <= 4_096)

        job = PushPayloadTests.heaviestAlert(id: "9b2f0c56-55a3-4f6e-9d0c-2f1ab8c1e7d4")
        let plain = HeraldServer.PushKeyPair()
        job.device.keys = PushEncryptionKeys(p256dh: plain.publicKey, auth: plain.auth)
        job.content.withheld = .encrypted
        let heavy = try #require(APNsProvider.payload(for: job, localized: true, encrypt: true).json)
        let heavyField = try #require(heavy["encrypted"] as? String)
        let heavyBody = try #require(Data(base64URL: heavyField))
        let whole = try JSONSerialization.jsonObject(with: try plain.decrypt(heavyBody)) as? [String: Any]
        #expect((whole?["data"] as? [String: String])?["senderAvatarURL"] != nil && whole?["localization"] != nil)
        // Words no formatter makes (they are clipped to 400 bytes): first the picture and the keys go, then the words.
        job.content.body = String(repeating: "b", count: 1_200)
        let trimmed = try #require(APNsProvider.payload(for: job, localized: true, encrypt: true).json)
        #expect(trimmed.count > 0)
        let field = try #require(trimmed["encrypted"] as? String)
        let trimmedBody = try #require(Data(base64URL: field))
        let opened = try JSONSerialization.jsonObject(with: try plain.decrypt(trimmedBody)) as? [String: Any]
        #expect((opened?["data"] as? [String: String])?["senderAvatarURL"] == nil && opened?["localization"] == nil)
        #expect(opened?["body"] as? String == job.content.body)
        job.content.body = String(repeating: "b", count: 2_400)
        let alone = try #require(APNsProvider.payload(for: job, localized: true, encrypt: true).json)
        #expect(alone["encrypted"] == nil && alone["withheld"] as? String == "none")
        let aloneAlert = (alone["aps"] as? [String: Any])?["alert"] as? [String: Any]
        #expect(aloneAlert?["body"] as? String == "New message" && aloneAlert?["title"] == nil)
        // A test notification has no words to keep: it goes as it is.
        var test = job
        test.content = .test(badge: 1)
        #expect(!SealedPush(test, encrypt: true, localized: false).isEncrypted)
    }
}

extension Data {
    /// The JSON object in these bytes, if they hold one.
    fileprivate var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: self)) as? [String: Any] }
}
