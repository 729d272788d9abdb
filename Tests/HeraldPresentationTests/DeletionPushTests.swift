import Foundation
import HeraldPresentation
import HeraldTestSupport
import Testing

/// The server sends a deletion as a visible, passive alert under the message's collapse id ("This message was deleted"), its
/// data beside `aps` as before: the extension shows it as it came, the foreground shows nothing and removes the
/// notification, the background path removes it.
@Suite("A deleted message's push")
struct DeletionPushTests {
    static let deletion = #"""
        {"aps": {"alert": {"body": "This message was deleted"}, "interruption-level": "passive", "content-available": 1,
                 "mutable-content": 1, "badge": 2, "thread-id": "c1"},
         "type": "message_deleted", "conversationId": "c1", "messageId": "m1", "notificationId": "herald-7", "badge": 2,
         "seq": "7"}
        """#

    static func payload(_ json: String) throws -> [AnyHashable: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [AnyHashable: Any])
    }

    @Test("read with its alert present: a withdrawal of herald-7 with the badge, what the background path carries out")
    func parsed() throws {
        let userInfo = try Self.payload(Self.deletion)
        #expect(RemoteNotification(userInfo: userInfo) == .withdraw(conversationID: "c1", notificationID: "herald-7", badge: 2))
        #expect(HeraldNotificationKind(userInfo: userInfo) == .deletion)
    }

    @Test("the server's own deletion payload (the example's deletion.apns, which the server's test holds to its encoder) is read the same way")
    func serversPayload() throws {
        let file = packageRoot.appendingPathComponent("Examples/HeraldChatApp/Payloads/deletion.apns")
        let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [AnyHashable: Any])
        guard case .withdraw(_, let notificationID, _) = RemoteNotification(userInfo: userInfo) else {
            Issue.record("not read as a withdrawal: \(userInfo)")
            return
        }
        #expect(notificationID.hasPrefix("herald-"))
        #expect(ServiceExtensionWork(userInfo: userInfo) == .asItCame)
        guard case .hide = ForegroundPresentation(userInfo: userInfo) else {
            Issue.record("shown in the foreground")
            return
        }
    }

    @Test("the extension hands it on as it came: never a communication notification, never filled in")
    func extensionLeavesIt() throws {
        let userInfo = try Self.payload(Self.deletion)
        #expect(ServiceExtensionWork(userInfo: userInfo) == .asItCame)
        #expect(CommunicationNotification(userInfo: userInfo) == nil)
        var withSender = userInfo
        withSender["senderId"] = "bob"
        withSender["senderName"] = "Bob"
        withSender["withheld"] = "sender"
        #expect(ServiceExtensionWork(userInfo: withSender) == .asItCame, "whatever else it carries")
        // A message's push, by contrast, is worked on.
        let message = try Self.payload(#"{"type": "message", "conversationId": "c1", "messageId": "m1", "withheld": "none"}"#)
        #expect(ServiceExtensionWork(userInfo: message) == .message(withheld: WithheldPush(userInfo: message), encrypted: nil))
        #expect(ServiceExtensionWork(userInfo: message) != .message(withheld: nil, encrypted: nil))
    }

    @Test("in the foreground: nothing shown, the notification removed and the badge set")
    func foreground() throws {
        #expect(ForegroundPresentation(userInfo: try Self.payload(Self.deletion))
                == .hide(carryingOut: .withdraw(conversationID: "c1", notificationID: "herald-7", badge: 2)))
        // Without the notification's identifier there is nothing to remove, and still nothing is shown.
        let incomplete = try Self.payload(#"{"aps": {"alert": {"body": "This message was deleted"}}, "type": "message_deleted", "conversationId": "c1", "messageId": "m1"}"#)
        #expect(ForegroundPresentation(userInfo: incomplete) == .hide(carryingOut: .other))
    }
}
