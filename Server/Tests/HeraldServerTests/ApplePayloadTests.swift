import Foundation
import HeraldCore
@testable import HeraldRecords
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// What APNs receives, as iOS shows it: a deletion replaces the message's notification visibly and passively under
/// its collapse id; the keys of the app's own strings only when the operator says the app ships them; and the example
/// app's `.apns` files for the simulator are exactly what the encoder writes.
@Suite("APNs payloads", .timeLimit(.minutes(1)))
struct ApplePayloadTests {
    static let alice = Person(id: "alice", displayName: "Alice Johnson")
    static let bob = DeviceRegistration(id: "bobs-iphone", userID: "bob", platform: .apns, token: String(repeating: "a", count: 64))

    /// A message from Alice, as pushed to Bob.
    static func message(_ id: String, seq: Int64, text: String, in conversation: Conversation) -> PushJob {
        let incoming = IncomingMessage(
            message: Message(id: id, conversationID: conversation.id, senderID: "alice", text: text, sentAt: Date(), seq: seq),
            conversation: conversation, sender: alice)
        let content = PushContent(alert: incoming, badge: 1, viewer: "bob")
        return PushJob(id: seq, kind: .alert, device: bob, content: content, createdAt: Date(), attempts: 0)
    }

    static let direct = Conversation(id: "alice-bob", kind: .direct)
    static let team = Conversation(id: "team", kind: .group, title: "Team Chat")

    /// The four pushes the example's files hold: a direct message, a group message, an edit of the direct one, and
    /// its deletion.
    static func examples() -> [(name: String, job: PushJob)] {
        let first = message("m1", seq: 41, text: "Are we still on for lunch?", in: direct)
        let group = message("m2", seq: 42, text: "Standup in 5, @bob", in: team)
        let edited = message("m1", seq: 41, text: "Are we still on for lunch at one?", in: direct)
        let notification = first.content.notificationID!
        let edit = PushContent.followUp(
            .edited, of: direct.id, messageID: "m1", seq: 41, shownAs: notification, badge: 1, words: edited.content)
        let deletion = PushContent.followUp(.deleted, of: direct.id, messageID: "m1", seq: 41, shownAs: notification, badge: 0)
        return [
            ("direct-message", first),
            ("group-message", group),
            ("edit", PushJob(id: 43, kind: .follow, device: bob, content: edit, createdAt: Date(), attempts: 0)),
            ("deletion", PushJob(id: 44, kind: .follow, device: bob, content: deletion, createdAt: Date(), attempts: 0)),
        ]
    }

    static func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("a deletion is a visible, passive alert under the message's collapse id: no words of it, no sound, content-available for an app that runs")
    func deletion() throws {
        let (_, job) = try #require(Self.examples().last)
        #expect(APNsProvider.isVisible(job))
        let body = try Self.json(APNsProvider.payload(for: job))
        let aps = try #require(body["aps"] as? [String: Any])
        #expect((aps["alert"] as? [String: Any])?["body"] as? String == "This message was deleted")
        #expect((aps["alert"] as? [String: Any])?["title"] == nil)
        #expect(aps["interruption-level"] as? String == "passive")
        #expect(aps["sound"] == nil && aps["mutable-content"] == nil)
        #expect(aps["content-available"] as? Int == 1)
        #expect(aps["thread-id"] as? String == Self.direct.id)
        #expect(body["type"] as? String == "message_deleted")
        let first = try #require(Self.examples().first?.job)
        // The collapse id is the message's notification's: iOS replaces it.
        #expect(PushIdentity.collapseKey(for: job.content) == first.content.notificationID)
        #expect(body["notificationId"] as? String == first.content.notificationID)
        let text = String(decoding: APNsProvider.payload(for: job), as: UTF8.self)
        #expect(!text.contains("lunch") && !text.contains("Alice"), "nothing of the deleted message")
        // A clear stays a background push.
        let clear = PushJob(id: 9, kind: .clear, device: Self.bob, content: PushContent(clear: "c", readUpTo: 3, badge: 0), createdAt: Date(), attempts: 0)
        #expect(!APNsProvider.isVisible(clear))
    }

    @Test("the keys of the app's own strings go only where the operator says the app ships them (HERALD_PUSH_LOC_KEYS=1)")
    func localizationKeys() throws {
        let group = Self.examples()[1].job
        let plain = try #require(try Self.json(APNsProvider.payload(for: group))["aps"] as? [String: Any])
        let plainAlert = try #require(plain["alert"] as? [String: Any])
        #expect(plainAlert["title"] as? String == "New message in Team Chat")
        #expect(plainAlert.keys.filter { $0.contains("loc-") }.isEmpty, "\(plainAlert.keys.sorted())")
        let localized = try #require(try Self.json(APNsProvider.payload(for: group, localized: true))["aps"] as? [String: Any])
        #expect((localized["alert"] as? [String: Any])?["loc-key"] as? String == "HERALD_GROUP_MESSAGE")
        let fcm = try Self.json(FCMProvider.body(for: group, maxAge: .seconds(60)))
        let android = (((fcm["message"] as? [String: Any])?["android"] as? [String: Any])?["notification"] as? [String: Any]) ?? [:]
        #expect(android["body_loc_key"] == nil && android["title_loc_key"] == nil)
    }

    @Test("the example's .apns files are what the encoder writes (HERALD_WRITE_PAYLOADS=1 writes them anew)")
    func exampleFiles() throws {
        let folder = packageRoot.appendingPathComponent("Examples/HeraldChatApp/Payloads")
        let write = ProcessInfo.processInfo.environment["HERALD_WRITE_PAYLOADS"] == "1"
        for (name, job) in Self.examples() {
            var payload = try Self.json(APNsProvider.payload(for: job))
            // What `xcrun simctl push` and a file dropped on the simulator need to know which app it is for.
            payload["Simulator Target Bundle"] = "dev.herald.example.chat"
            let file = folder.appendingPathComponent("\(name).apns")
            if write {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let data = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
                try (data + Data("\n".utf8)).write(to: file)
            }
            let kept = try Self.json(try Data(contentsOf: file))
            #expect(NSDictionary(dictionary: kept).isEqual(to: payload), "\(name).apns differs from the encoder's: run the test with HERALD_WRITE_PAYLOADS=1")
        }
        // A file for each, and no other.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".apns") }.sorted()
        #expect(files == ["deletion.apns", "direct-message.apns", "edit.apns", "group-message.apns"])
    }
}
