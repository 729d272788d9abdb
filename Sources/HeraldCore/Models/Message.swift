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
    /// The members it mentions (user ids, chosen by the sender's client; the server keeps only members).
    public var mentions: [String]
    /// Whether it mentions everyone (`@all`).
    public var mentionsAll: Bool
    /// Whether its sender changed its text since it was sent (``ConversationEvent/Kind/messageEdited``).
    public var edited: Bool
    /// Whether it was deleted (``ConversationEvent/Kind/messageDeleted``): a tombstone, with no text, no image and
    /// no mentions, kept in its place in the history.
    public var deleted: Bool

    /// The most members one message may mention.
    public static let maxMentions = 50

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
        silent: Bool = false,
        mentions: [String] = [],
        mentionsAll: Bool = false,
        edited: Bool = false,
        deleted: Bool = false
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
        self.mentions = mentions
        self.mentionsAll = mentionsAll
        self.edited = edited
        self.deleted = deleted
    }

    /// Whether it names `userID` or everyone (`@all`): what goes ahead in the banner queue and is highlighted. (A
    /// direct chat's message is a mention for levels, ``isMention(of:in:)``, but waits its turn.)
    public func names(_ userID: String) -> Bool {
        event == nil && (mentionsAll || mentions.contains(userID))
    }

    /// Whether it mentions `userID`, in a conversation of `kind`: by id, by `@all`, by being a direct chat's
    /// message, or by being the event that added them.
    public func isMention(of userID: String, in kind: Conversation.Kind) -> Bool {
        if let event { return event.kind == .memberAdded && event.concerns(userID) }
        return kind == .direct || mentionsAll || mentions.contains(userID)
    }

    /// This message as `amendment` (an entry whose event is ``ConversationEvent/Kind/messageEdited`` or
    /// ``ConversationEvent/Kind/messageDeleted`` about it) leaves it: the new text and mentions, or a tombstone.
    /// Unchanged when `amendment` is about another message.
    public func amended(by amendment: Message) -> Message {
        guard let event = amendment.event, event.isAmendment(of: self) else { return self }
        var message = self
        if event.kind == .messageDeleted {
            message.text = nil
            message.imageURL = nil
            message.mentions = []
            message.mentionsAll = false
            message.deleted = true
        } else if !deleted {
            message.text = amendment.text
            message.mentions = amendment.mentions
            message.mentionsAll = amendment.mentionsAll
            message.edited = true
        }
        return message
    }

    /// Whether it is a message someone wrote, rather than an event.
    public var isMessage: Bool { event == nil }

    /// Whether it is a system message: posted by the app's backend with no sender (its `senderID` is empty).
    public var isSystem: Bool { senderID.isEmpty }

    private enum CodingKeys: String, CodingKey {
        case id, conversationID, senderID, text, imageURL, sentAt, seq, event, silent, mentions, mentionsAll, edited, deleted
    }

    /// Decodes a message; one kept before `silent` and mentions existed is not silent and mentions no one.
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
        mentions = try container.decodeIfPresent([String].self, forKey: .mentions) ?? []
        mentionsAll = try container.decodeIfPresent(Bool.self, forKey: .mentionsAll) ?? false
        edited = try container.decodeIfPresent(Bool.self, forKey: .edited) ?? false
        deleted = try container.decodeIfPresent(Bool.self, forKey: .deleted) ?? false
    }

    /// Encodes a message (`silent`, mentions, `edited` and `deleted` only when there are).
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
        if !mentions.isEmpty { try container.encode(mentions, forKey: .mentions) }
        if mentionsAll { try container.encode(mentionsAll, forKey: .mentionsAll) }
        if edited { try container.encode(edited, forKey: .edited) }
        if deleted { try container.encode(deleted, forKey: .deleted) }
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
