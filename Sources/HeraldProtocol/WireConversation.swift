import HeraldCore

/// A conversation as the API shows it: `{"id", "kind", "title", "members"}`.
public struct WireConversation: Codable, Hashable, Sendable {
    /// The conversation id.
    public var id: String
    /// Direct or group.
    public var kind: Conversation.Kind
    /// A group's title; null for direct chats.
    public var title: String?
    /// Every member's user id.
    public var members: [String]

    /// A conversation with these fields.
    public init(id: String, kind: Conversation.Kind, title: String?, members: [String]) {
        self.id = id
        self.kind = kind
        self.title = title
        self.members = members
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(title, forKey: .title)
        try container.encode(members, forKey: .members)
    }
}

/// One conversation in the caller's list: the conversation's fields, then `lastMessage`, `unreadCount`,
/// `readUpTo` (the caller's read marker, a `seq`) and `muted`.
public struct WireConversationSummary: Codable, Hashable, Sendable {
    /// The conversation.
    public var conversation: WireConversation
    /// Its newest message, if any.
    public var lastMessage: WireMessage?
    /// Messages from others after the caller's read marker.
    public var unreadCount: Int
    /// The caller's read marker: the `seq` up to which they have read (0: nothing yet).
    public var readUpTo: Int64
    /// Whether the caller muted it.
    public var muted: Bool

    /// A summary with these fields.
    public init(conversation: WireConversation, lastMessage: WireMessage?, unreadCount: Int, readUpTo: Int64, muted: Bool) {
        self.conversation = conversation
        self.lastMessage = lastMessage
        self.unreadCount = unreadCount
        self.readUpTo = readUpTo
        self.muted = muted
    }

    private enum CodingKeys: String, CodingKey {
        case lastMessage, unreadCount, readUpTo, muted
    }

    public init(from decoder: any Decoder) throws {
        conversation = try WireConversation(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        lastMessage = try container.decodeIfPresent(WireMessage.self, forKey: .lastMessage)
        unreadCount = try container.decode(Int.self, forKey: .unreadCount)
        readUpTo = try container.decode(Int64.self, forKey: .readUpTo)
        muted = try container.decode(Bool.self, forKey: .muted)
    }

    public func encode(to encoder: any Encoder) throws {
        try conversation.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lastMessage, forKey: .lastMessage)
        try container.encode(unreadCount, forKey: .unreadCount)
        try container.encode(readUpTo, forKey: .readUpTo)
        try container.encode(muted, forKey: .muted)
    }
}

/// `{"conversations": [...]}`: the answer to `GET /v1/conversations`.
public struct WireConversationList: Codable, Hashable, Sendable {
    /// The caller's conversations, most recently active first.
    public var conversations: [WireConversationSummary]

    /// A list of these conversations.
    public init(conversations: [WireConversationSummary]) {
        self.conversations = conversations
    }
}

/// `{"messages": [...]}`: the answer to `GET /v1/conversations/{id}/messages`.
public struct WireMessageList: Codable, Hashable, Sendable {
    /// Messages, oldest first.
    public var messages: [WireMessage]

    /// A list of these messages.
    public init(messages: [WireMessage]) {
        self.messages = messages
    }
}

/// An error answer: `{"error": {"code", "message"}}`.
public struct WireError: Codable, Hashable, Sendable {
    /// The error's stable code and its explanation.
    public struct Detail: Codable, Hashable, Sendable {
        /// The stable code, such as `not_a_member`.
        public var code: String
        /// A sentence for people.
        public var message: String

        /// A detail with this code and message.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The error.
    public var error: Detail

    /// An error answer with this code and message.
    public init(code: String, message: String) {
        error = Detail(code: code, message: message)
    }
}
