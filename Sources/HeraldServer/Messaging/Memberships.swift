import HeraldCore
import NIOConcurrencyHelpers

/// A conversation and who is in it: what every post, read marker and history request checks.
struct Membership: Sendable {
    /// Id, kind and title.
    var conversation: Conversation
    /// The user ids of its members.
    var memberIDs: [String]
}

/// The conversations' members, kept in memory so that a post does not ask the database who may post and who is
/// told.
///
/// It is correct because a conversation's members and kind never change once it is created (the API has no way to
/// change them); a change to that rule must remove the conversation here in the same place. Conversations that
/// do not exist are not remembered. It holds at most `capacity` conversations: past that, the ones read least
/// recently go first, half at a time, so the cost of evicting is spread over many inserts.
final class Memberships: Sendable {
    private struct Entry {
        var membership: Membership
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

    /// The membership of `conversationID`, from memory or else from `load` (which is remembered if it finds one).
    func membership(
        of conversationID: String,
        load: () async throws -> Membership?
    ) async rethrows -> Membership? {
        let cached = state.withLockedValue { state -> Membership? in
            state.clock += 1
            guard var entry = state.entries[conversationID] else { return nil }
            entry.lastUsed = state.clock
            state.entries[conversationID] = entry
            return entry.membership
        }
        if let cached { return cached }
        guard let loaded = try await load() else { return nil }
        remember(loaded)
        return loaded
    }

    /// Remembers a conversation just created or read.
    func remember(_ membership: Membership) {
        state.withLockedValue { state in
            state.clock += 1
            if state.entries.count >= capacity, state.entries[membership.conversation.id] == nil {
                let keep = state.entries.sorted { $0.value.lastUsed > $1.value.lastUsed }.prefix(capacity / 2)
                state.entries = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
            }
            state.entries[membership.conversation.id] = Entry(membership: membership, lastUsed: state.clock)
        }
    }

    /// How many conversations are held.
    var count: Int { state.withLockedValue { $0.entries.count } }
}
