import Foundation
import HeraldCore

/// A frame from the server's stream, as the client reads it (see docs/protocol.md).
enum StreamFrame {
    case message(IncomingMessage)
    case ready(seq: Int64)
    case ack(id: String, seq: Int64)
    case error(code: String, message: String, ref: String?)
    case pong
    case unknown(String)

    private struct Frame: Decodable {
        struct Body: Decodable {
            var id: String
            var seq: Int64
            var conversationId: String
            var senderId: String
            var text: String?
            var imageURL: String?
            var createdAt: String
        }

        struct Room: Decodable {
            var id: String
            var kind: Conversation.Kind
            var title: String?
        }

        struct Sender: Decodable {
            var id: String
            var name: String
            var avatarURL: String?
        }

        var type: String
        var seq: Int64?
        var id: String?
        var code: String?
        var ref: String?
        var conversation: Room?
        var sender: Sender?

        private enum Keys: String, CodingKey { case type, message, seq, id, code, ref, conversation, sender }
        var body: Body?
        var errorMessage: String?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            type = try container.decode(String.self, forKey: .type)
            seq = try container.decodeIfPresent(Int64.self, forKey: .seq)
            id = try container.decodeIfPresent(String.self, forKey: .id)
            code = try container.decodeIfPresent(String.self, forKey: .code)
            ref = try container.decodeIfPresent(String.self, forKey: .ref)
            conversation = try container.decodeIfPresent(Room.self, forKey: .conversation)
            sender = try container.decodeIfPresent(Sender.self, forKey: .sender)
            if type == "message" {
                body = try container.decode(Body.self, forKey: .message)
            } else {
                errorMessage = try container.decodeIfPresent(String.self, forKey: .message)
            }
        }
    }

    /// Reads a text frame.
    init(parsing text: String) throws {
        let frame = try JSONDecoder().decode(Frame.self, from: Data(text.utf8))
        switch frame.type {
        case "message":
            guard let body = frame.body, let room = frame.conversation, let sender = frame.sender else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "incomplete message frame"))
            }
            let sentAt = (try? Date(body.createdAt, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
                ?? Date()
            self = .message(IncomingMessage(
                message: Message(
                    id: body.id, conversationID: body.conversationId, senderID: body.senderId, text: body.text,
                    imageURL: body.imageURL.flatMap(URL.init(string:)), sentAt: sentAt, seq: body.seq),
                conversation: Conversation(id: room.id, kind: room.kind, title: room.title),
                sender: Person(id: sender.id, displayName: sender.name, avatarURL: sender.avatarURL.flatMap(URL.init(string:)))
            ))
        case "ready": self = .ready(seq: frame.seq ?? 0)
        case "ack": self = .ack(id: frame.id ?? "", seq: frame.seq ?? 0)
        case "error": self = .error(code: frame.code ?? "", message: frame.errorMessage ?? "", ref: frame.ref)
        case "pong": self = .pong
        default: self = .unknown(frame.type)
        }
    }
}

/// Frames the client writes.
enum ClientFrames {
    static func focus(_ conversationID: String?) -> String {
        encode(["type": "focus", "conversation": conversationID])
    }

    static func app(_ state: AppState) -> String {
        encode(["type": "app", "state": state.rawValue])
    }

    static func send(_ pending: PendingSend) -> String {
        encode(["type": "send", "conversation": pending.conversationID, "id": pending.id, "text": pending.text])
    }

    private static func encode(_ fields: [String: String?]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? String(decoding: encoder.encode(fields), as: UTF8.self)) ?? "{}"
    }
}

/// A message waiting for its `ack`.
struct PendingSend: Hashable, Sendable {
    var id: String
    var conversationID: String
    var text: String
}
