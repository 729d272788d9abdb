import Foundation
import HeraldCore

/// A frame the server sends on the stream (docs/protocol.md). The server encodes it; clients decode it.
public enum ServerFrame: Codable, Hashable, Sendable {
    /// A new message in one of the user's conversations, with what a notification needs.
    case message(IncomingMessage)
    /// Everything after the client's `after` has been sent; live messages follow. `horizon` is set when the
    /// catch-up started before the retention horizon (`HERALD_RETENTION`): the entries up to it are gone, and the
    /// client should drop what it holds from before and read its conversations afresh.
    case ready(seq: Int64, horizon: Int64? = nil)
    /// A `send` was stored.
    case ack(id: String, seq: Int64)
    /// Something the client sent was refused; `ref` names the `send` it was about, if any. For `rate_limited`,
    /// `retryAfter` says in how many seconds to try again.
    case error(code: String, message: String, ref: String?, retryAfter: Int? = nil)
    /// The user muted or unmuted a conversation (on any device): notify for it, or not, from now on. Sent with
    /// `level` by `PUT`/`DELETE .../mute`, for clients that know only mutes.
    case muted(conversationID: String, muted: Bool)
    /// The user chose a conversation's level (on any device); nil: it follows their default level.
    case level(conversationID: String, LevelChoice?)
    /// The user's notification settings changed (on any device): default level, snooze, quiet hours.
    case notifications(NotificationSettings)
    /// The answer to a `ping`.
    case pong
    /// The server pushed this message to this device (the stream's `device`): it is shown by the push, so the
    /// device does not notify it itself. Sent live once the push went out, and on a catch-up before the message.
    case pushed(conversationID: String, messageID: String, seq: Int64)

    private enum Key: String, CodingKey {
        case type, message, conversation, sender, seq, id, code, ref, retryAfter, muted, horizon, level, until, settings
    }

    private struct Room: Codable {
        var id: String
        var kind: Conversation.Kind
        var title: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(kind, forKey: .kind)
            try container.encode(title, forKey: .title)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .message(let incoming):
            try container.encode("message", forKey: .type)
            try container.encode(WireMessage(incoming.message), forKey: .message)
            let conversation = incoming.conversation
            try container.encode(Room(id: conversation.id, kind: conversation.kind, title: conversation.title), forKey: .conversation)
            try container.encode(WirePerson(incoming.sender), forKey: .sender)
        case .ready(let seq, let horizon):
            try container.encode("ready", forKey: .type)
            try container.encode(seq, forKey: .seq)
            try container.encodeIfPresent(horizon, forKey: .horizon)
        case .ack(let id, let seq):
            try container.encode("ack", forKey: .type)
            try container.encode(id, forKey: .id)
            try container.encode(seq, forKey: .seq)
        case .error(let code, let message, let ref, let retryAfter):
            try container.encode("error", forKey: .type)
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
            try container.encode(ref, forKey: .ref)
            try container.encodeIfPresent(retryAfter, forKey: .retryAfter)
        case .muted(let conversationID, let muted):
            try container.encode("muted", forKey: .type)
            try container.encode(conversationID, forKey: .conversation)
            try container.encode(muted, forKey: .muted)
        case .level(let conversationID, let choice):
            try container.encode("level", forKey: .type)
            try container.encode(conversationID, forKey: .conversation)
            try container.encode(choice?.level, forKey: .level)
            try container.encode(choice?.until, forKey: .until)
        case .notifications(let settings):
            try container.encode("notifications", forKey: .type)
            try container.encode(settings, forKey: .settings)
        case .pong:
            try container.encode("pong", forKey: .type)
        case .pushed(let conversationID, let messageID, let seq):
            try container.encode("pushed", forKey: .type)
            try container.encode(conversationID, forKey: .conversation)
            try container.encode(messageID, forKey: .message)
            try container.encode(seq, forKey: .seq)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        switch try container.decode(String.self, forKey: .type) {
        case "message":
            let body = try container.decode(WireMessage.self, forKey: .message)
            // An entry of a kind, or an event of a type, this side does not know (a newer server's): not shown.
            guard body.kind == "message" || (body.kind == "event" && body.event?.event != nil) else {
                throw UnknownFrameType(type: "message:" + (body.kind == "event" ? body.event?.type ?? "event" : body.kind))
            }
            let room = try container.decode(Room.self, forKey: .conversation)
            let sender = try container.decode(WirePerson.self, forKey: .sender)
            self = .message(IncomingMessage(
                message: body.message,
                conversation: Conversation(id: room.id, kind: room.kind, title: room.title),
                sender: sender.person
            ))
        case "ready":
            self = .ready(
                seq: try container.decode(Int64.self, forKey: .seq),
                horizon: try container.decodeIfPresent(Int64.self, forKey: .horizon))
        case "ack": self = .ack(id: try container.decode(String.self, forKey: .id), seq: try container.decode(Int64.self, forKey: .seq))
        case "error":
            self = .error(code: try container.decode(String.self, forKey: .code),
                          message: try container.decode(String.self, forKey: .message),
                          ref: try container.decodeIfPresent(String.self, forKey: .ref),
                          retryAfter: try container.decodeIfPresent(Int.self, forKey: .retryAfter))
        case "muted":
            self = .muted(conversationID: try container.decode(String.self, forKey: .conversation),
                          muted: try container.decode(Bool.self, forKey: .muted))
        case "level":
            let level = try container.decodeIfPresent(NotificationLevel.self, forKey: .level)
            self = .level(
                conversationID: try container.decode(String.self, forKey: .conversation),
                try level.map { LevelChoice(level: $0, until: try container.decodeIfPresent(Date.self, forKey: .until)) })
        case "notifications":
            self = .notifications(try container.decode(NotificationSettings.self, forKey: .settings))
        case "pong": self = .pong
        case "pushed":
            self = .pushed(
                conversationID: try container.decode(String.self, forKey: .conversation),
                messageID: try container.decode(String.self, forKey: .message),
                seq: try container.decode(Int64.self, forKey: .seq))
        case let other: throw UnknownFrameType(type: other)
        }
    }

    /// The frame as JSON text.
    public var text: String {
        switch self {
        case .message(let incoming): if let text = MessageFrameJSON.text(incoming) { return text }
        case .ack(let id, let seq): return MessageFrameJSON.ack(id: id, seq: seq)
        default: break
        }
        return WireJSON.string(self)
    }

    /// Reads a text frame.
    ///
    /// - Throws: `DecodingError` for text that is not a frame; ``UnknownFrameType`` for a `type` it does not know.
    public init(parsing text: String) throws {
        self = try WireJSON.decoder().decode(ServerFrame.self, from: Data(text.utf8))
    }
}

/// A frame a client sends on the stream (docs/protocol.md). Clients encode it; the server decodes it.
public enum ClientFrame: Codable, Hashable, Sendable {
    /// The conversation on screen, or nil.
    case focus(conversationID: String?)
    /// Foreground or background.
    case app(AppState)
    /// Post a message (mentioning `mentions`, or everyone with `mentionsAll`); answered with `ack`, or `error`
    /// carrying `id` as `ref`.
    case send(
        conversationID: String, id: String, text: String?, imageURL: String?, mentions: [String] = [], mentionsAll: Bool = false)
    /// Keep-alive; answered with `pong`.
    case ping
    /// Every message of the user's conversations up to `through` (a seq) was delivered to this device's
    /// notification engine, which showed, notified or skipped it: the server holds back a push only for what a
    /// device confirmed (docs/behaviour.md §1). Cumulative; sent promptly and coalesced.
    case received(through: Int64)

    private enum Key: String, CodingKey {
        case type, conversation, state, id, text, imageURL, mentions, mentionsAll, through
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .focus(let conversationID):
            try container.encode("focus", forKey: .type)
            try container.encode(conversationID, forKey: .conversation)
        case .app(let state):
            try container.encode("app", forKey: .type)
            try container.encode(state, forKey: .state)
        case .send(let conversationID, let id, let text, let imageURL, let mentions, let mentionsAll):
            try container.encode("send", forKey: .type)
            try container.encode(conversationID, forKey: .conversation)
            try container.encode(id, forKey: .id)
            try container.encodeIfPresent(text, forKey: .text)
            try container.encodeIfPresent(imageURL, forKey: .imageURL)
            if !mentions.isEmpty { try container.encode(mentions, forKey: .mentions) }
            if mentionsAll { try container.encode(mentionsAll, forKey: .mentionsAll) }
        case .ping:
            try container.encode("ping", forKey: .type)
        case .received(let through):
            try container.encode("received", forKey: .type)
            try container.encode(through, forKey: .through)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        switch try container.decode(String.self, forKey: .type) {
        case "focus": self = .focus(conversationID: try container.decodeIfPresent(String.self, forKey: .conversation))
        case "app": self = .app(try container.decode(AppState.self, forKey: .state))
        case "send":
            self = .send(
                conversationID: try container.decode(String.self, forKey: .conversation),
                id: try container.decode(String.self, forKey: .id),
                text: try container.decodeIfPresent(String.self, forKey: .text),
                imageURL: try container.decodeIfPresent(String.self, forKey: .imageURL),
                mentions: try container.decodeIfPresent([String].self, forKey: .mentions) ?? [],
                mentionsAll: try container.decodeIfPresent(Bool.self, forKey: .mentionsAll) ?? false
            )
        case "ping": self = .ping
        case "received": self = .received(through: try container.decode(Int64.self, forKey: .through))
        case let other: throw UnknownFrameType(type: other)
        }
    }

    /// The frame as JSON text.
    public var text: String { WireJSON.string(self) }

    /// Reads a text frame.
    ///
    /// - Throws: `DecodingError` for text that is not a frame; ``UnknownFrameType`` for a `type` it does not know.
    public init(parsing text: String) throws {
        // The frame a stream carries most, a client's confirmation (up to four a second from every stream), is read
        // without a JSON decoder when written as the clients write it (the JavaScript client's key order, or the
        // Swift client's sorted keys). Any other spelling is decoded, to the same frame or the same refusal.
        if let through = Self.plainConfirmation(text) {
            self = .received(through: through)
            return
        }
        // A post, written plainly (as both clients write one without escapes), is read without it too.
        if let send = Self.plainSend(text) {
            self = send
            return
        }
        self = try WireJSON.decoder().decode(ClientFrame.self, from: Data(text.utf8))
    }

    /// `through` of `{"type":"received","through":N}` or `{"through":N,"type":"received"}` written exactly so (no
    /// spaces, `N` a JSON integer from 0 to 18 digits), else nil.
    static func plainConfirmation(_ text: String) -> Int64? {
        let utf8 = text.utf8
        let typeFirst = (#"{"type":"received","through":"#.utf8, "}".utf8)
        let throughFirst = (#"{"through":"#.utf8, #","type":"received"}"#.utf8)
        for (prefix, suffix) in [typeFirst, throughFirst] where utf8.starts(with: prefix) && utf8.reversed().starts(with: suffix.reversed()) {
            guard utf8.count > prefix.count + suffix.count else { return nil }
            let digits = utf8.dropFirst(prefix.count).dropLast(suffix.count)
            guard digits.count <= 18, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  digits.first != UInt8(ascii: "0") || digits.count == 1
            else { return nil }
            return digits.reduce(0) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
        }
        return nil
    }

    /// The `id` of a frame, read leniently so an error about a malformed `send` can still name it.
    public static func reference(in text: String) -> String? {
        struct Reference: Decodable { var id: String? }
        return (try? JSONDecoder().decode(Reference.self, from: Data(text.utf8)))?.id
    }
}

/// A frame whose `type` this side does not know.
public struct UnknownFrameType: Error, Hashable, Sendable {
    /// The `type` it had.
    public var type: String
}
