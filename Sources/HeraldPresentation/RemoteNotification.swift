import Foundation
import HeraldCore

/// What one of Herald's pushes asks of an app, read from the payload the system hands it (`userInfo`): the silent
/// clear (a conversation read on another of the user's devices), or a message. Everything in it came over the
/// network: only values of the expected types are taken, anything else is ``other``.
public enum RemoteNotification: Hashable, Sendable {
    /// Remove the conversation's delivered notifications and set the badge to `badge` (when it says).
    case clear(conversationID: String, badge: Int?)
    /// A message was pushed: what a tap opens, and what a Reply or Mark as read needs.
    case message(conversationID: String, messageID: String?, seq: Int64?, senderID: String?)
    /// A message was edited: the alert carrying it replaces the notification `notificationID` (its collapse id); the
    /// app needs to do nothing more.
    case edited(conversationID: String, messageID: String, notificationID: String)
    /// A message was deleted: remove the delivered notification `notificationID` and set the badge (a background
    /// push; ``HeraldSystemNotifications`` does both).
    case withdraw(conversationID: String, notificationID: String, badge: Int?)
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
        case "message_edited", "message_deleted":
            guard let notificationID = userInfo["notificationId"] as? String, !notificationID.isEmpty,
                  let messageID = userInfo["messageId"] as? String, !messageID.isEmpty
            else {
                self = .other
                return
            }
            if userInfo["type"] as? String == "message_edited" {
                self = .edited(conversationID: conversationID, messageID: messageID, notificationID: notificationID)
            } else {
                let aps = userInfo["aps"] as? [String: Any]
                self = .withdraw(
                    conversationID: conversationID, notificationID: notificationID,
                    badge: Self.integer(userInfo["badge"]) ?? Self.integer(aps?["badge"]))
            }
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

/// What a Notification Service Extension needs to show a message push as an iOS communication notification (the
/// sender's name and picture beside the message, the group's name): read from the push's data (docs/push.md, "For a
/// chat-style notification and its actions"). Only a person's message has one: an event, a message from the app's
/// backend, a clear or anything not understood is nil, and the extension leaves the plain alert as it came.
/// Everything in it came over the network: strings are taken only when they are strings, names lose their control
/// characters, and a picture is kept only when it is an `http` or `https` address (``AvatarStyle/pictureURL(_:)``).
public struct CommunicationNotification: Hashable, Sendable {
    /// The conversation: the intent's `conversationIdentifier`, so iOS groups and ranks it as one conversation.
    public var conversationID: String
    /// Who wrote it: the sender's `INPersonHandle` and `customIdentifier`.
    public var senderID: String
    /// The sender's name as Herald shows it.
    public var senderName: String
    /// The sender's picture, to fetch (http or https only); nil: iOS shows the name's initials.
    public var senderPicture: URL?
    /// The group's name (`speakableGroupName`), nil for a direct chat.
    public var groupName: String?
    /// Whether the message names this member (or `@all`, or it is a direct chat's).
    public var mentioned: Bool

    /// Reads an APNs payload; nil unless it is a message push (or an edit's, which replaces it) with a sender's name.
    public init?(userInfo: [AnyHashable: Any]) {
        guard ["message", "message_edited"].contains(userInfo["type"] as? String),
              let conversationID = userInfo["conversationId"] as? String, !conversationID.isEmpty,
              let senderID = userInfo["senderId"] as? String, !senderID.isEmpty,
              let name = (userInfo["senderName"] as? String).map(Self.plain), !name.isEmpty
        else { return nil }
        self.conversationID = conversationID
        self.senderID = senderID
        senderName = name
        senderPicture = AvatarStyle.pictureURL((userInfo["senderAvatarURL"] as? String).flatMap(URL.init(string:)))
        let group = userInfo["isGroup"] as? String == "true"
        groupName = group ? (userInfo["conversationTitle"] as? String).map(Self.plain).flatMap { $0.isEmpty ? nil : $0 } : nil
        mentioned = userInfo["mentioned"] as? String == "true"
    }

    /// Whether it is a group's message (iOS shows the group's name above the sender's).
    public var isGroup: Bool { groupName != nil }

    /// `text` without control characters (C0, DEL, C1): the system draws them as nothing or as boxes.
    private static func plain(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !(0..<0x20 ~= $0.value || 0x7F...0x9F ~= $0.value) }))
    }
}

/// A push that withheld its words (the server's `HERALD_PUSH_CONTENT` is `sender` or `none`: its data says
/// `withheld`): what a Notification Service Extension fetches with the device's key, and how the answer fills the
/// notification in. An encrypted push (`withheld: "encrypted"`, ``EncryptedPush``) is one too: a device that cannot
/// decrypt it fetches its words the same way.
public struct WithheldPush: Hashable, Sendable {
    /// The conversation.
    public var conversationID: String
    /// The message, in its conversation.
    public var messageID: String

    /// Reads an APNs payload (or FCM data); nil unless it is a message push (or an edit's) that withheld its words.
    public init?(userInfo: [AnyHashable: Any]) {
        guard ["message", "message_edited"].contains(userInfo["type"] as? String),
              let withheld = userInfo["withheld"] as? String, ["sender", "none", "encrypted"].contains(withheld),
              let conversationID = userInfo["conversationId"] as? String, !conversationID.isEmpty,
              let messageID = userInfo["messageId"] as? String, !messageID.isEmpty
        else { return nil }
        self.conversationID = conversationID
        self.messageID = messageID
    }

    /// The notification filled in from the answer of `GET /v1/push/conversations/{id}/messages/{id}` (which
    /// `HeraldAPI.pushedMessage` calls): its `title`, `body` and `data` (the data a full push carries). The result's
    /// `userInfo` is the push's with that data in it, so ``CommunicationNotification/init(userInfo:)`` reads it as a
    /// full push. Nil when the data is about another message.
    public func filled(
        title: String?, body: String, data: [String: String], userInfo: [AnyHashable: Any]
    ) -> (title: String?, body: String, userInfo: [AnyHashable: Any])? {
        guard let conversation = data["conversationId"], conversation.utf8.elementsEqual(conversationID.utf8),
              let message = data["messageId"], message.utf8.elementsEqual(messageID.utf8)
        else { return nil }
        var filled = userInfo
        filled["withheld"] = nil
        filled["encrypted"] = nil
        for (key, value) in data where key != "aps" { filled[key] = value }
        return (title, body, filled)
    }
}
