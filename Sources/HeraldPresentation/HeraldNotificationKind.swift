import HeraldCore

/// Which of an app's notifications are Herald's, and what each of Herald's is, read from its `userInfo`: a push's
/// data beside `aps`, or what HeraldUI put in a notification it posted. Herald's carry its `type` and a
/// `conversationId`; anything else (the app's own notifications, another SDK's) is not Herald's
/// (`init(userInfo:)` is nil) and goes to the app's own code: its foreground presentation, its taps, its actions.
public enum HeraldNotificationKind: Hashable, Sendable {
    /// A message (a push, a burst's latest, or one HeraldUI posted): `type` `message`.
    case message
    /// A message's new words in its notification's place: `type` `message_edited`.
    case edit
    /// A deleted message: `type` `message_deleted` (a passive "This message was deleted" in its notification's place, or a
    /// background push).
    case deletion
    /// The conversation was read on another device: `type` `read` (a background push).
    case clear
    /// A Reply that did not reach the server, kept with its text (``FailedReply``).
    case replyNotSent

    /// The kind of the notification whose data is `userInfo`; nil when it is not Herald's.
    public init?(userInfo: [AnyHashable: Any]) {
        guard let conversationID = userInfo["conversationId"] as? String, !conversationID.isEmpty else { return nil }
        switch userInfo["type"] as? String {
        case "message": self = .message
        case "message_edited": self = .edit
        case "message_deleted": self = .deletion
        case "read": self = .clear
        case FailedReply.type: self = .replyNotSent
        default: return nil
        }
    }
}
