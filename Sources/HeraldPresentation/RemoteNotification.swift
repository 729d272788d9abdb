import HeraldCore

/// What one of Herald's pushes asks of an app, read from the payload the system hands it (`userInfo`): the silent
/// clear (a conversation read on another of the user's devices), or a message. Everything in it came over the
/// network: only values of the expected types are taken, anything else is ``other``.
public enum RemoteNotification: Hashable, Sendable {
    /// Remove the conversation's delivered notifications and set the badge to `badge` (when it says).
    case clear(conversationID: String, badge: Int?)
    /// A message was pushed: what a tap opens, and what a Reply or Mark as read needs.
    case message(conversationID: String, messageID: String?, seq: Int64?, senderID: String?)
    /// Not Herald's, or not understood.
    case other

    /// Reads an APNs payload: Herald's data beside `aps` (docs/push.md, "What a push carries").
    public init(userInfo: [AnyHashable: Any]) {
        guard let conversationID = userInfo["conversationId"] as? String, !conversationID.isEmpty else {
            self = .other
            return
        }
        switch userInfo["type"] as? String {
        case "read":
            // The badge is the app's data beside `aps` (older servers put it in `aps`).
            let aps = userInfo["aps"] as? [String: Any]
            self = .clear(conversationID: conversationID, badge: Self.integer(userInfo["badge"]) ?? Self.integer(aps?["badge"]))
        case "message":
            self = .message(
                conversationID: conversationID, messageID: userInfo["messageId"] as? String,
                seq: (userInfo["seq"] as? String).flatMap { Int64($0) }, senderID: userInfo["senderId"] as? String)
        default:
            self = .other
        }
    }

    /// A whole number, from JSON's number as Foundation hands it over (an `Int`, or an `NSNumber` seen as one).
    private static func integer(_ value: Any?) -> Int? {
        switch value {
        case let value as Int: value
        case let value as Int64: Int(exactly: value)
        case let value as Double: Int(exactly: value)
        default: nil
        }
    }
}
