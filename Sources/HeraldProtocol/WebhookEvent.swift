import Foundation

/// What a webhook tells the app's backend.
public enum WebhookEventType: String, Codable, Hashable, Sendable, CaseIterable {
    /// A message was stored (a member's, or a system message); `data.message`, `data.sender`.
    case messageNew = "message.new"
    /// A message's sender edited its text; `data.message` (the message as it is now, `edited`), `data.by`.
    case messageEdited = "message.edited"
    /// A message was deleted (by its sender, or a group's owner); `data.message` (its tombstone), `data.by`.
    case messageDeleted = "message.deleted"
    /// People were added to a group; `data.members`, `data.by` (who added them; `""` for the backend).
    case memberAdded = "member.added"
    /// People left a group or were removed from it (`data.reason`: `removed` or `left`); `data.members`, `data.by`.
    case memberRemoved = "member.removed"
    /// A group got a new title; `data.title`, `data.by`.
    case conversationRenamed = "conversation.renamed"
    /// A group was deleted for everyone; `data.by`.
    case conversationDeleted = "conversation.deleted"
    /// A member's read marker moved; `data.userId`, `data.upTo`.
    case read
    /// A push service said a device's token is dead, and the device was removed; `data.userId`, `data.device`.
    case deviceRemoved = "device.removed"
    /// A member still has unread messages a while after the first, and no device of theirs was connected meanwhile
    /// (`HERALD_UNREAD_REMINDER`); `data.userId`, `data.unreadCount`, `data.firstUnreadSeq`.
    case unreadReminder = "unread.reminder"
}

/// One webhook delivery's body: `{"id", "type", "time", "seq", "conversationId", "data"}`.
///
/// `id` names the event (a delivery tried again carries the same one: deliveries are at least once); `seq` is its
/// place in Herald's log: a message's or a change's own `seq`, or for the others the log's last `seq` when it
/// happened. For each conversation, events come in `seq` order (a `read` or a reminder after the entries it
/// follows), each one only once the one before was answered with a 2xx.
public struct WebhookEvent: Codable, Hashable, Sendable {
    /// The event's id, the same on every try.
    public var id: String
    /// What happened: a ``WebhookEventType`` raw value (a newer server may send types this side does not know).
    public var type: String
    /// When it happened.
    public var time: Date
    /// Its place in the log.
    public var seq: Int64
    /// The conversation, for every type but `device.removed`.
    public var conversationId: String?
    /// What it is about.
    public var data: WebhookEventData

    /// An event.
    public init(id: String, type: String, time: Date, seq: Int64, conversationId: String?, data: WebhookEventData) {
        self.id = id
        self.type = type
        self.time = time
        self.seq = seq
        self.conversationId = conversationId
        self.data = data
    }

    /// Its type, when this side knows it.
    public var eventType: WebhookEventType? { WebhookEventType(rawValue: type) }
}

/// A conversation as a webhook names it.
public struct WebhookConversation: Codable, Hashable, Sendable {
    /// Its id.
    public var id: String
    /// `direct` or `group`.
    public var kind: String
    /// A group's title.
    public var title: String?

    /// A conversation.
    public init(id: String, kind: String, title: String?) {
        self.id = id
        self.kind = kind
        self.title = title
    }
}

/// A device as a webhook names it.
public struct WebhookDevice: Codable, Hashable, Sendable {
    /// The app's id for it.
    public var id: String
    /// Its push service.
    public var platform: PushPlatform

    /// A device.
    public init(id: String, platform: PushPlatform) {
        self.id = id
        self.platform = platform
    }
}

/// What an event is about; which fields are present depends on its type (``WebhookEventType``).
public struct WebhookEventData: Codable, Hashable, Sendable {
    /// The conversation (every type but `device.removed`).
    public var conversation: WebhookConversation?
    /// `message.new`: the message.
    public var message: WireMessage?
    /// `message.new`: its sender (`id` `""` for a system message).
    public var sender: WirePerson?
    /// `member.added`, `member.removed`: whom it concerns.
    public var members: [WirePerson]?
    /// Changes: who made it (`""`: the app's backend).
    public var by: String?
    /// `member.removed`: `removed` or `left`.
    public var reason: String?
    /// `conversation.renamed`: the new title (nil: none).
    public var title: String?
    /// `read`, `device.removed`, `unread.reminder`: the user.
    public var userId: String?
    /// `read`: the read marker, the `seq` up to which they have read.
    public var upTo: Int64?
    /// `device.removed`: the device.
    public var device: WebhookDevice?
    /// `unread.reminder`: how many messages they have not read (up to 1000).
    public var unreadCount: Int?
    /// `unread.reminder`: the first of them.
    public var firstUnreadSeq: Int64?

    /// Data with these fields.
    public init(
        conversation: WebhookConversation? = nil, message: WireMessage? = nil, sender: WirePerson? = nil,
        members: [WirePerson]? = nil, by: String? = nil, reason: String? = nil, title: String? = nil,
        userId: String? = nil, upTo: Int64? = nil, device: WebhookDevice? = nil, unreadCount: Int? = nil,
        firstUnreadSeq: Int64? = nil
    ) {
        self.conversation = conversation
        self.message = message
        self.sender = sender
        self.members = members
        self.by = by
        self.reason = reason
        self.title = title
        self.userId = userId
        self.upTo = upTo
        self.device = device
        self.unreadCount = unreadCount
        self.firstUnreadSeq = firstUnreadSeq
    }
}
