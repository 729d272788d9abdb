import Foundation
import HeraldCore

/// A stored message as the API and the stream show it:
/// `{"id", "seq", "conversationId", "senderId", "text", "imageURL", "createdAt"}`.
public struct WireMessage: Codable, Hashable, Sendable {
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

    /// The wire form of a stored message.
    public init(_ message: Message) {
        id = message.id
        seq = message.seq ?? 0
        conversationId = message.conversationID
        senderId = message.senderID
        text = message.text
        imageURL = message.imageURL?.absoluteString
        createdAt = message.sentAt
    }

    /// The message it describes.
    public var message: Message {
        Message(id: id, conversationID: conversationId, senderID: senderId, text: text,
                imageURL: imageURL.flatMap(URL.init(string:)), sentAt: createdAt, seq: seq)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(seq, forKey: .seq)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(senderId, forKey: .senderId)
        try container.encode(text, forKey: .text)
        try container.encode(imageURL, forKey: .imageURL)
        try container.encode(createdAt, forKey: .createdAt)
    }
}
