/// A chat between two people (direct) or more (group).
public struct Conversation: Codable, Hashable, Sendable, Identifiable {
    /// Whether a conversation is a one-to-one chat or a group.
    public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
        /// Two people; notifications name the sender only.
        case direct
        /// Any number of people; notifications name the group too.
        case group
    }

    /// The conversation id; notifications use it as their thread id.
    public var id: String
    /// Direct or group.
    public var kind: Kind
    /// The group's title. Direct chats usually have none.
    public var title: String?

    /// Creates a conversation.
    public init(id: String, kind: Kind, title: String? = nil) {
        self.id = id
        self.kind = kind
        self.title = title
    }
}
