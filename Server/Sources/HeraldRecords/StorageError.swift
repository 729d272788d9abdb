import HeraldProtocol

/// Why a database cannot be used, in words for the person running the server.
public struct StorageError: Error, CustomStringConvertible {
    /// What is wrong, and what to do about it.
    public var description: String

    package init(_ description: String) {
        self.description = description
    }
}

/// What a store refuses, or finds wrong, in its own terms; ``StorageFailure/apiError(for:)`` says what the API
/// answers for each.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// The message id is already used by another member's message in the same conversation.
    case idTaken(String)
    /// The user already has this many devices, and the one being registered is new.
    case deviceLimit(Int)
    /// A row that does not read back as it was written, or a write that left no row.
    case damaged(String)
    /// The store is closing and takes no more work.
    case closing
    /// No conversation has that id (or it was deleted).
    case conversationNotFound
    /// The user is not (or no longer) a member of the conversation.
    case notAMember
    /// A direct conversation's members, title and owners never change.
    case directConversation
    /// Only the group's owners may do this.
    case notAnOwner
    /// The user to remove, or to make an owner, is not a member.
    case memberNotFound(String)
    /// A group has at most this many members.
    case memberLimit(Int)
    /// The change would leave the group with no owner.
    case lastOwner
    /// No user has that id.
    case userNotFound
    /// The user was erased: their id never signs in nor comes back.
    case userErased
    /// A conversation id the app gave is taken: by a conversation of another kind, one deleted, or (for a direct
    /// conversation) its two people already have one, with the id given.
    case conversationExists(String)
    /// No message of the conversation has that id (an event is not a message).
    case messageNotFound
    /// Only a message's sender may edit it; only its sender or a group's owner may delete it.
    case notTheSender
    /// The message is older than the edit window (seconds).
    case editWindowPassed(Int)
    /// The message was deleted: it is a tombstone, which nothing changes.
    case messageDeleted
    /// A message is edited at most this many times.
    case editLimit(Int)

    public var description: String {
        switch self {
        case .idTaken(let id): "message id \(id) is already used by another message in this conversation"
        case .deviceLimit(let limit): "a user has at most \(limit) devices; remove old ones (DELETE /v1/devices/{deviceId})"
        case .damaged(let what): "damaged data: \(what)"
        case .closing: "the server is shutting down"
        case .conversationNotFound: "no conversation has that id"
        case .notAMember: "you are not a member of this conversation"
        case .directConversation: "a direct conversation's members, title and owners never change"
        case .notAnOwner: "only the group's owners may do this"
        case .memberNotFound(let id): "\(ControlCharacters.escaped(id)) is not a member of this conversation"
        case .memberLimit(let limit): "a group has at most \(limit) members"
        case .lastOwner: "a group needs an owner: make someone else an owner first"
        case .userNotFound: "no user has that id"
        case .userErased: "this user was erased: the id cannot sign in or be used again"
        case .conversationExists(let id):
            "the conversation id is taken (\(ControlCharacters.escaped(id)) already exists, as another kind, deleted, or as these two people's direct conversation)"
        case .messageNotFound: "no message of this conversation has that id"
        case .notTheSender: "only its sender may edit a message, and only its sender or a group's owner may delete it"
        case .editWindowPassed(let seconds): "a message can be edited for \(seconds) seconds after it was sent"
        case .messageDeleted: "the message was deleted"
        case .editLimit(let limit): "a message can be edited at most \(limit) times"
        }
    }
}
