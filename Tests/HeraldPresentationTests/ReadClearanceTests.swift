import Foundation
import HeraldPresentation
import Testing

/// A Mark as read answered on this device clears this device: the conversation's notifications up to the marked
/// message, and the badge by what they stood for.
@Suite("Mark as read on this device")
struct ReadClearanceTests {
    static let t0 = Date(timeIntervalSince1970: 1_000_000)

    static func delivered(
        _ identifier: String, _ conversation: String, seq: Int64?, at seconds: Double, badge: Int? = nil,
        type: String = "message", count: Int? = nil
    ) -> DeliveredNotification {
        var userInfo: [AnyHashable: Any] = ["type": type, "conversationId": conversation]
        if let seq { userInfo["seq"] = String(seq) }
        if let count { userInfo["count"] = String(count) }
        return DeliveredNotification(identifier: identifier, date: t0.addingTimeInterval(seconds), badge: badge, userInfo: userInfo)
    }

    @Test("clears the conversation's notifications at or below the mark and lowers the badge by them; later ones, other chats', the app's own and a Reply not sent stay")
    func clearsThisDevice() {
        let delivered = [
            Self.delivered("herald-5", "c1", seq: 5, at: 1, badge: 1),
            Self.delivered("herald-6", "c2", seq: 6, at: 2, badge: 2),
            Self.delivered("herald-7", "c1", seq: 7, at: 3, badge: 3),  // the answered one: iOS already took it away
            Self.delivered("herald-9", "c1", seq: 9, at: 5, badge: 4),  // after the mark
            Self.delivered("herald-reply-7-00", "c1", seq: 7, at: 4, type: "reply_not_sent"),
            Self.delivered("order-1", "c1", seq: 1, at: 0.5, type: "order"),
            Self.delivered("herald-x", "c1", seq: nil, at: 0.7),
        ]
        let clearance = ReadClearance(conversationID: "c1", upTo: 7, delivered: delivered)
        #expect(clearance.identifiers == ["herald-5", "herald-7"])
        #expect(clearance.badge == 2, "the newest badge (4, the message after the mark) less the two read")
    }

    @Test("a burst's notification stands for its count; the badge never goes below 0; a deletion's notice goes but counts nothing")
    func burstsAndFloor() {
        let burst = ReadClearance(conversationID: "c1", upTo: 12, delivered: [
            Self.delivered("herald-10", "c1", seq: 12, at: 1, badge: 3, count: 3),
            Self.delivered("herald-8", "c1", seq: 8, at: 0.5, type: "message_deleted"),
        ])
        #expect(burst.identifiers == ["herald-10", "herald-8"])
        #expect(burst.badge == 0)
        let floor = ReadClearance(conversationID: "c1", upTo: 12, delivered: [
            Self.delivered("herald-10", "c1", seq: 12, at: 1, badge: 1, count: 5),
        ])
        #expect(floor.badge == 0)
    }

    @Test("the badge from the newest reading: the app's own badge when newer than any push; a local notification after it is not in it")
    func readings() {
        // The app set 4 after the push of seq 5 (badge 2); then posted a local notification of seq 6 (no badge).
        let delivered = [
            Self.delivered("herald-5", "c1", seq: 5, at: 1, badge: 2),
            Self.delivered("herald-6", "c1", seq: 6, at: 3),
        ]
        let clearance = ReadClearance(
            conversationID: "c1", upTo: 6, delivered: delivered, lastBadgeSet: BadgeReading(value: 4, date: Self.t0.addingTimeInterval(2)))
        #expect(clearance.identifiers == ["herald-5", "herald-6"])
        #expect(clearance.badge == 3, "4 counted the message of seq 5, not the later local one of seq 6")
        // No reading at all: the badge is left as it is.
        #expect(ReadClearance(conversationID: "c1", upTo: 6, delivered: [Self.delivered("herald-6", "c1", seq: 6, at: 3)]).badge == nil)
    }

    @Test("the answered notification listed twice (delivered and answered) counts once")
    func answeredOnce() {
        let answered = Self.delivered("herald-7", "c1", seq: 7, at: 3, badge: 2)
        let clearance = ReadClearance(conversationID: "c1", upTo: 7, delivered: [answered, answered])
        #expect(clearance.identifiers == ["herald-7"])
        #expect(clearance.badge == 1)
    }

    @Test("Herald's clear from another device removes the conversation's notifications but a Reply that was not sent")
    func clearFromElsewhere() {
        #expect(ReadClearance.clearRemoves(userInfo: ["type": "message", "conversationId": "c1", "seq": "7"]))
        #expect(ReadClearance.clearRemoves(userInfo: ["type": "message_deleted", "conversationId": "c1"]))
        #expect(ReadClearance.clearRemoves(userInfo: ["aps": ["alert": "the app's own"]]), "what shares the thread goes, as before")
        #expect(ReadClearance.clearRemoves(userInfo: ["type": FailedReply.type, "conversationId": "c1"]) == false)
    }
}
