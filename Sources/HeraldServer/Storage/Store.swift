import Foundation
import HeraldCore

/// A conversation with its members.
public struct ConversationRecord: Hashable, Sendable {
    /// Id, kind and title.
    public var conversation: Conversation
    /// The user ids of its members.
    public var memberIDs: [String]
    /// The members who have signed in at least once (so have a name), in id order.
    public var people: [Person]
}

/// A conversation as one member sees it in their list.
public struct ConversationSummary: Hashable, Sendable {
    /// The conversation and its members.
    public var record: ConversationRecord
    /// Its newest message, if any.
    public var lastMessage: Message?
    /// Messages from others after the member's read marker.
    public var unreadCount: Int
    /// The member's read marker: the `seq` up to which they have read.
    public var readUpTo: Int64
    /// Whether the member muted it.
    public var muted: Bool
}

/// A message to store.
public struct MessageDraft: Hashable, Sendable {
    /// The message id: the client's, or one the server made.
    public var id: String
    /// Where it goes.
    public var conversation: Conversation
    /// Who sends it.
    public var sender: Person
    /// Its text.
    public var text: String?
    /// Its image.
    public var imageURL: URL?
}

/// What storing a message did.
public enum PostOutcome: Hashable, Sendable {
    /// Stored now, with its sequence number.
    case stored(Message)
    /// The same sender already stored this id in this conversation: the stored message, unchanged.
    case existing(Message)
}

/// Where Herald keeps users, conversations, messages and devices.
///
/// Implementations must store a message durably before ``post(_:onStored:)`` returns, and give messages
/// increasing sequence numbers, calling `onStored` in sequence order: the live stream relies on that to resume
/// with no gap and no duplicate.
public protocol Store: Sendable {
    /// Creates or updates a user from their token's claims.
    func upsertUser(_ person: Person) async throws

    /// Creates a conversation of `memberIDs` (the creator included). A direct conversation between the same two
    /// people that already exists is returned instead, with `created` false.
    func createConversation(
        kind: Conversation.Kind,
        title: String?,
        memberIDs: [String]
    ) async throws -> (record: ConversationRecord, created: Bool)

    /// The conversation with `id`, or nil.
    func conversation(id: String) async throws -> ConversationRecord?

    /// The conversations `userID` is a member of, newest activity first.
    func conversations(of userID: String) async throws -> [ConversationSummary]

    /// Stores a message, unless its id is taken. `onStored` runs with the stored message before any later
    /// message is stored.
    ///
    /// - Throws: ``APIError`` `id_conflict` when the id belongs to another sender's or conversation's message.
    func post(
        _ draft: MessageDraft,
        onStored: @escaping @Sendable (IncomingMessage) -> Void
    ) async throws -> PostOutcome

    /// Messages of one conversation, oldest first: the first `limit` after `after`, else the last `limit`
    /// (before `before`, if given).
    func messages(in conversationID: String, after: Int64?, before: Int64?, limit: Int) async throws -> [Message]

    /// Every message after `after` in the conversations of `userID`, in sequence order, at most `limit`.
    func messages(for userID: String, after: Int64, limit: Int) async throws -> [IncomingMessage]

    /// The highest sequence number stored (0 when empty).
    func latestSeq() async throws -> Int64

    /// Moves `userID`'s read marker in a conversation forward to `seq` (never back).
    func markRead(userID: String, conversationID: String, upTo seq: Int64) async throws

    /// Mutes or unmutes a conversation for `userID`.
    func setMuted(_ muted: Bool, userID: String, conversationID: String) async throws

    /// Registers or updates a device's push token.
    func registerDevice(_ device: DeviceRegistration) async throws

    /// Removes a device of `userID`; false if there was none.
    func removeDevice(id: String, userID: String) async throws -> Bool

    /// The devices of `userID`.
    func devices(of userID: String) async throws -> [DeviceRegistration]
}

/// A device that can receive pushes.
public struct DeviceRegistration: Hashable, Sendable, Codable {
    /// The push service a token belongs to.
    public enum Platform: String, Hashable, Sendable, Codable, CaseIterable {
        /// Apple Push Notification service.
        case apns
        /// Firebase Cloud Messaging.
        case fcm
        /// Web Push.
        case webpush
    }

    /// The app's id for this device.
    public var id: String
    /// Its owner.
    public var userID: String
    /// Its push service.
    public var platform: Platform
    /// Its push token (or, for Web Push, its subscription).
    public var token: String

    /// Creates a registration.
    public init(id: String, userID: String, platform: Platform, token: String) {
        self.id = id
        self.userID = userID
        self.platform = platform
        self.token = token
    }
}
