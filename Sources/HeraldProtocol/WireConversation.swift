import Foundation
import HeraldCore

/// A person as the API and the stream show them: `{"id", "name", "avatarURL"}`.
public struct WirePerson: Codable, Hashable, Sendable {
    /// The user id.
    public var id: String
    /// The display name, from their latest token.
    public var name: String
    /// Their picture, if their token named one.
    public var avatarURL: String?

    /// A person with these fields.
    public init(id: String, name: String, avatarURL: String?) {
        self.id = id
        self.name = name
        self.avatarURL = avatarURL
    }

    /// `person` on the wire.
    public init(_ person: Person) {
        self.init(id: person.id, name: person.displayName, avatarURL: person.avatarURL?.absoluteString)
    }

    /// The person it describes.
    public var person: Person {
        Person(id: id, displayName: name, avatarURL: avatarURL.flatMap(URL.init(string:)))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(avatarURL, forKey: .avatarURL)
    }
}

/// `GET /v1/users`: people found, in id order, and the cursor of the next page (`after`), if any.
public struct WireUserList: Codable, Hashable, Sendable {
    /// The people.
    public var users: [WirePerson]
    /// The last id of this page, to pass as `after` for the next; nil on the last page.
    public var next: String?

    /// A page of people.
    public init(users: [WirePerson], next: String?) {
        self.users = users
        self.next = next
    }
}

/// A conversation as the API shows it: `{"id", "kind", "title", "members", "people", "owners"}`.
public struct WireConversation: Codable, Hashable, Sendable {
    /// The conversation id.
    public var id: String
    /// Direct or group.
    public var kind: Conversation.Kind
    /// A group's title; null for direct chats.
    public var title: String?
    /// Every member's user id.
    public var members: [String]
    /// The members who have signed in at least once, with their names: what a client shows for a direct chat
    /// before it has any messages. A member who never signed in has no name yet and is only in ``members``.
    public var people: [WirePerson]
    /// The members who own a group: they add and remove members, rename it, make owners and may delete it. Empty
    /// for a direct conversation.
    public var owners: [String]

    /// A conversation with these fields.
    public init(
        id: String, kind: Conversation.Kind, title: String?, members: [String], people: [WirePerson], owners: [String] = []
    ) {
        self.id = id
        self.kind = kind
        self.title = title
        self.members = members
        self.people = people
        self.owners = owners
    }

    /// Its id, kind and title.
    public var conversation: Conversation {
        Conversation(id: id, kind: kind, title: title)
    }

    private enum CodingKeys: String, CodingKey {
        case id, kind, title, members, people, owners
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        kind = try container.decode(Conversation.Kind.self, forKey: .kind)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        members = try container.decode([String].self, forKey: .members)
        people = try container.decodeIfPresent([WirePerson].self, forKey: .people) ?? []
        owners = try container.decodeIfPresent([String].self, forKey: .owners) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(title, forKey: .title)
        try container.encode(members, forKey: .members)
        try container.encode(people, forKey: .people)
        try container.encode(owners, forKey: .owners)
    }
}

/// One conversation in the caller's list: the conversation's fields, then `lastMessage`, `unreadCount`,
/// `readUpTo` (the caller's read marker, a `seq`), `muted` (at `nothing` now, by its own level or the caller's
/// default), and `level` and `levelUntil` (the caller's own level for it and when that ends; null: the default).
public struct WireConversationSummary: Codable, Hashable, Sendable {
    /// The conversation.
    public var conversation: WireConversation
    /// Its newest entry the caller saw, if any: a message, or the event that added them.
    public var lastMessage: WireMessage?
    /// Messages from others after the caller's read marker.
    public var unreadCount: Int
    /// The caller's read marker: the `seq` up to which they have read (0: nothing yet).
    public var readUpTo: Int64
    /// Whether it is at `nothing` now (muted), by its own level or the caller's default.
    public var muted: Bool
    /// The caller's own level for it while that holds; nil when it follows their default level.
    public var level: LevelChoice?

    /// A summary with these fields.
    public init(
        conversation: WireConversation, lastMessage: WireMessage?, unreadCount: Int, readUpTo: Int64, muted: Bool,
        level: LevelChoice? = nil
    ) {
        self.conversation = conversation
        self.lastMessage = lastMessage
        self.unreadCount = unreadCount
        self.readUpTo = readUpTo
        self.muted = muted
        self.level = level
    }

    private enum CodingKeys: String, CodingKey {
        case lastMessage, unreadCount, readUpTo, muted, level, levelUntil
    }

    public init(from decoder: any Decoder) throws {
        conversation = try WireConversation(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        lastMessage = try container.decodeIfPresent(WireMessage.self, forKey: .lastMessage)
        unreadCount = try container.decode(Int.self, forKey: .unreadCount)
        readUpTo = try container.decode(Int64.self, forKey: .readUpTo)
        muted = try container.decode(Bool.self, forKey: .muted)
        level = try container.decodeIfPresent(NotificationLevel.self, forKey: .level).map {
            LevelChoice(level: $0, until: try container.decodeIfPresent(Date.self, forKey: .levelUntil))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try conversation.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lastMessage, forKey: .lastMessage)
        try container.encode(unreadCount, forKey: .unreadCount)
        try container.encode(readUpTo, forKey: .readUpTo)
        try container.encode(muted, forKey: .muted)
        try container.encode(level?.level, forKey: .level)
        try container.encode(level?.until, forKey: .levelUntil)
    }
}

/// `{"conversations": [...], "next": cursor}`: a page of the answer to `GET /v1/conversations`.
public struct WireConversationList: Codable, Hashable, Sendable {
    /// The caller's conversations, most recently active first.
    public var conversations: [WireConversationSummary]
    /// The `cursor` that asks for the next page; null on the last page.
    public var next: String?

    /// A page of these conversations.
    public init(conversations: [WireConversationSummary], next: String? = nil) {
        self.conversations = conversations
        self.next = next
    }

    private enum CodingKeys: String, CodingKey {
        case conversations, next
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversations, forKey: .conversations)
        try container.encode(next, forKey: .next)
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

/// `{"title": ...}`: the body that renames a group (`PATCH /v1/conversations/{id}`, and the service route). The key is
/// always written: `null` removes the title.
public struct WireRename: Encodable, Hashable, Sendable {
    /// The new title; nil for none.
    public var title: String?

    /// A rename to `title`.
    public init(title: String?) {
        self.title = title
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(title, forKey: .title)  // null, not absent: the server requires the key
    }

    private enum CodingKeys: String, CodingKey { case title }
}
