import Crypto
import Foundation
import HeraldCore
@testable import HeraldRecords
@testable import HeraldServer
import Testing

/// The W3C Push API's declarative push message parser (https://w3c.github.io/push-api/#declarative-push-message),
/// its steps followed one by one, with the Notifications API's "create a notification" steps it runs: what a
/// browser that implements Declarative Web Push makes of a push's bytes, or nil (failure: the push is an ordinary
/// one, for the service worker alone). Stricter than a browser where WebIDL would convert a value (a number for a
/// string): Herald's payload should never need converting.
struct DeclarativePushParser {
    /// A JSON value with its type as written (JSONDecoder never takes a number for a boolean or the reverse).
    indirect enum JSON: Decodable, Equatable {
        case string(String), number(Double), bool(Bool), object([String: JSON]), array([JSON]), null

        init(from decoder: Decoder) throws {
            let value = try decoder.singleValueContainer()
            if value.decodeNil() { self = .null }
            else if let bool = try? value.decode(Bool.self) { self = .bool(bool) }
            else if let number = try? value.decode(Double.self) { self = .number(number) }
            else if let string = try? value.decode(String.self) { self = .string(string) }
            else if let array = try? value.decode([JSON].self) { self = .array(array) }
            else { self = .object(try value.decode([String: JSON].self)) }
        }

        var string: String? { if case .string(let text) = self { text } else { nil } }
        var bool: Bool? { if case .bool(let flag) = self { flag } else { nil } }
    }

    struct Result {
        var title: String
        var options: [String: JSON]
        /// The notification's navigation URL, parsed against the base URL.
        var navigate: URL
        var appBadge: UInt64?
        var mutable: Bool
    }

    /// The NotificationOptions members and the JSON type each must have.
    static let stringMembers = ["lang", "body", "tag", "image", "icon", "badge", "navigate"]
    static let booleanMembers = ["renotify", "silent", "requireInteraction"]

    static func parse(_ bytes: Data, baseURL: URL) -> Result? {
        // 1. Parse JSON bytes to an Infra value; failure on an exception. 2. It must be a map.
        guard case .object(let message)? = try? JSONDecoder().decode(JSON.self, from: bytes) else { return nil }
        // 3, 4. message["web_push"] exists and is 8030 (a number, not a string or a boolean).
        guard message["web_push"] == .number(8030) else { return nil }
        // 5-7. message["notification"] exists and is a map.
        guard case .object(let input)? = message["notification"] else { return nil }
        // 8-10. notification["title"] exists and is a string.
        guard let title = input["title"]?.string else { return nil }
        // Converted to NotificationOptions: each member it has must convert.
        for member in stringMembers where input[member] != nil {
            guard input[member]?.string != nil else { return nil }
        }
        for member in booleanMembers where input[member] != nil {
            guard input[member]?.bool != nil else { return nil }
        }
        if let dir = input["dir"] {
            guard let dir = dir.string, ["auto", "ltr", "rtl"].contains(dir) else { return nil }
        }
        if let actions = input["actions"] {
            guard case .array(let list) = actions else { return nil }
            for action in list {
                guard case .object(let fields) = action, fields["action"]?.string != nil, fields["title"]?.string != nil else { return nil }
            }
        }
        // Create a notification: URLs parsed against the base URL (failure throws); renotify needs a tag; silent
        // takes no vibration.
        guard let navigateText = input["navigate"]?.string,
              let navigate = URL(string: navigateText, relativeTo: baseURL)?.absoluteURL
        else { return nil }  // a notification without a navigation URL: failure
        if let icon = input["icon"]?.string, URL(string: icon, relativeTo: baseURL) == nil { return nil }
        if input["renotify"]?.bool == true, (input["tag"]?.string ?? "").isEmpty { return nil }
        if input["silent"]?.bool == true, input["vibrate"] != nil { return nil }
        // app_badge: a 64-bit unsigned integer, or left out.
        var appBadge: UInt64?
        if case .number(let badge)? = message["app_badge"], badge >= 0, badge == badge.rounded(), badge < 0x1p64 {
            appBadge = UInt64(badge)
        }
        // mutable: a boolean, false when left out.
        let mutable = message["mutable"]?.bool ?? false
        return Result(title: title, options: input, navigate: navigate, appBadge: appBadge, mutable: mutable)
    }
}

@Suite("Declarative Web Push payloads", .timeLimit(.minutes(2)))
struct DeclarativePushTests {
    static let page = "https://chat.example.com/app/"
    /// The base URL a browser parses `navigate` against: the service worker's scope.
    static let scope = URL(string: "https://chat.example.com/")!

    static func subscription(page: String?) -> String {
        var json: [String: Any] = [
            "endpoint": "https://push.example.com/x",
            "keys": ["p256dh": P256.KeyAgreement.PrivateKey().publicKey.x963Representation.base64URLEncodedString(),
                     "auth": Data(repeating: 7, count: 16).base64URLEncodedString()],
        ]
        json["page"] = page
        return String(decoding: try! JSONSerialization.data(withJSONObject: json), as: UTF8.self)
    }

    static func job(_ content: PushContent, kind: PushJob.Kind = .alert, page: String? = Self.page) -> PushJob {
        let device = DeviceRegistration(id: "laptop", userID: "bob", platform: .webpush, token: subscription(page: page))
        return PushJob(id: 1, kind: kind, device: device, content: content, createdAt: Date(), attempts: 0)
    }

    static func alert(conversation: String = "c/1 ü+", quiet: Bool = false) -> PushContent {
        PushContent(alert: IncomingMessage(
            message: Message(id: "m-1", conversationID: conversation, senderID: "ann", text: "Lunch at one?", sentAt: Date(), seq: 12),
            conversation: Conversation(id: conversation, kind: .direct),
            sender: Person(id: "ann", displayName: "Ann", avatarURL: URL(string: "https://example.com/ann.png"))),
            badge: 3, viewer: "bob", quiet: quiet)
    }

    static func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// `notification.data` of a declarative payload.
    static func notificationData(_ payload: Data) throws -> [String: Any] {
        let notification = try #require(try object(payload)["notification"] as? [String: Any])
        return try #require(notification["data"] as? [String: Any])
    }

    @Test("an alert parses as a declarative push message: title, body, navigate to the chat on the page, tag, badge, mutable; data holds what the service worker reads")
    func alertIsDeclarative() throws {
        let job = Self.job(Self.alert())
        let payload = WebPushProvider.payload(for: job)
        let parsed = try #require(DeclarativePushParser.parse(payload, baseURL: Self.scope))
        #expect(parsed.title == "New message from Ann")
        #expect(parsed.options["body"]?.string == "Lunch at one?")
        // Absolute as sent (WebKit parses it without a base), the conversation's id encoded as encodeURIComponent does.
        #expect(parsed.options["navigate"]?.string == Self.page + "#chat=c%2F1%20%C3%BC%2B")
        #expect(URLComponents(url: parsed.navigate, resolvingAgainstBaseURL: false)?.percentEncodedFragment == "chat=c%2F1%20%C3%BC%2B")
        #expect(parsed.options["tag"]?.string == job.content.notificationID)
        #expect(parsed.options["silent"]?.bool == false)
        #expect(parsed.options["icon"]?.string == "https://example.com/ann.png")
        #expect(parsed.appBadge == 3)
        #expect(parsed.mutable)
        let data = try Self.notificationData(payload)
        let plain = WebPushProvider.plainPayload(for: job)
        let sorted = { (object: [String: Any]) in try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) }
        #expect(try sorted(data) == sorted(plain), "notification.data is exactly the plain payload")
        #expect(data["conversationId"] as? String == "c/1 ü+" && data["messageId"] as? String == "m-1" && data["seq"] as? String == "12")
        #expect(data["title"] as? String == "New message from Ann" && data["badge"] as? Int == 3)
        #expect(payload.count <= WebPushProvider.maxPayload)
    }

    @Test("quiet hours: silent; a picture that is not http(s) is no icon")
    func quietAndIcon() throws {
        var content = Self.alert(quiet: true)
        content.senderAvatarURL = "javascript:alert(1)"
        let parsed = try #require(DeclarativePushParser.parse(WebPushProvider.payload(for: Self.job(content)), baseURL: Self.scope))
        #expect(parsed.options["silent"]?.bool == true)
        #expect(parsed.options["icon"] == nil)
    }

    @Test("an edit's follow-up stays plain: a browser would show a declarative one even when the notification it changes is gone")
    func edit() throws {
        let words = Self.alert()
        let content = PushContent.followUp(.edited, of: words.conversationID, messageID: "m-1", seq: 12, shownAs: "herald-12", badge: 2, words: words)
        let payload = WebPushProvider.payload(for: Self.job(content, kind: .follow))
        #expect(DeclarativePushParser.parse(payload, baseURL: Self.scope) == nil)
        let plain = try Self.object(payload)
        #expect(plain["type"] as? String == "message_edited" && plain["notificationId"] as? String == "herald-12")
        #expect(plain["body"] as? String == "Lunch at one?" && plain["web_push"] == nil)
    }

    @Test("the test notification parses: the page itself, tagged herald-test")
    func testNotification() throws {
        let payload = WebPushProvider.payload(for: Self.job(.test(badge: 4)))
        let parsed = try #require(DeclarativePushParser.parse(payload, baseURL: Self.scope))
        #expect(parsed.title == "Herald")
        #expect(parsed.options["navigate"]?.string == Self.page)
        #expect(parsed.options["tag"]?.string == "herald-test")
        let data = try Self.notificationData(payload)
        #expect(data["type"] as? String == "test")
        #expect(parsed.appBadge == 4)
    }

    @Test("clears and deletions stay the plain JSON: nothing to show, nothing a browser would show by itself")
    func clearsAndDeletionsStayPlain() throws {
        let clear = Self.job(PushContent(clear: "c1", readUpTo: 12, badge: 0), kind: .clear)
        let deletion = Self.job(PushContent.followUp(.deleted, of: "c1", messageID: "m-1", seq: 12, shownAs: "herald-12", badge: 1), kind: .follow)
        for job in [clear, deletion] {
            let payload = WebPushProvider.payload(for: job)
            #expect(DeclarativePushParser.parse(payload, baseURL: Self.scope) == nil)
            let object = try Self.object(payload)
            #expect(object["web_push"] == nil && object["conversationId"] as? String == "c1")
        }
        #expect(try Self.object(WebPushProvider.payload(for: clear))["type"] as? String == "read")
        #expect(try Self.object(WebPushProvider.payload(for: deletion))["type"] as? String == "message_deleted")
    }

    @Test("a subscription without a page (registered before pages were sent) gets the plain JSON")
    func noPage() throws {
        let payload = WebPushProvider.payload(for: Self.job(Self.alert(), page: nil))
        #expect(DeclarativePushParser.parse(payload, baseURL: Self.scope) == nil)
        #expect(try Self.object(payload)["title"] as? String == "New message from Ann")
    }

    @Test("the heaviest alert: declarative when it fits 4 KB, else the plain JSON, never over")
    func heaviest() throws {
        var job = PushPayloadTests.heaviestAlert()
        job.device = DeviceRegistration(id: "laptop", userID: "bob", platform: .webpush,
                                        token: Self.subscription(page: "https://chat.example.com/" + String(repeating: "a", count: 480)))
        let payload = WebPushProvider.payload(for: job)
        #expect(payload.count <= WebPushProvider.maxPayload, "\(payload.count)")
        let object = try Self.object(payload)
        #expect(object["web_push"] != nil || (object["title"] as? String)?.hasPrefix("New message in") == true)
    }

    @Test("a page: an http(s) URL with a host, no user, password or fragment, at most 512 bytes of URL characters")
    func pages() {
        for good in ["https://chat.example.com/", "http://localhost:8080/", "https://example.com/herald/?x=1", "https://[::1]:8443/a"] {
            #expect(WebPushSubscription.page(good) == good, "\(good)")
        }
        for bad in ["", "/", "chat.example.com/", "javascript:alert(1)", "data:text/html,hi", "ftp://example.com/",
                    "https://user:pw@example.com/", "https://user@example.com/", "https://example.com/#chat=1", "https://example.com/#",
                    "https://example.com/a b", "https://example.com/\u{0}", "https://exämple.com/", "https://example.com/\"><script>",
                    "https:///path", "https://example.com/" + String(repeating: "a", count: 500)] {
            #expect(WebPushSubscription.page(bad) == nil, "\(bad)")
        }
    }

    @Test("registering: a bad page is refused (400 invalid_request), a good one kept in the token")
    func registration() async throws {
        try await TestServer.run { server in
            let bob = try await server.token("bob")
            func register(_ page: String?) async throws -> Int {
                var subscription = try #require(try JSONSerialization.jsonObject(with: Data(Self.subscription(page: nil).utf8)) as? [String: Any])
                subscription["endpoint"] = "https://fcm.googleapis.com/fcm/send/abc"
                subscription["page"] = page
                let token = String(decoding: try JSONSerialization.data(withJSONObject: subscription), as: UTF8.self)
                let body = String(decoding: try JSONSerialization.data(withJSONObject: ["platform": "webpush", "token": token]), as: UTF8.self)
                return try await server.request("PUT", "/v1/devices/laptop", token: bob, body: body).status
            }
            #expect(try await register("https://chat.example.com/") == 200)
            #expect(try await register("javascript:alert(1)") == 400)
            #expect(try await register("https://chat.example.com/#x") == 400)
            #expect(try await register(nil) == 200)
        }
    }
}
