import HeraldCore

/// What a Notification Service Extension does with a push (Herald sends every alert with `mutable-content`, so each
/// comes to it first): only a message's push, or an edit's, is filled in and made a communication notification;
/// everything else is handed on as it came. A deletion in particular (a passive "This message was deleted" under the message's
/// collapse id, `type` `message_deleted`) must stay what it is, never become the message again.
public enum ServiceExtensionWork: Hashable, Sendable {
    /// Hand the content on unchanged.
    case asItCame
    /// A message's push (or an edit's): fill in the words it withheld, when it did, then make it a communication
    /// notification when it names its sender (``CommunicationNotification``). Words sent encrypted to the device
    /// (`encrypted`) are decrypted first (``EncryptedPush/open(userInfo:decrypt:)``); when they do not open, or
    /// were only withheld, they are fetched with the device key (`withheld`, then `HeraldAPI.pushedMessage`).
    case message(withheld: WithheldPush?, encrypted: EncryptedPush?)

    /// The work for the push whose data is `userInfo`.
    public init(userInfo: [AnyHashable: Any]) {
        switch HeraldNotificationKind(userInfo: userInfo) {
        case .message, .edit:
            self = .message(withheld: WithheldPush(userInfo: userInfo), encrypted: EncryptedPush(userInfo: userInfo))
        case .deletion, .clear, .replyNotSent, nil: self = .asItCame
        }
    }
}
