import HeraldCore

/// What answering one of Herald's message notifications asks of the app: its actions (Reply with typed text, Mark as
/// read) or a plain tap, read from the action's identifier and the notification's `userInfo` (a push's, or one
/// HeraldUI posted: the same keys). Everything in `userInfo` may have come over the network: only values of the
/// expected types are taken.
///
/// HeraldUI registers the category and carries the answer out (`HeraldAPI.postMessage(in:text:id:)`,
/// `HeraldAPI.markRead(_:upTo:)`), each request within ``requestTimeout`` and the whole within ``timeLimit``; a Reply
/// that fails becomes a ``FailedReply``, a Mark as read that succeeds clears this device (``ReadClearance``). An app
/// with its own notification code does the same with these identifiers.
public enum NotificationAnswer: Hashable, Sendable {
    /// Post `text` to the conversation under `messageID`: made from the notification and the text, so a reply the
    /// system or the app retries is stored once, and two different replies are two messages.
    case reply(conversationID: String, messageID: String, text: String)
    /// Move the read marker to `seq` (the server clears the user's other devices; ``ReadClearance`` says what goes
    /// on this one).
    case markRead(conversationID: String, seq: Int64)
    /// Open the conversation (the notification itself was tapped).
    case open(conversationID: String)
    /// Nothing to do: not Herald's, dismissed, an empty reply, or a Mark as read without a `seq`.
    case none

    /// The category of Herald's message notifications (a push's `category`, `categoryId` for Expo).
    public static let category = "HERALD_MESSAGE"
    /// The Reply action's identifier (a text-input action).
    public static let replyAction = "HERALD_REPLY"
    /// The Mark as read action's identifier.
    public static let markReadAction = "HERALD_MARK_READ"
    /// The identifier the system gives a plain tap (`UNNotificationDefaultActionIdentifier`).
    public static let tapAction = "com.apple.UNNotificationDefaultActionIdentifier"
    /// The longest reply taken, in characters (the server's limit is higher; a notification's text field is short).
    public static let maxReplyCharacters = 4_000
    /// How long one request of an answer may take (`HeraldAPI.timeout`; the API's own default is 30 s).
    public static let requestTimeout: Duration = .seconds(10)
    /// How long an answer may take in all, a renewed token's second request included (``withDeadline(_:clock:_:)``):
    /// well inside the half minute iOS gives an app in the background, so a failed Reply's notice is still posted.
    public static let timeLimit: Duration = .seconds(20)

    /// The answer to `action` on the notification whose data is `userInfo`, with the text typed for a Reply.
    public init(action: String, userInfo: [AnyHashable: Any], text: String? = nil) {
        guard let conversationID = userInfo["conversationId"] as? String, !conversationID.isEmpty else {
            self = .none
            return
        }
        let seq = (userInfo["seq"] as? String).flatMap { Int64($0) }.flatMap { $0 > 0 ? $0 : nil }
        switch action {
        case Self.tapAction:
            self = .open(conversationID: conversationID)
        case Self.replyAction:
            let typed = String((text ?? "").trimmingWhitespace.prefix(Self.maxReplyCharacters))
            guard !typed.isEmpty, let about = seq.map(String.init) ?? (userInfo["messageId"] as? String) else {
                self = .none
                return
            }
            self = .reply(conversationID: conversationID, messageID: "reply-\(about)-\(Self.digest(typed))", text: typed)
        case Self.markReadAction:
            self = seq.map { .markRead(conversationID: conversationID, seq: $0) } ?? .none
        default:
            self = .none
        }
    }

    /// 16 hex digits of FNV-1a over `text`'s UTF-8: the same text gives the same id, on every device.
    private static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

extension String {
    /// The text without white space (newlines included) at either end.
    fileprivate var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
