import Foundation
import HeraldCore

/// How Herald writes JSON: ISO 8601 times with milliseconds, URLs unescaped, absent values as null.
enum WireJSON {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        }
        return encoder
    }

    static func string(_ value: some Encodable) -> String {
        (try? String(decoding: encoder().encode(value), as: UTF8.self)) ?? "{}"
    }
}

/// A stored message as the API shows it.
struct MessageBody: Codable, Sendable {
    var id: String
    var seq: Int64
    var conversationId: String
    var senderId: String
    var text: String?
    var imageURL: String?
    var createdAt: Date

    init(_ message: Message) {
        id = message.id
        seq = message.seq ?? 0
        conversationId = message.conversationID
        senderId = message.senderID
        text = message.text
        imageURL = message.imageURL?.absoluteString
        createdAt = message.sentAt
    }

    func encode(to encoder: any Encoder) throws {
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

/// A conversation's identity, as stream frames show it.
struct ConversationRef: Codable, Sendable {
    var id: String
    var kind: Conversation.Kind
    var title: String?

    init(_ conversation: Conversation) {
        id = conversation.id
        kind = conversation.kind
        title = conversation.title
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(title, forKey: .title)
    }
}

/// A sender, as stream frames show it.
struct SenderRef: Codable, Sendable {
    var id: String
    var name: String
    var avatarURL: String?

    init(_ person: Person) {
        id = person.id
        name = person.displayName
        avatarURL = person.avatarURL?.absoluteString
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(avatarURL, forKey: .avatarURL)
    }
}
