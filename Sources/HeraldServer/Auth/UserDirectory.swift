import Foundation
import NIOConcurrencyHelpers

/// Keeps users' names and pictures current from their tokens, writing only when the claims change, and refuses
/// erased users.
///
/// What it remembers it trusts for ``recheck``: a user erased on another node (which cannot tell this one) is
/// refused here within that long.
final class UserDirectory: Sendable {
    private let store: any Store
    private let known = NIOLockedValueBox<[String: (identity: Identity, since: Date)]>([:])

    /// How long a user's claims are taken as written without asking the database again.
    static let recheck: TimeInterval = 60

    init(store: any Store) {
        self.store = store
    }

    /// - Throws: ``StoreError/userErased`` for an erased user.
    func remember(_ identity: Identity) async throws {
        let now = Date()
        let fresh = known.withLockedValue { known in
            guard let entry = known[identity.userID] else { return false }
            return entry.identity == identity && now.timeIntervalSince(entry.since) < Self.recheck
        }
        if fresh { return }
        try await store.upsertUser(identity.person)
        known.withLockedValue { $0[identity.userID] = (identity, now) }
    }

    /// Forgets `userID` (erased here): their next request asks the database.
    func forget(_ userID: String) {
        _ = known.withLockedValue { $0.removeValue(forKey: userID) }
    }
}
