import NIOConcurrencyHelpers

/// Keeps users' names and pictures current from their tokens, writing only when the claims change.
final class UserDirectory: Sendable {
    private let store: any Store
    private let known = NIOLockedValueBox<[String: Identity]>([:])

    init(store: any Store) {
        self.store = store
    }

    func remember(_ identity: Identity) async throws {
        if known.withLockedValue({ $0[identity.userID] == identity }) { return }
        try await store.upsertUser(identity.person)
        known.withLockedValue { $0[identity.userID] = identity }
    }
}
