/// Something that happened to a conversation, told to its members in order with its messages: people added or
/// removed, a member leaving, a new title, owners made or unmade, the group deleted.
///
/// An event is an entry of the conversation like a message (``Message/event``), with its own `seq`; its sender is
/// who did it.
public struct ConversationEvent: Codable, Hashable, Sendable {
    /// What happened.
    public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
        /// ``ConversationEvent/members`` were added by the sender.
        case memberAdded = "member_added"
        /// ``ConversationEvent/members`` were removed by the sender.
        case memberRemoved = "member_removed"
        /// The sender left.
        case memberLeft = "member_left"
        /// The sender gave the group the title ``ConversationEvent/title``.
        case renamed
        /// ``ConversationEvent/members`` became owners (made by the sender, or, when the last owner left, the
        /// longest-standing member, with the one who left as sender).
        case ownerAdded = "owner_added"
        /// ``ConversationEvent/members`` are no longer owners.
        case ownerRemoved = "owner_removed"
        /// The sender deleted the group for everyone: its messages are gone.
        case deleted
        /// The sender changed the text of their message ``ConversationEvent/messageID``: the entry's own `text`
        /// and mentions are the new ones (its image stays the message's).
        case messageEdited = "message_edited"
        /// The sender (the message's, or a group's owner) deleted the message ``ConversationEvent/messageID``: it
        /// is a tombstone from now on.
        case messageDeleted = "message_deleted"
    }

    /// What happened.
    public var kind: Kind
    /// Whom it concerns (added, removed, made owner), with their names as they were then.
    public var members: [Person]
    /// The new title, for ``Kind/renamed`` (nil: the title was removed).
    public var title: String?
    /// The message an edit or a deletion is about (its id, in the same conversation).
    public var messageID: String?
    /// That message's `seq`, when the server said.
    public var messageSeq: Int64?

    /// An event.
    public init(kind: Kind, members: [Person] = [], title: String? = nil, messageID: String? = nil, messageSeq: Int64? = nil) {
        self.kind = kind
        self.members = members
        self.title = title
        self.messageID = messageID
        self.messageSeq = messageSeq
    }

    /// Whether it changes `message`: an edit or a deletion of it (ids compared byte for byte).
    public func isAmendment(of message: Message) -> Bool {
        guard kind == .messageEdited || kind == .messageDeleted, let messageID else { return false }
        return message.event == nil && messageID.utf8.elementsEqual(message.id.utf8)
    }

    /// Whether it changes an earlier message (an edit or a deletion) rather than the conversation.
    public var isAmendment: Bool { kind == .messageEdited || kind == .messageDeleted }

    /// Whether `userID` is among the people it concerns.
    public func concerns(_ userID: String) -> Bool {
        members.contains { $0.id.utf8.elementsEqual(userID.utf8) }
    }

    /// Whether, after it, `userID` is no longer in the conversation (removed, left, or the group deleted), given
    /// that `senderID` did it.
    public func ends(_ userID: String, senderID: String) -> Bool {
        switch kind {
        case .memberRemoved: concerns(userID)
        case .memberLeft: senderID.utf8.elementsEqual(userID.utf8)
        case .deleted: true
        default: false
        }
    }
}

/// Whether a member added to a group sees what was said before they joined.
public enum HistoryAccess: String, Codable, Hashable, Sendable {
    /// Everything, from the group's first message.
    case full
    /// Only what comes after they were added: on every read (history, catch-up, the list's last message, unread
    /// counts).
    case none
}
