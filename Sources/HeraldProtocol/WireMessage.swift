import Foundation
import HeraldCore

/// A stored entry of a conversation as the API and the stream show it:
/// `{"kind", "id", "seq", "conversationId", "senderId", "text", "imageURL", "createdAt"}`, `"event"` when `kind`
/// is `event` (then `senderId` is who did it, and there is no text or image), `"silent": true` for a message that
/// notifies nobody, `"mentions": [ids]` and `"mentionsAll": true` when it mentions members or everyone. A `senderId` of `""` is the app's backend: a system message, or a change it made.
public struct WireMessage: Codable, Hashable, Sendable {
    /// `message` (someone wrote it) or `event` (something happened: see ``event``).
    public var kind: String
    /// The message id.
    public var id: String
    /// Its sequence number.
    public var seq: Int64
    /// Its conversation.
    public var conversationId: String
    /// Its sender.
    public var senderId: String
    /// Its text, if any.
    public var text: String?
    /// Its image, if any.
    public var imageURL: String?
    /// When the server stored it.
    public var createdAt: Date
    /// What happened, for an event.
    public var event: WireEvent?
    /// Whether it notifies nobody (no banner, no push).
    public var silent: Bool
    /// The members it mentions (empty: none).
    public var mentions: [String]
    /// Whether it mentions everyone (`@all`).
    public var mentionsAll: Bool
    /// Whether its sender edited its text (a message only).
    public var edited: Bool
    /// Whether it was deleted: a tombstone without text, image or mentions (a message only).
    public var deleted: Bool

    /// The wire form of a stored message.
    public init(_ message: Message) {
        kind = message.event == nil ? "message" : "event"
        event = message.event.map(WireEvent.init)
        id = message.id
        seq = message.seq ?? 0
        conversationId = message.conversationID
        senderId = message.senderID
        text = message.text
        imageURL = message.imageURL?.absoluteString
        createdAt = message.sentAt
        silent = message.silent
        mentions = message.mentions
        mentionsAll = message.mentionsAll
        edited = message.edited
        deleted = message.deleted
    }

    /// The wire form of `message` as JSON text: byte for byte what ``WireJSON`` writes for `WireMessage(message)`,
    /// written by hand for a message (every post is answered with one) and through the encoder for an event.
    public static func jsonText(_ message: Message) -> String {
        MessageFrameJSON.text(message) ?? WireJSON.string(WireMessage(message))
    }

    /// The message it describes.
    public var message: Message {
        Message(id: id, conversationID: conversationId, senderID: senderId, text: text,
                imageURL: imageURL.flatMap(URL.init(string:)), sentAt: createdAt, seq: seq,
                event: kind == "event" ? event?.event : nil, silent: silent, mentions: mentions, mentionsAll: mentionsAll,
                edited: edited, deleted: deleted)
    }

    private enum CodingKeys: String, CodingKey {
        case kind, id, seq, conversationId, senderId, text, imageURL, createdAt, event, silent, mentions, mentionsAll
        case edited, deleted
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(id, forKey: .id)
        try container.encode(seq, forKey: .seq)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(senderId, forKey: .senderId)
        try container.encode(text, forKey: .text)
        try container.encode(imageURL, forKey: .imageURL)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(event, forKey: .event)
        if silent { try container.encode(silent, forKey: .silent) }
        if !mentions.isEmpty { try container.encode(mentions, forKey: .mentions) }
        if mentionsAll { try container.encode(mentionsAll, forKey: .mentionsAll) }
        if edited { try container.encode(edited, forKey: .edited) }
        if deleted { try container.encode(deleted, forKey: .deleted) }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Entries from a server before events have no kind: they are messages.
        kind = try container.decodeIfPresent(String.self, forKey: .kind) ?? "message"
        id = try container.decode(String.self, forKey: .id)
        seq = try container.decode(Int64.self, forKey: .seq)
        conversationId = try container.decode(String.self, forKey: .conversationId)
        senderId = try container.decode(String.self, forKey: .senderId)
        text = try container.decodeIfPresent(String.self, forKey: .text)
        imageURL = try container.decodeIfPresent(String.self, forKey: .imageURL)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        event = try container.decodeIfPresent(WireEvent.self, forKey: .event)
        silent = try container.decodeIfPresent(Bool.self, forKey: .silent) ?? false
        mentions = try container.decodeIfPresent([String].self, forKey: .mentions) ?? []
        mentionsAll = try container.decodeIfPresent(Bool.self, forKey: .mentionsAll) ?? false
        edited = try container.decodeIfPresent(Bool.self, forKey: .edited) ?? false
        deleted = try container.decodeIfPresent(Bool.self, forKey: .deleted) ?? false
    }
}

/// What happened, on the wire: `{"type", "members", "title"}`: `type` is `member_added`, `member_removed`,
/// `member_left`, `renamed`, `owner_added`, `owner_removed` or `deleted`; `members` whom it concerns (with their
/// names); `title` the new title of a `renamed`.
public struct WireEvent: Codable, Hashable, Sendable {
    /// What happened.
    public var type: String
    /// Whom it concerns.
    public var members: [WirePerson]
    /// The new title, for `renamed`.
    public var title: String?
    /// The message an edit or a deletion is about (`message_edited`, `message_deleted`).
    public var messageId: String?
    /// That message's seq.
    public var messageSeq: Int64?

    /// The wire form of an event.
    public init(_ event: ConversationEvent) {
        type = event.kind.rawValue
        members = event.members.map(WirePerson.init)
        title = event.title
        messageId = event.messageID
        messageSeq = event.messageSeq
    }

    /// The event it describes; nil for a `type` this side does not know (a newer server's).
    public var event: ConversationEvent? {
        ConversationEvent.Kind(rawValue: type).map {
            ConversationEvent(kind: $0, members: members.map(\.person), title: title, messageID: messageId, messageSeq: messageSeq)
        }
    }

    private enum CodingKeys: String, CodingKey {
        case type, members, title, messageId, messageSeq
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(String.self, forKey: .type)
        members = try container.decodeIfPresent([WirePerson].self, forKey: .members) ?? []
        title = try container.decodeIfPresent(String.self, forKey: .title)
        messageId = try container.decodeIfPresent(String.self, forKey: .messageId)
        messageSeq = try container.decodeIfPresent(Int64.self, forKey: .messageSeq)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(members, forKey: .members)
        try container.encode(title, forKey: .title)
        try container.encodeIfPresent(messageId, forKey: .messageId)
        try container.encodeIfPresent(messageSeq, forKey: .messageSeq)
    }
}
