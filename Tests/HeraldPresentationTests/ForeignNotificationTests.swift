import Foundation
import HeraldPresentation
import Testing

/// Herald shares the notification center's delegate with the app: only Herald's notifications are handled as
/// Herald's; the app's own are passed on, presented as the system would when the app has no delegate of its own, and
/// never open a Herald conversation.
@Suite("Notifications that are not Herald's")
struct ForeignNotificationTests {
    static func payload(_ json: String) throws -> [AnyHashable: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [AnyHashable: Any])
    }

    @Test("the app's own notifications are passed on, even with a thread, a conversationId-like key or Herald's keys half there")
    func passedOn() throws {
        let foreign = [
            #"{"aps": {"alert": "Your order shipped", "thread-id": "c1"}, "orderId": "42"}"#,
            #"{"conversationId": "c1", "type": "order_update"}"#,
            #"{"type": "message"}"#,
            #"{"type": "message", "conversationId": ""}"#,
            #"{"type": "message", "conversationId": 7}"#,
            #"{}"#,
        ]
        for json in foreign {
            let userInfo = try Self.payload(json)
            #expect(HeraldNotificationKind(userInfo: userInfo) == nil, "\(json)")
            #expect(ForegroundPresentation(userInfo: userInfo) == .passOn, "\(json)")
            #expect(ServiceExtensionWork(userInfo: userInfo) == .asItCame, "\(json)")
        }
        #expect(ForegroundOptions.systemDefault == [.banner, .list, .sound, .badge], "without the app's delegate: as the system would")
    }

    @Test("Herald's own: a message to the list and the badge (the engine shows the banner), a deletion and a clear hidden and carried out, a Reply not sent as a banner")
    func herald() throws {
        let message = try Self.payload(#"{"type": "message", "conversationId": "c1", "messageId": "m1", "seq": "7"}"#)
        #expect(HeraldNotificationKind(userInfo: message) == .message)
        #expect(ForegroundPresentation(userInfo: message) == .show([.list, .badge]))
        let local = try Self.payload(#"{"herald.conversation": "c1", "conversationId": "c1", "messageId": "m1", "type": "message"}"#)
        #expect(ForegroundPresentation(userInfo: local) == .show([.list, .badge]), "one HeraldUI posted")
        let edit = try Self.payload(#"{"type": "message_edited", "conversationId": "c1", "messageId": "m1", "notificationId": "herald-7"}"#)
        #expect(ForegroundPresentation(userInfo: edit) == .show([.list, .badge]))
        let clear = try Self.payload(#"{"aps": {"content-available": 1}, "type": "read", "conversationId": "c1", "badge": 0}"#)
        #expect(ForegroundPresentation(userInfo: clear) == .hide(carryingOut: .clear(conversationID: "c1", badge: 0)))
        let notSent = try Self.payload(#"{"type": "reply_not_sent", "conversationId": "c1", "seq": "7"}"#)
        #expect(ForegroundPresentation(userInfo: notSent) == .show([.banner, .list]))
    }

    @Test("a tap on a foreign notification opens nothing of Herald's; on Herald's, its conversation")
    func taps() throws {
        // What HeraldUI asks first: is it Herald's? Only then does NotificationAnswer decide.
        let foreign = try Self.payload(#"{"aps": {"alert": "Sale"}, "threadIdentifier": "c1", "conversationId": "c1"}"#)
        #expect(HeraldNotificationKind(userInfo: foreign) == nil)
        let herald = try Self.payload(#"{"type": "message", "conversationId": "c1", "seq": "7"}"#)
        #expect(HeraldNotificationKind(userInfo: herald) != nil)
        #expect(NotificationAnswer(action: NotificationAnswer.tapAction, userInfo: herald) == .open(conversationID: "c1"))
    }
}
