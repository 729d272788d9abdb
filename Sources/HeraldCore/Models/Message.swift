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

    /// Creates a message.
    public init(
        id: String,
        conversationID: String,
        senderID: String,
        text: String? = nil,
        imageURL: URL? = nil,
        sentAt: Date = Date(),
        seq: Int64? = nil,
        event: ConversationEvent? = nil
    ) {
        self.id = id
        self.conversationID = conversationID
        self.senderID = senderID
        self.text = text
        self.imageURL = imageURL
        self.sentAt = sentAt
        self.seq = seq
        self.event = event
    }

    /// Whether it is a message someone wrote, rather than an event.
    public var isMessage: Bool { event == nil }
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
