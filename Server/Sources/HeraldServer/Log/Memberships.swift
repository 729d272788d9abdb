import HeraldCore
import HeraldRecords
import NIOConcurrencyHelpers

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
