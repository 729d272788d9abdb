import Foundation
import HeraldCore

/// What ``ReadClearance`` needs of a notification in Notification Center (a `UNNotification` the center lists as
/// delivered, or the one just answered): its identifier, when it came, the badge it set, and from its `userInfo`
/// whose it is, its conversation, its message's `seq` and how many messages it stands for.
public struct DeliveredNotification: Hashable, Sendable {
    /// The request's identifier (a push's collapse id, `herald-<seq>`, or what HeraldUI posted it under).
    public var identifier: String
    /// When it was delivered (`UNNotification.date`).
    public var date: Date
    /// The badge it set (`content.badge`), nil for none.
    public var badge: Int?
    /// What of Herald's it is; nil when it is not Herald's.
    public var kind: HeraldNotificationKind?
    /// Its conversation (`conversationId`), for Herald's.
    public var conversationID: String?
    /// Its message's `seq`, when it says (a string, as every push's data).
    public var seq: Int64?
    /// The unread messages it stands for: a burst's `count`, else one.
    public var messages: Int

    /// Reads one from the notification's parts; `badge` is `content.badge` as an `Int`.
    public init(identifier: String, date: Date, badge: Int?, userInfo: [AnyHashable: Any]) {
        self.identifier = identifier
        self.date = date
        self.badge = badge
        kind = HeraldNotificationKind(userInfo: userInfo)
        conversationID = kind == nil ? nil : userInfo["conversationId"] as? String
        seq = (userInfo["seq"] as? String).flatMap { Int64($0) }
        messages = (userInfo["count"] as? String).flatMap { Int($0) }.map { max(1, $0) } ?? 1
    }
}
