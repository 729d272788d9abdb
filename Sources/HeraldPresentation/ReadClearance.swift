import Foundation
import HeraldCore

/// What a Mark as read answered on this device clears here. The server clears the user's other devices (the request
/// names this one, which it leaves alone, since the app is right here), so this device does its own part: it removes
/// its notifications of the conversation at or below the marked `seq` and lowers the badge by the messages they
/// stood for.
///
/// The badge: the server's answer to a read carries no unread total, and the icon's badge cannot be read back (the
/// one property that could, `applicationIconBadgeNumber`, is deprecated from iOS 17). So it is the newest reading of
/// it (the badge the latest push set, or the one the app set last), less the messages of the removed notifications
/// that reading counted (those delivered at or before it), never below 0; nil (leave it) with no reading at all.
public struct ReadClearance: Hashable, Sendable {
    /// The identifiers of the delivered notifications to remove.
    public var identifiers: [String]
    /// The badge to set, or nil to leave it.
    public var badge: Int?

    /// The clearance of `conversationID` read up to `seq`, with `delivered` in Notification Center (the answered one
    /// among them, though iOS already took it away: it still counts) and `lastBadgeSet` the app's own last badge.
    ///
    /// Removed: Herald's notifications of that conversation whose `seq` is at or below the mark (a message, an edit,
    /// a deletion's notice). Kept: a later message's, one without a `seq`, another conversation's, the app's own,
    /// and a Reply that was not sent (it holds the person's text).
    public init(conversationID: String, upTo seq: Int64, delivered: [DeliveredNotification], lastBadgeSet: BadgeReading? = nil) {
        var seen = Set<String>()
        let unique = delivered.filter { seen.insert($0.identifier).inserted }
        let removed = unique.filter { notification in
            guard let kind = notification.kind, kind != .replyNotSent, kind != .clear,
                  notification.conversationID == conversationID, let at = notification.seq
            else { return false }
            return at <= seq
        }
        identifiers = removed.map(\.identifier)

        let readings = unique.compactMap { notification in notification.badge.map { BadgeReading(value: $0, date: notification.date) } }
            + (lastBadgeSet.map { [$0] } ?? [])
        guard let current = readings.max(by: { $0.date < $1.date }) else {
            badge = nil
            return
        }
        let read = removed
            .filter { ($0.kind == .message || $0.kind == .edit) && $0.date <= current.date }
            .reduce(0) { $0 + $1.messages }
        badge = max(0, current.value - read)
    }

    /// Whether Herald's clear of a conversation (read on another of the user's devices, or the member removed)
    /// removes this notification of the conversation's thread: every one but a Reply that was not sent, which holds
    /// the person's text.
    public static func clearRemoves(userInfo: [AnyHashable: Any]) -> Bool {
        HeraldNotificationKind(userInfo: userInfo) != .replyNotSent
    }
}
