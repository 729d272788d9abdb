import Foundation
import HeraldCore

/// A frame the server sends on the stream.
enum ServerFrame: Encodable, Sendable {
    /// A new message in one of the user's conversations.
    case message(IncomingMessage)
    /// Everything after the `after` the client gave has been sent; live messages follow.
    case ready(seq: Int64)
    /// A `send` was stored.
    case ack(id: String, seq: Int64)
    /// Something the client sent was refused; `ref` names the `send` it was about, if any.
    case error(APIError, ref: String?)
    /// The answer to a `ping`.
    case pong

    private enum Key: String, CodingKey {
        case type, message, conversation, sender, seq, id, code, ref
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .message(let incoming):
            try container.encode("message", forKey: .type)
            try container.encode(MessageBody(incoming.message), forKey: .message)
            try container.encode(ConversationRef(incoming.conversation), forKey: .conversation)
            try container.encode(SenderRef(incoming.sender), forKey: .sender)
        case .ready(let seq):
            try container.encode("ready", forKey: .type)
            try container.encode(seq, forKey: .seq)
        case .ack(let id, let seq):
            try container.encode("ack", forKey: .type)
            try container.encode(id, forKey: .id)
            try container.encode(seq, forKey: .seq)
        case .error(let error, let ref):
            try container.encode("error", forKey: .type)
            try container.encode(error.code, forKey: .code)
            try container.encode(error.message, forKey: .message)
            try container.encode(ref, forKey: .ref)
        case .pong:
            try container.encode("pong", forKey: .type)
        }
    }

    /// The frame as JSON text.
    var text: String { WireJSON.string(self) }
}

/// A frame a client sends on the stream.
enum ClientFrame: Sendable {
    /// The conversation on screen, or nil.
    case focus(conversationID: String?)
    /// Foreground or background.
    case app(AppState)
    /// Post a message; answered with `ack` or `error` carrying `id` as `ref`.
    case send(conversationID: String, id: String, text: String?, imageURL: String?)
    /// Keep-alive; answered with `pong`.
    case ping

    private struct Envelope: Decodable {
        var type: String
    }

    private struct Focus: Decodable {
        var conversation: String?
    }

    private struct App: Decodable {
        var state: AppState
    }

    private struct Send: Decodable {
        var conversation: String
        var id: String
        var text: String?
        var imageURL: String?
    }

    /// Reads a text frame.
    ///
    /// - Throws: ``APIError`` `invalid_json`, `unknown_type` or `invalid_request`.
    init(parsing text: String) throws {
        let decoder = JSONDecoder()
        let data = Data(text.utf8)
        do {
            switch try decoder.decode(Envelope.self, from: data).type {
            case "focus": self = .focus(conversationID: try decoder.decode(Focus.self, from: data).conversation)
            case "app": self = .app(try decoder.decode(App.self, from: data).state)
            case "send":
                let send = try decoder.decode(Send.self, from: data)
                self = .send(conversationID: send.conversation, id: send.id, text: send.text, imageURL: send.imageURL)
            case "ping": self = .ping
            case let other:
                throw APIError(.badRequest, .unknownType, "unknown frame type `\(other)`")
            }
        } catch let error as DecodingError {
            throw APIError.decoding(error)
        }
    }

    /// The `id` of a `send` frame, read leniently so an error about it can still name it.
    static func reference(in text: String) -> String? {
        struct Reference: Decodable { var id: String? }
        return (try? JSONDecoder().decode(Reference.self, from: Data(text.utf8)))?.id
    }
}
