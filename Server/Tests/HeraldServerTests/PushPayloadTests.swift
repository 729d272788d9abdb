import Foundation
import HeraldCore
@testable import HeraldRecords
@testable import HeraldServer
import Testing

/// What a push carries is bounded: however heavy the characters of a message, its name and its group's title, every
/// provider's payload fits the services' 4 KB, so no message's push is dropped for its size.
@Suite("Push payload sizes", .timeLimit(.minutes(1)))
struct PushPayloadTests {
    /// The heaviest alert valid input can make: ids of 128 bytes of slashes and quotes (each escaped in JSON), a name
    /// and a title at their 800-byte limit, a text of heavy characters and control characters, a picture just short
    /// of the longest a push carries, and every flag set. (`id`: other ids, with the rest as heavy.)
    static func heaviestAlert(id: String = String(repeating: "/\"", count: 64)) -> PushJob {
        let name = String(repeating: "😀", count: 200)
        let title = String(repeating: "😀", count: 200)
        let text = String(repeating: "a" + String(repeating: "\u{0301}", count: 100) + "\u{1}\u{2028}/", count: 50)
        let incoming = IncomingMessage(
            message: Message(id: id, conversationID: id, senderID: id, text: text, imageURL: nil, sentAt: Date(), seq: 9_999_999_999),
            conversation: Conversation(id: id, kind: .group, title: title),
            sender: Person(id: id, displayName: name, avatarURL: URL(string: "https://example.com/" + String(repeating: "/a", count: 69))))
        let device = DeviceRegistration(id: id, userID: id, platform: .apns, token: String(repeating: "a", count: 200))
        var content = PushContent(alert: incoming, badge: 99_999, viewer: id, quiet: false)
        content.timeSensitive = true
        content.mentioned = true
        return PushJob(id: 1, kind: .alert, device: device, content: content, createdAt: Date(), attempts: 0)
    }

    @Test("every provider's payload of the heaviest alert is under 4 KB, its words clipped with ...")
    func heaviest() async throws {
        let job = Self.heaviestAlert()
        let body = try #require(job.content.body)
        #expect(body.hasSuffix("..."))
        #expect(job.content.senderAvatarURL != nil && job.content.senderName?.hasSuffix("...") == true)
        #expect(job.content.localization?.body?.arguments.count == 2 && job.content.conversationTitle != nil)
        let apns = APNsProvider.payload(for: job, localized: true)
        let webPush = WebPushProvider.payload(for: job)
        let fcm = try #require(
            (try JSONSerialization.jsonObject(with: FCMProvider.body(for: job, maxAge: .seconds(3600), localized: true)) as? [String: Any])?["message"]
                as? [String: Any])
        var fcmPayload = fcm
        fcmPayload["token"] = nil  // the token is the address, not the payload FCM counts
        let fcmBytes = try JSONSerialization.data(withJSONObject: fcmPayload).count
        let http = try PushHTTP(caFile: nil)
        let expo = ExpoProvider(url: "https://exp.host", accessToken: nil, http: http, maxAge: .seconds(3600), concurrency: 1)
        var expoMessage = expo.message(for: job)
        await http.shutdown()
        expoMessage["to"] = nil
        let expoBytes = try JSONSerialization.data(withJSONObject: expoMessage).count
        #expect(apns.count <= 4_096, "APNs: \(apns.count)")
        #expect(webPush.count <= WebPushProvider.maxPayload, "Web Push: \(webPush.count)")
        #expect(fcmBytes <= 4_096, "FCM: \(fcmBytes)")
        #expect(expoBytes <= 4_096, "Expo: \(expoBytes)")
        let decoded = try #require(try JSONSerialization.jsonObject(with: webPush) as? [String: Any])
        #expect((decoded["title"] as? String)?.hasPrefix("New message in 😀😀") == true)
    }

    @Test("a picture whose address is longer than a push carries is left out; the sender's name and id stay")
    func longPicture() {
        func content(picture: String) -> PushContent {
            PushContent(alert: IncomingMessage(
                message: Message(id: "m", conversationID: "c", senderID: "ann", text: "Hi", sentAt: Date(), seq: 1),
                conversation: Conversation(id: "c", kind: .direct),
                sender: Person(id: "ann", displayName: "Ann", avatarURL: URL(string: picture))), badge: 1)
        }
        let fits = "https://example.com/" + String(repeating: "a", count: PushContent.maxPictureBytes - 23)
        #expect(content(picture: fits).senderAvatarURL == fits)
        let long = content(picture: fits + "a")
        #expect(long.senderAvatarURL == nil)
        #expect(long.senderName == "Ann" && long.data["senderId"] == "ann")
    }

    @Test("words that fit are left whole; clipping keeps whole characters and counts JSON's escapes")
    func clipping() {
        #expect(PushContent.clipped("Lunch at one?", toJSONBytes: 20) == "Lunch at one?")
        #expect(PushContent.clipped("abcdefghij", toJSONBytes: 8) == "abcde...")
        #expect(PushContent.clipped("\u{1}\u{1}\u{1}", toJSONBytes: 12) == "\u{1}...", "a control character is six bytes")
        let accented = "e\u{0301}e\u{0301}e\u{0301}"
        #expect(PushContent.clipped(accented, toJSONBytes: 7) == "e\u{0301}...", "never half a character")
    }
}
