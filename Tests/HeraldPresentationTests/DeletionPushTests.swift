import Foundation
import HeraldPresentation
import Testing

/// The server sends a deletion as a visible, passive alert under the message's collapse id ("Message deleted"), its
/// data beside `aps` as before: the extension shows it as it came, the foreground shows nothing and removes the
/// notification, the background path removes it.
@Suite("A deleted message's push")
struct DeletionPushTests {
    static let deletion = #"""
        {"aps": {"alert": {"body": "Message deleted"}, "interruption-level": "passive", "content-available": 1,
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
        #expect(ServiceExtensionWork(userInfo: message) == .message(withheld: WithheldPush(userInfo: message)))
        #expect(ServiceExtensionWork(userInfo: message) != .message(withheld: nil))
    }

    @Test("in the foreground: nothing shown, the notification removed and the badge set")
    func foreground() throws {
        #expect(ForegroundPresentation(userInfo: try Self.payload(Self.deletion))
                == .hide(carryingOut: .withdraw(conversationID: "c1", notificationID: "herald-7", badge: 2)))
        // Without the notification's identifier there is nothing to remove, and still nothing is shown.
        let incomplete = try Self.payload(#"{"aps": {"alert": {"body": "Message deleted"}}, "type": "message_deleted", "conversationId": "c1", "messageId": "m1"}"#)
        #expect(ForegroundPresentation(userInfo: incomplete) == .hide(carryingOut: .other))
    }
}
