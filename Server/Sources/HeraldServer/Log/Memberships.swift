import HeraldCore
import NIOConcurrencyHelpers

/// When one person was in a conversation: from the entry that added them (or the conversation's start) to the
/// entry that removed them, both included, so that each learns of their own arrival and departure.
public struct MemberSpan: Hashable, Sendable {
    /// The `seq` from which they receive its entries.
    public var added: Int64
    /// The `seq` of the entry that ended it (removed, left, deleted); nil while they are in it.
    public var removed: Int64?

    /// A span.
    public init(added: Int64, removed: Int64? = nil) {
        self.added = added
        self.removed = removed
    }

    /// Whether the entry with `seq` reaches them.
    public func covers(_ seq: Int64) -> Bool {
        added <= seq && removed.map { seq <= $0 } ?? true
    }
}

/// A conversation and who is and was in it, each with their span: what the live fan-out needs to send an entry to
/// the people it reaches, and what a post checks, kept in memory by ``Memberships``.
///
/// Every span carries the `seq`s that bound it, so a view read from the database at any moment gives the right
/// answer for any entry, and applying an event that is already in it changes nothing.
public struct MemberView: Hashable, Sendable {
    /// Id, kind and title.
    public var conversation: Conversation
    /// The `seq` of the event that gave the current title (0: the title it was created with).
    public var titleSeq: Int64
    /// Everyone who is or was a member, by user id.
    public var spans: [String: MemberSpan]
    /// The `seq` of the event that deleted it, if it was.
    public var deleted: Int64?

    /// A view.
    public init(conversation: Conversation, titleSeq: Int64 = 0, spans: [String: MemberSpan], deleted: Int64? = nil) {
        self.conversation = conversation
        self.titleSeq = titleSeq
        self.spans = spans
        self.deleted = deleted
    }

    /// Whether `userID` is a member now.
    public func isMember(_ userID: String) -> Bool {
        deleted == nil && spans[userID].map { $0.removed == nil } ?? false
    }

    /// The current members.
    public var memberIDs: [String] {
        deleted == nil ? spans.filter { $0.value.removed == nil }.map(\.key) : []
    }

    /// Who receives the entry with `seq`.
    public func recipients(of seq: Int64) -> [String] {
        spans.compactMap { $0.value.covers(seq) ? $0.key : nil }
    }

    /// Who receives `entry`: as ``recipients(of:)``, except that an edit (which carries the new text) reaches only
    /// those who were in the conversation when its message was posted; a member who came later reads the message
    /// as it is now, if their history shows it.
    public func recipients(of entry: Message) -> [String] {
        guard let seq = entry.seq else { return [] }
        guard let event = entry.event, event.kind == .messageEdited, let target = event.messageSeq else { return recipients(of: seq) }
        return spans.compactMap { $0.value.covers(seq) && $0.value.added <= target ? $0.key : nil }
    }

    /// The view after `entry` (an event of this conversation; a message changes nothing).
    public mutating func apply(_ entry: Message) {
        guard let event = entry.event, let seq = entry.seq else { return }
        switch event.kind {
        case .memberAdded:
            for member in event.members {
                // A span that is already this one's, or a later one's, stays.
                if let span = spans[member.id], span.added >= seq { continue }
                spans[member.id] = MemberSpan(added: seq)
            }
        case .memberRemoved:
            for member in event.members { end(member.id, at: seq) }
        case .memberLeft:
            end(entry.senderID, at: seq)
        case .renamed:
            if seq > titleSeq {
                conversation.title = event.title
                titleSeq = seq
            }
        case .deleted:
            deleted = deleted.map { min($0, seq) } ?? seq
            for id in Array(spans.keys) { end(id, at: seq) }
        case .ownerAdded, .ownerRemoved, .messageEdited, .messageDeleted:
            break
        }
    }

    private mutating func end(_ userID: String, at seq: Int64) {
        guard var span = spans[userID], span.added <= seq else { return }
        if span.removed == nil || span.removed! > seq { span.removed = seq }
        spans[userID] = span
    }
}

/// The conversations' members, kept in memory so that a post and the live fan-out do not ask the database who is
/// in a conversation.
///
/// It stays right because members change only through the event log: the fan-out applies each event as it hands it
/// on (in `seq` order, on every node), and a node that made a change applies it as soon as it committed; a view read
/// from the database is right whenever it was read (see ``MemberView``). Conversations that do not exist are not
/// remembered. It holds at most `capacity` conversations: past that, the ones used least recently go first, half at
/// a time, so the cost of evicting is spread over many inserts.
final class Memberships: Sendable {
    private struct Entry {
        var view: MemberView
        var lastUsed: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var clock: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())
    private let capacity: Int

    /// A cache of at most `capacity` conversations.
    init(capacity: Int = 100_000) {
        self.capacity = max(1, capacity)
    }

    /// The view of `conversationID`, from memory or else from `load` (which is remembered if it finds one).
    func view(
        of conversationID: String,
        load: () async throws -> MemberView?
    ) async rethrows -> MemberView? {
        if let cached = cached(conversationID) { return cached }
        guard let loaded = try await load() else { return nil }
        return remember(loaded)
    }

    /// The view in memory, if any.
    func cached(_ conversationID: String) -> MemberView? {
        state.withLockedValue { state -> MemberView? in
            state.clock += 1
            guard var entry = state.entries[conversationID] else { return nil }
            entry.lastUsed = state.clock
            state.entries[conversationID] = entry
            return entry.view
        }
    }

    /// Remembers a view just read; one already in memory takes from it only what is newer, so a view read before
    /// an event that was applied meanwhile does not undo it. Returns the view remembered.
    @discardableResult
    func remember(_ view: MemberView) -> MemberView {
        state.withLockedValue { state in
            state.clock += 1
            let id = view.conversation.id
            var merged = view
            if let known = state.entries[id]?.view {
                merged = known
                for (user, span) in view.spans {
                    guard let mine = merged.spans[user] else { merged.spans[user] = span; continue }
                    if span.added > mine.added { merged.spans[user] = span }
                    else if span.added == mine.added, let removed = span.removed, mine.removed.map({ removed < $0 }) ?? true {
                        merged.spans[user] = span
                    }
                }
                if view.titleSeq > merged.titleSeq {
                    merged.conversation.title = view.conversation.title
                    merged.titleSeq = view.titleSeq
                }
                if let deleted = view.deleted { merged.deleted = merged.deleted.map { min($0, deleted) } ?? deleted }
            } else if state.entries.count >= capacity {
                let keep = state.entries.sorted { $0.value.lastUsed > $1.value.lastUsed }.prefix(capacity / 2)
                state.entries = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
            }
            state.entries[id] = Entry(view: merged, lastUsed: state.clock)
            return merged
        }
    }

    /// Applies `entry` (an event) to the view in memory, if there is one; returns the view after it.
    @discardableResult
    func apply(_ entry: Message) -> MemberView? {
        state.withLockedValue { state in
            guard var known = state.entries[entry.conversationID] else { return nil }
            known.view.apply(entry)
            state.entries[entry.conversationID] = known
            return known.view
        }
    }

    /// Forgets a conversation (a test's reset).
    func forget(_ conversationID: String) {
        state.withLockedValue { _ = $0.entries.removeValue(forKey: conversationID) }
    }

    /// How many conversations are held.
    var count: Int { state.withLockedValue { $0.entries.count } }
}
