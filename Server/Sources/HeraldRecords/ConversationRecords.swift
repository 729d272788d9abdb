import Foundation
import HeraldCore
import HeraldProtocol

/// A conversation with its members.
public struct ConversationRecord: Hashable, Sendable {
    /// Id, kind and title.
    public var conversation: Conversation
    /// The user ids of its members.
    public var memberIDs: [String]
    /// The members who have signed in at least once (so have a name), in id order.
    public var people: [Person]
    /// The members who own the group, in id order (none for a direct conversation).
    public var ownerIDs: [String] = []

    /// One of these, member by member.
    package init(conversation: Conversation, memberIDs: [String], people: [Person], ownerIDs: [String] = []) {
        self.conversation = conversation
        self.memberIDs = memberIDs
        self.people = people
        self.ownerIDs = ownerIDs
    }
}

/// A conversation as one member sees it in their list.
public struct ConversationSummary: Hashable, Sendable {
    /// The conversation and its members.
    public var record: ConversationRecord
    /// Its newest entry the member saw, if any: a message, or the event that added them.
    public var lastMessage: Message?
    /// Messages from others after the member's read marker, counted up to ``ConversationSummary/unreadLimit``.
    public var unreadCount: Int
    /// The member's read marker: the `seq` up to which they have read.
    public var readUpTo: Int64
    /// Whether it is at `nothing` now (muted): by its own level, or by the member's default.
    public var muted: Bool
    /// The member's own level for it while that holds; nil when it follows their default level.
    public var level: LevelChoice?
    /// Where it stands in the member's list: its latest `seq` (for a conversation without messages, the latest
    /// `seq` of the server when the member joined it).
    public var activity: Int64

    /// Unread counts stop at this many: a member with more sees "1000" and the app shows "999+". Counting is work
    /// done on every list, and must stay small however much is unread.
    public static let unreadLimit = 1_000
}

/// Which of a member's conversations a list shows.
public enum ConversationFilter: String, Hashable, Sendable {
    /// Every one.
    case all
    /// Those whose own level is `nothing` (muted; a timed mute too, until it ends).
    case muted
    /// Those with a level of their own that still holds (any level).
    case leveled

    /// Its condition on the member row `me` at `now` (a number in the SQL: no injection).
    package func sql(at now: Date) -> String {
        let holds = "(me.level_until IS NULL OR me.level_until > \(now.timeIntervalSince1970))"
        switch self {
        case .all: return "1 = 1"
        case .muted: return "me.level = 'nothing' AND \(holds)"
        case .leveled: return "me.level IS NOT NULL AND \(holds)"
        }
    }
}

/// How a store finds a page of a member's conversation list, where a member's place is the later of their
/// conversation's activity (its last message) and their own (when they joined).
package enum ListPlan: Equatable, Sendable {
    /// Every conversation of the member, sorted: what a page costs unless the member is in most conversations.
    case scan
    /// Two walks in order, merged: all conversations by activity (`conversations_by_activity`), keeping the
    /// member's, and the member's own rows by when they joined (`members_by_activity`). A place is at least each of
    /// the two activities, so the page is among the first `limit` of each walk.
    case walk

    /// The walk for the whole list (no filter) of a member of at least half of all `conversations` and of four pages
    /// or more: its first walk then reads about two conversations for each of theirs, and at worst (a last page) all
    /// of them, no more than twice the member's rows that a scan reads. Otherwise the scan.
    package init(memberships: Int, conversations: Int, limit: Int, filtered: Bool) {
        let enough = memberships >= 4 * max(limit, 1) && 2 * memberships >= conversations
        self = !filtered && conversations > 0 && enough ? .walk : .scan
    }

    /// How many of a member's rows a store need count to choose: past this the choice no longer changes.
    package static func countLimit(conversations: Int, limit: Int) -> Int {
        max(4 * max(limit, 1), (conversations + 1) / 2)
    }
}

/// Where a page of a member's conversation list ends: the next page starts after this conversation.
///
/// On the wire it is an opaque string (``encoded``); clients pass back what they were given.
public struct ConversationCursor: Hashable, Sendable {
    /// The activity of the last conversation of the page.
    public var activity: Int64
    /// Its id, which orders conversations of equal activity.
    public var conversationID: String

    /// A cursor after this conversation.
    public init(activity: Int64, conversationID: String) {
        self.activity = activity
        self.conversationID = conversationID
    }

    /// The cursor after `summary`.
    public init(after summary: ConversationSummary) {
        self.init(activity: summary.activity, conversationID: summary.record.conversation.id)
    }

    /// The cursor as clients see it: base64url of `activity.id`.
    public var encoded: String {
        Data("\(activity).\(conversationID)".utf8).base64URLEncodedString()
    }

    /// The cursor `encoded` stands for, or nil if it is not one a server made.
    public init?(encoded: String) {
        guard encoded.utf8.count <= 512, let data = Data(base64URL: encoded),
              let text = String(data: data, encoding: .utf8), let dot = text.firstIndex(of: "."),
              let activity = Int64(text[..<dot]), activity >= 0
        else { return nil }
        let id = String(text[text.index(after: dot)...])
        guard HeraldID.problem(with: id) == nil else { return nil }
        self.init(activity: activity, conversationID: id)
    }
}

/// One page of a member's conversations, newest activity first.
public struct ConversationPage: Hashable, Sendable {
    /// The conversations.
    public var summaries: [ConversationSummary]
    /// Where the next page starts; nil when this is the last.
    public var next: ConversationCursor?

    /// One of these, member by member.
    package init(summaries: [ConversationSummary], next: ConversationCursor? = nil) {
        self.summaries = summaries
        self.next = next
    }
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
    /// Whether it notifies nobody (no banner, no push): the app's backend's choice.
    public var silent: Bool
    /// The members it mentions (already checked: members only, at most ``Message/maxMentions``).
    public var mentions: [String]
    /// Whether it mentions everyone.
    public var mentionsAll: Bool

    /// A message to store. A `sender` with an empty id is the app's backend: a system message, which needs no
    /// membership.
    public init(
        id: String, conversation: Conversation, sender: Person, text: String?, imageURL: URL?, silent: Bool = false,
        mentions: [String] = [], mentionsAll: Bool = false
    ) {
        self.id = id
        self.conversation = conversation
        self.sender = sender
        self.text = text
        self.imageURL = imageURL
        self.silent = silent
        self.mentions = mentions
        self.mentionsAll = mentionsAll
    }

    /// The `mentions` column: JSON `{"ids", "all"}`, or nil when it mentions no one.
    package var mentionsColumn: String? { Rows.mentionsColumn(ids: mentions, all: mentionsAll) }
}

/// What names a message: its id within its conversation. Ids are the clients' own, scoped to one conversation, so
/// that an id used elsewhere is neither revealed nor taken from anyone (its `seq` names it across conversations).
public struct MessageKey: Hashable, Sendable {
    /// The conversation.
    public var conversationID: String
    /// The message's id in it.
    public var id: String

    /// Creates a key.
    public init(conversationID: String, id: String) {
        self.conversationID = conversationID
        self.id = id
    }
}

extension MessageDraft {
    /// What names the message it stores.
    public var key: MessageKey { MessageKey(conversationID: conversation.id, id: id) }
}

/// Whom one user may find among the others (`HERALD_USER_DIRECTORY`).
public enum DirectoryScope: String, Hashable, Sendable {
    /// The people they share a conversation with.
    case contacts
    /// Every user who signed in (a company's own chat, say).
    case everyone
}

/// A search of the users, by one of them.
public struct UserSearch: Hashable, Sendable {
    /// Who searches.
    public var userID: String
    /// What the name contains (letters of any case) or the id starts with; empty finds everyone in scope.
    public var query: String
    /// Whom they may find.
    public var scope: DirectoryScope
    /// The last id of the previous page.
    public var after: String?
    /// The most to return.
    public var limit: Int

    /// A search.
    public init(userID: String, query: String, scope: DirectoryScope, after: String? = nil, limit: Int) {
        self.userID = userID
        self.query = query
        self.scope = scope
        self.after = after
        self.limit = limit
    }

    /// `text` with `\`, `%` and `_` escaped for a `LIKE … ESCAPE '\'` pattern.
    package static func escapedForLike(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character == "\\" || character == "%" || character == "_" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }
}

/// What storing a message did.
public enum PostOutcome: Hashable, Sendable {
    /// Stored now, with its sequence number.
    case stored(Message)
    /// The same sender already stored this id in this conversation: the stored message, unchanged.
    case existing(Message)
}

/// A change to a group, made by one of its members (docs/behaviour.md, "Groups whose members change").
public enum ConversationChange: Hashable, Sendable {
    /// Owners add people; `history` says what they see of the past.
    case add([String], history: HistoryAccess)
    /// Owners remove a member; anyone removes themselves (leaves).
    case remove(String)
    /// Owners give the group a title (nil: none).
    case rename(String?)
    /// Owners make a member an owner, or no longer one.
    case owner(String, Bool)
    /// Owners delete the group for everyone.
    case delete
}

/// Who makes a change to a group.
public enum ChangeActor: Hashable, Sendable {
    /// A member, by the user API's rules: owners change the group, anyone leaves.
    case member(String)
    /// The app's backend (a service key): any change a group allows, shown as made by nobody (sender `""`).
    case service
}

/// A new conversation, as the app's backend or a user makes it.
public struct NewConversation: Hashable, Sendable {
    /// Its id: the app's own, or nil for a new UUID.
    public var id: String?
    /// Direct or group.
    public var kind: Conversation.Kind
    /// A group's title.
    public var title: String?
    /// Its members.
    public var memberIDs: [String]
    /// A group's owners, among its members.
    public var ownerIDs: [String]

    /// A conversation to create.
    public init(id: String? = nil, kind: Conversation.Kind, title: String?, memberIDs: [String], ownerIDs: [String]) {
        self.id = id
        self.kind = kind
        self.title = title
        self.memberIDs = memberIDs
        self.ownerIDs = ownerIDs
    }
}

/// What erasing a user did.
public struct ErasedUser: Sendable {
    /// The name an erased user's messages and events show (their own is forgotten).
    public static let displayName = "Deleted user"

    /// The events it appended: the user leaving each conversation they were in.
    public var entries: [IncomingMessage]

    /// One of these, member by member.
    package init(entries: [IncomingMessage]) {
        self.entries = entries
    }
}

/// What a change did.
public struct ChangeOutcome: Sendable {
    /// The entries it committed, in `seq` order: none when it changed nothing (adding people who are members
    /// already, say).
    public var entries: [IncomingMessage]
    /// The conversation after it; nil once deleted.
    public var record: ConversationRecord?
    /// Silent pushes it queued, clearing the conversation on the devices of people no longer in it.
    public var clears = 0

    /// One of these, member by member.
    package init(entries: [IncomingMessage], record: ConversationRecord? = nil, clears: Int = 0) {
        self.entries = entries
        self.record = record
        self.clears = clears
    }
}
