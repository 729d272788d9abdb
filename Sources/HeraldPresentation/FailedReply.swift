import HeraldCore

/// The notice of a Reply that did not reach the server (no network, a refusal, the time limit, nobody signed in):
/// iOS removed the notification the person answered, so this local notification keeps what they typed, says it was
/// not sent, and can be answered again. It is in the conversation's thread and Herald's category (Reply and Mark as
/// read work from it), and its `userInfo` carries the answered notification's `seq` and `messageId`, so a second
/// Reply with the same text gets the same message id (``NotificationAnswer``): should the first have been stored
/// after all, the second stores nothing new.
public struct FailedReply: Hashable, Sendable {
    /// The `type` in its `userInfo` (``HeraldNotificationKind/replyNotSent``).
    public static let type = "reply_not_sent"
    /// Its title, in English.
    public static let standardTitle = "Not sent"

    /// The notification's identifier: `herald-` and the reply's message id, so the same text failing again replaces
    /// it rather than showing twice.
    public var identifier: String
    /// The title: ``standardTitle`` or the app's words.
    public var title: String
    /// The text that was not sent.
    public var body: String
    /// The conversation, its thread.
    public var thread: String
    /// Its category: Herald's (``NotificationAnswer/category``), for Reply and Mark as read.
    public var category: String { NotificationAnswer.category }
    /// Its data: `type`, `conversationId` and, from the answered notification, `seq`, `messageId` and `senderId`.
    public var userInfo: [String: String]

    /// The notice for `answer`, a Reply to the notification whose data is `answered`; nil for any other answer.
    public init?(_ answer: NotificationAnswer, answered: [AnyHashable: Any], title: String = FailedReply.standardTitle) {
        guard case .reply(let conversationID, let messageID, let text) = answer else { return nil }
        identifier = "herald-\(messageID)"
        self.title = title
        body = text
        thread = conversationID
        var userInfo = ["type": Self.type, "conversationId": conversationID]
        for key in ["seq", "messageId", "senderId"] {
            if let value = answered[key] as? String { userInfo[key] = value }
        }
        self.userInfo = userInfo
    }
}
