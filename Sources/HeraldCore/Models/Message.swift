import Foundation

/// One entry of a conversation: a message, or an event (``event``: people added or removed, a new title, ...).
public struct Message: Codable, Hashable, Sendable, Identifiable {
    /// The message id. Clients choose it (so retries are idempotent); it is unique per conversation.
    public var id: String
    /// The conversation the message belongs to.
    public var conversationID: String
    /// Who sent it.
    public var senderID: String
    /// The text, if any.
    public var text: String?
    /// An image, if any.
    public var imageURL: URL?
    /// When the server stored it (or, before that, when the client sent it).
    public var sentAt: Date
    /// The server's sequence number: increasing across everything the server stores. Nil until stored.
    public var seq: Int64?
    /// What happened, when this entry is an event rather than a message (its sender is who did it, and it has no
    /// text or image).
    public var event: ConversationEvent?
    /// Whether it is stored and shown without any notification: no banner, no system notification, no push (the
    /// app's backend posts such messages: a change it records, a note for the history).
    public var silent: Bool

    /// Creates a message.
    public init(
        id: String,
        conversationID: String,
        senderID: String,
        text: String? = nil,
        imageURL: URL? = nil,
        sentAt: Date = Date(),
        seq: Int64? = nil,
        event: ConversationEvent? = nil,
        silent: Bool = false
    ) {
        self.id = id
        self.conversationID = conversationID
        self.senderID = senderID
        self.text = text
        self.imageURL = imageURL
        self.sentAt = sentAt
        self.seq = seq
        self.event = event
        self.silent = silent
    }

    /// Whether it is a message someone wrote, rather than an event.
    public var isMessage: Bool { event == nil }

    /// Whether it is a system message: posted by the app's backend with no sender (its `senderID` is empty).
    public var isSystem: Bool { senderID.isEmpty }

    private enum CodingKeys: String, CodingKey {
        case id, conversationID, senderID, text, imageURL, sentAt, seq, event, silent
    }

    /// Decodes a message; one kept before `silent` existed is not silent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        conversationID = try container.decode(String.self, forKey: .conversationID)
        senderID = try container.decode(String.self, forKey: .senderID)
        text = try container.decodeIfPresent(String.self, forKey: .text)
        imageURL = try container.decodeIfPresent(URL.self, forKey: .imageURL)
        sentAt = try container.decode(Date.self, forKey: .sentAt)
        seq = try container.decodeIfPresent(Int64.self, forKey: .seq)
        event = try container.decodeIfPresent(ConversationEvent.self, forKey: .event)
        silent = try container.decodeIfPresent(Bool.self, forKey: .silent) ?? false
    }

    /// Encodes a message (`silent` only when it is).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(conversationID, forKey: .conversationID)
        try container.encode(senderID, forKey: .senderID)
        try container.encodeIfPresent(text, forKey: .text)
        try container.encodeIfPresent(imageURL, forKey: .imageURL)
        try container.encode(sentAt, forKey: .sentAt)
        try container.encodeIfPresent(seq, forKey: .seq)
        try container.encodeIfPresent(event, forKey: .event)
        if silent { try container.encode(silent, forKey: .silent) }
    }
}

/// An entry (a message or an event) with what a device needs to notify about it: its conversation and its sender.
///
/// This is what the server's stream delivers and what the ``Notifier`` takes.
public struct IncomingMessage: Codable, Hashable, Sendable {
    /// The message itself.
    public var message: Message
    /// The conversation it was posted in.
    public var conversation: Conversation
    /// Who posted it.
    public var sender: Person

    /// Creates an incoming message.
    public init(message: Message, conversation: Conversation, sender: Person) {
        self.message = message
        self.conversation = conversation
        self.sender = sender
    }
}
