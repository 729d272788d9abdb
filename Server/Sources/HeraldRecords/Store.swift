import Foundation
import HeraldCore
import HeraldProtocol

/// The users: who has signed in, and whom one may find.
public protocol UserStore: Sendable {
    /// Creates or updates a user from their token's claims, or from the app's backend. An empty name (an identity
    /// provider's token without one) keeps the name and picture the user has; so does a stand-in name
    /// (`nameIsStandIn`, an email's local part) when the user already has one.
    ///
    /// - Returns: the user as stored now: the name and picture others see.
    /// - Throws: ``StoreError/userErased`` when the id belongs to an erased user: it never comes back.
    @discardableResult
    func upsertUser(_ person: Person, nameIsStandIn: Bool) async throws -> Person

    /// The user `id` as others see them, if known (signed in, or made by the app's backend).
    func user(id: String) async throws -> Person?

    /// Erases a user: they leave every conversation (directs too: an event each, as when leaving a group), and
    /// their devices, read markers, levels, settings and pushes go; their name and picture are forgotten (they are
    /// ``ErasedUser/displayName`` from then on) and their id can neither sign in nor be used again. Their messages
    /// stay. Erasing one erased before does what is left undone (nothing, usually).
    ///
    /// - Throws: ``StoreError/userNotFound`` when no user has the id.
    func eraseUser(_ id: String) async throws -> ErasedUser

    /// Of `ids`, those that are no known user: one who signed in at least once (or whom the app's backend made).
    func unknownUsers(among ids: [String]) async throws -> [String]

    /// The known users `search` finds, in id order: never the one searching.
    func findUsers(_ search: UserSearch) async throws -> [Person]
}

extension UserStore {
    /// Creates or updates a user with the name given (see ``upsertUser(_:nameIsStandIn:)``).
    @discardableResult
    public func upsertUser(_ person: Person) async throws -> Person {
        try await upsertUser(person, nameIsStandIn: false)
    }
}

/// Conversations and their members: what exists, who is in it, and the changes to groups.
public protocol ConversationStore: Sendable {
    /// Creates a conversation. A direct conversation between the same two people that already exists is returned
    /// instead, with `created` false; so is one with the same `id` and kind (a backend's retry).
    ///
    /// - Throws: ``StoreError/conversationExists(_:)`` when `id` is taken by a conversation of another kind, or was
    ///   used by one since deleted; or when the two people of a new direct conversation with an `id` already have
    ///   one under another id.
    func createConversation(_ new: NewConversation) async throws -> (record: ConversationRecord, created: Bool)

    /// The conversation with `id` and its current members and owners, or nil (none, or deleted).
    func conversation(id: String) async throws -> ConversationRecord?

    /// Who is and was in the conversation, from which `seq` to which: what the live fan-out and the post checks
    /// keep in memory. Nil when there is no such conversation.
    func memberView(of conversationID: String) async throws -> MemberView?

    /// A page of the conversations `userID` is a member of, newest activity first (ties by id, descending),
    /// starting after `cursor`, those `filter` keeps. Its work is bounded by `limit`, never by how many
    /// conversations the member has.
    func conversations(of userID: String, after cursor: ConversationCursor?, limit: Int, filter: ConversationFilter) async throws -> ConversationPage

    /// One conversation as `userID`'s list shows it; nil when they are not a member of it (or it does not exist).
    func summary(of conversationID: String, for userID: String) async throws -> ConversationSummary?

    /// Applies `change` to a group, by `actor`, checking who may (owners, or the app's backend), and appends its
    /// events to the log. `memberLimit` bounds a group's members.
    ///
    /// - Throws: ``StoreError`` `conversationNotFound`, `notAMember` (the caller), `directConversation`,
    ///   `notAnOwner`, `memberNotFound`, `memberLimit`, `lastOwner`.
    func change(_ change: ConversationChange, in conversationID: String, by actor: ChangeActor, memberLimit: Int) async throws -> ChangeOutcome
}

extension ConversationStore {
    /// Creates a conversation of `memberIDs` made by their first, who owns it if it is a group (see
    /// ``createConversation(_:)``).
    public func createConversation(
        kind: Conversation.Kind, title: String?, memberIDs: [String]
    ) async throws -> (record: ConversationRecord, created: Bool) {
        try await createConversation(NewConversation(
            kind: kind, title: title, memberIDs: memberIDs,
            ownerIDs: kind == .group ? Array(memberIDs.prefix(1)) : []))
    }

    /// Applies `change` by the member `userID` (see ``change(_:in:by:memberLimit:)``).
    public func change(_ change: ConversationChange, in conversationID: String, by userID: String, memberLimit: Int) async throws -> ChangeOutcome {
        try await self.change(change, in: conversationID, by: .member(userID), memberLimit: memberLimit)
    }
}

/// The event log: messages and events, each with a `seq` from the one sequence, in the order members learn them.
///
/// Storage persists entries and answers reads; it calls nothing back. Each store tells its ``EventLog`` what it
/// commits, and the log hands the entries on.
public protocol EntryStore: Sendable {
    /// Stores a message, unless its id is taken in its conversation, and returns once its entry was handed on by
    /// the log (so its sender's stream has it before the answer).
    ///
    /// - Throws: ``StoreError/idTaken(_:)`` when another member's message in the same conversation has the id;
    ///   ``StoreError/notAMember`` when the sender is not (or no longer) a member.
    func post(_ draft: MessageDraft) async throws -> PostOutcome

    /// Stores a message as ``post(_:)`` does, and calls `answer` with what ``post(_:)`` would return or throw, on the
    /// thread that committed it or handed it on (so `answer` must not wait): the way in with no task to wake.
    func post(_ draft: MessageDraft, answer: @escaping @Sendable (Result<PostOutcome, any Error>) -> Void)

    /// Edits or deletes a message (``AmendmentRules`` decide who may, until when), appending the amendment's entry
    /// to the log and making the outboxes follow, in one transaction.
    ///
    /// - Throws: ``StoreError`` `conversationNotFound`, `notAMember`, `messageNotFound`, `messageDeleted`,
    ///   `notTheSender`, `editWindowPassed`, `editLimit`.
    func amend(_ amendment: MessageAmendment) async throws -> AmendOutcome

    /// Entries of one conversation as `userID` may see them (from when they could see it: all of it, or from
    /// when they were added; all of it for nil, the app's backend), oldest first: the first `limit` after `after`,
    /// else the last `limit` (before `before`, if given).
    ///
    /// - Throws: ``StoreError/notAMember`` when `userID` is not a member; ``StoreError/conversationNotFound`` when
    ///   there is no such conversation (for the app's backend).
    func entries(in conversationID: String, for userID: String?, after: Int64?, before: Int64?, limit: Int) async throws -> [Message]

    /// The entries with `after < seq <= through` that reached `userID` (their conversations, while they were in
    /// them), in sequence order, at most `limit`. Its work grows with `through - after`, whoever the user is:
    /// callers keep that window small.
    func entries(for userID: String, after: Int64, through: Int64, limit: Int) async throws -> [IncomingMessage]

    /// Every entry with `after < seq <= through`, in sequence order, at most `limit`: what the log reads of other
    /// nodes' commits, and what the push decider reads when it is behind.
    func entries(after: Int64, through: Int64, limit: Int) async throws -> [IncomingMessage]

    /// The highest sequence number stored (0 when empty).
    func latestSeq() async throws -> Int64

    /// Deletes up to `limit` entries stored before `date` (retention), oldest first, none past the place of any
    /// of the log's durable readers in `waitingFor` (`push`, `webhook`): they have not told of them yet. Returns
    /// how many went, and the horizon: the highest seq retention ever deleted.
    func expireEntries(before date: Date, limit: Int, waitingFor readers: [String]) async throws -> (deleted: Int, horizon: Int64)

    /// The highest seq retention ever deleted (0: none).
    func retentionHorizon() async throws -> Int64
}

/// Each member's read marker, levels and notification settings.
public protocol ReadStateStore: Sendable {
    /// A read, and all it sets off, in one transaction: the member's read marker moves forward to
    /// ``ReadMark/upTo`` (never back, and never past the conversation's latest entry); a marker that moved queues a
    /// `read` event for the app's backend (with ``ReadMark/webhook``); with ``ReadMark/clearsDue``, the alerts still
    /// waiting for what is read are dropped and each device that was shown the conversation by a push, but the one
    /// that read, gets a clear. Posting a message moves the sender's marker to it by itself.
    @discardableResult
    func markRead(_ read: ReadMark) async throws -> ReadOutcome

    /// Sets `userID`'s own level for a conversation they are a member of (nil: follow their default level; a mute is
    /// ``LevelChoice/muted``).
    func setLevel(_ choice: LevelChoice?, userID: String, conversationID: String) async throws

    /// `userID`'s notification settings (the defaults when they set none).
    func notificationSettings(of userID: String) async throws -> NotificationSettings

    /// Replaces `userID`'s notification settings (already checked: ``NotificationSettings/problem`` is nil).
    func setNotificationSettings(_ settings: NotificationSettings, of userID: String) async throws
}

/// The devices that can receive pushes.
public protocol DeviceStore: Sendable {
    /// Registers or updates a device of its user. A push token belongs to one device: registering it removes it
    /// from any other (a phone that changed hands).
    ///
    /// The device's key becomes the one whose ``DeviceReadKey/digest(of:)`` is `keyDigest` (nil: it has none, and
    /// reads nothing); the key it had before stops working.
    ///
    /// - Throws: ``StoreError/deviceLimit(_:)`` when the user already has `limit` devices and this one is new.
    func registerDevice(_ device: DeviceRegistration, limit: Int, keyDigest: String?) async throws

    /// Records the system permission `userID`'s device `id` reports, and that it was seen now; false if there is no
    /// such device.
    func setPermission(_ permission: DevicePermission, deviceID: String, userID: String) async throws -> Bool

    /// `userID`'s devices with what they last reported: their permission, and when they were last seen (registered
    /// or reported), by id.
    func reportedDevices(of userID: String) async throws -> [ReportedDevice]

    /// Removes a device of `userID`; false if there was none. With `webhook` (a push service said its token is
    /// dead), a `device.removed` event for the app's backend is queued in the same transaction.
    func removeDevice(id: String, userID: String, webhook: Bool) async throws -> Bool

    /// The devices of `userID`.
    func devices(of userID: String) async throws -> [DeviceRegistration]

    /// Whether the device whose key has `keyDigest` may read message `messageID` of `conversationID`: its alert, which
    /// withheld its words (``PushContentMode``), was sent to the device at or after `since` (``PushOutbox/leasePushJobs(now:platform:limit:)`` grants it), and the
    /// device's user is still a member of the conversation, which still exists.
    func pushedMessage(keyDigest: String, conversationID: String, messageID: String, since: Date) async throws -> PushGrantLookup
}

/// What a device key may read of a message (``DeviceStore/pushedMessage(keyDigest:conversationID:messageID:since:)``).
public enum PushGrantLookup: Hashable, Sendable {
    /// No device has the key (it was never made, replaced by a new registration, or its device was removed).
    case unknownKey
    /// The key is a device's, but that device may not read the message, or there is no such message: the two are
    /// not told apart.
    case notGranted
    /// The device may read it.
    case granted(PushGrant)
}

/// A message a device key may read: whose device it is, and the message's `seq`.
public struct PushGrant: Hashable, Sendable {
    /// The device's user.
    public var userID: String
    /// The device.
    public var deviceID: String
    /// The message.
    public var seq: Int64

    /// How long a device's key may read a message after its alert was sent: 7 days (a phone that was off gets its
    /// pushes when it is back on); older grants are refused, and forgotten within the hour.
    public static let lifetime: TimeInterval = 7 * 86_400

    /// A grant.
    public init(userID: String, deviceID: String, seq: Int64) {
        self.userID = userID
        self.deviceID = deviceID
        self.seq = seq
    }
}

extension ReadStateStore {
    /// Moves a read marker, telling no webhook and queuing no clear (see ``markRead(_:)``).
    public func markRead(userID: String, conversationID: String, upTo seq: Int64) async throws {
        try await markRead(ReadMark(userID: userID, conversationID: conversationID, upTo: seq))
    }
}

/// A member's read of a conversation, and what it sets off (``ReadStateStore/markRead(_:)``).
public struct ReadMark: Hashable, Sendable {
    /// Who read.
    public var userID: String
    /// What they read.
    public var conversationID: String
    /// Up to which `seq`.
    public var upTo: Int64
    /// The device that read, if the app said: it gets no clear.
    public var device: String?
    /// Whether a marker that moved queues a `read` webhook event.
    public var webhook: Bool
    /// When the clears to the other devices are due; nil: none (there is nothing to push with).
    public var clearsDue: Date?

    /// A read.
    public init(
        userID: String, conversationID: String, upTo: Int64, device: String? = nil, webhook: Bool = false,
        clearsDue: Date? = nil
    ) {
        self.userID = userID
        self.conversationID = conversationID
        self.upTo = upTo
        self.device = device
        self.webhook = webhook
        self.clearsDue = clearsDue
    }
}

/// What a read queued.
public struct ReadOutcome: Hashable, Sendable {
    /// Webhook events (0 or 1).
    public var events = 0
    /// Clears to other devices.
    public var clears = 0

    /// One of these, member by member.
    package init(events: Int = 0, clears: Int = 0) {
        self.events = events
        self.clears = clears
    }
}

extension DeviceStore {
    /// Registers or updates a device without a key: it reads no message by key (the demo's devices, benchmarks).
    public func registerDevice(_ device: DeviceRegistration, limit: Int) async throws {
        try await registerDevice(device, limit: limit, keyDigest: nil)
    }

    /// Removes a device, telling no webhook (see ``removeDevice(id:userID:webhook:)``).
    public func removeDevice(id: String, userID: String) async throws -> Bool {
        try await removeDevice(id: id, userID: userID, webhook: false)
    }
}

/// Where Herald keeps users, conversations, the event log, read markers, devices and the push outbox: each concern
/// a protocol of its own, so that code needing one depends on that one.
public protocol Store:
    UserStore, ConversationStore, EntryStore, ReadStateStore, DeviceStore, PushOutbox, WebhookOutbox, ConsumerPlaces,
    TrailStore, CommitReporter, HealthReporter
{}

/// A store that tells what it commits.
public protocol CommitReporter: Sendable {
    /// From now on, what this store commits is told to `sink` (the node's ``EventLog``); until then, to nobody.
    func attach(_ sink: any CommitSink)
}

/// A store that says whether its database is well.
public protocol HealthReporter: Sendable {
    /// Whether the database answers now and takes writes (`/health`); at most `timeout` to find out.
    func health(within timeout: Duration) async -> StoreHealth
}

/// What `/health` says of the database.
public enum StoreHealth: String, Hashable, Sendable {
    /// It answers and takes writes.
    case ok
    /// It does not answer.
    case unreachable
    /// Its disk is full: writes fail until space is freed.
    case full
}

/// A device that can receive pushes.
public struct DeviceRegistration: Hashable, Sendable, Codable {
    /// The push service a token belongs to.
    public typealias Platform = PushPlatform

    /// The app's id for this device.
    public var id: String
    /// Its owner.
    public var userID: String
    /// Its push service.
    public var platform: Platform
    /// Its push token (or, for Web Push, its subscription).
    public var token: String
    /// The keys its pushes are encrypted to (`HERALD_PUSH_CONTENT=encrypted`), if it registered them. A Web Push
    /// subscription's are in its token.
    public var keys: PushEncryptionKeys?

    /// Creates a registration.
    public init(id: String, userID: String, platform: Platform, token: String, keys: PushEncryptionKeys? = nil) {
        self.id = id
        self.userID = userID
        self.platform = platform
        self.token = token
        self.keys = keys
    }
}

/// A device's push keys, as a Web Push subscription holds them: its P-256 public key (65 bytes, uncompressed) and its
/// 16-byte authentication secret. Kept in the `devices` row as JSON (``stored``).
public struct PushEncryptionKeys: Hashable, Sendable, Codable {
    /// The public key.
    public var p256dh: Data
    /// The authentication secret.
    public var auth: Data

    /// Keys of those bytes.
    public init(p256dh: Data, auth: Data) {
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The keys as the row keeps them: `{"auth":"…","p256dh":"…"}`, base64url.
    public var stored: String {
        #"{"auth":"\#(auth.base64URLEncodedString())","p256dh":"\#(p256dh.base64URLEncodedString())"}"#
    }

    /// Keys read back from ``stored``; nil for anything else.
    public init?(stored: String) {
        guard let fields = try? JSONDecoder().decode([String: String].self, from: Data(stored.utf8)),
              let p256dh = fields["p256dh"].flatMap({ Data(base64URL: $0) }), let auth = fields["auth"].flatMap({ Data(base64URL: $0) })
        else { return nil }
        self.init(p256dh: p256dh, auth: auth)
    }
}

/// A device with what it last reported (``DeviceStore/reportedDevices(of:)``).
public struct ReportedDevice: Hashable, Sendable {
    /// The device.
    public var device: DeviceRegistration
    /// The system permission it last reported; nil when it never did.
    public var permission: DevicePermission?
    /// When it last registered or reported its permission.
    public var lastSeen: Date?

    /// A device.
    public init(device: DeviceRegistration, permission: DevicePermission?, lastSeen: Date?) {
        self.device = device
        self.permission = permission
        self.lastSeen = lastSeen
    }
}
