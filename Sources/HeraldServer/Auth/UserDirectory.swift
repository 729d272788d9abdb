import Foundation
import NIOConcurrencyHelpers

/// Keeps users' names and pictures current from their tokens, writing only when the claims change, and refuses
/// erased users.
///
/// What it remembers it trusts for ``recheck``; an erasure (on this node, or told by another) is taken at once
/// (``erased(_:)``): the user is refused from then on without asking the database, and their streams are closed.
final class UserDirectory: Sendable {
    private let store: any Store
    private let known = NIOLockedValueBox<[String: (identity: Identity, since: Date)]>([:])
    private let gone = NIOLockedValueBox<Set<String>>([])
    /// Ends a user's open streams.
    private let closeStreams: @Sendable (String) -> Void

    /// How long a user's claims are taken as written without asking the database again.
    static let recheck: TimeInterval = 60

    init(store: any Store, closeStreams: @escaping @Sendable (String) -> Void = { _ in }) {
        self.store = store
        self.closeStreams = closeStreams
    }

    /// - Throws: ``StoreError/userErased`` for an erased user.
    func remember(_ identity: Identity) async throws {
        if gone.withLockedValue({ $0.contains(identity.userID) }) { throw StoreError.userErased }
        let now = Date()
        let fresh = known.withLockedValue { known in
            guard let entry = known[identity.userID] else { return false }
            return entry.identity == identity && now.timeIntervalSince(entry.since) < Self.recheck
        }
        if fresh { return }
        try await store.upsertUser(identity.person)
        known.withLockedValue { $0[identity.userID] = (identity, now) }
    }

    /// Forgets `userID`'s claims (the backend changed the user): their next request writes its own again.
    func forget(_ userID: String) {
        _ = known.withLockedValue { $0.removeValue(forKey: userID) }
    }

    /// `userID` was erased (here, or on another node that told this one): refused from now on, and their streams
    /// closed.
    func erased(_ userID: String) {
        _ = known.withLockedValue { $0.removeValue(forKey: userID) }
        _ = gone.withLockedValue { $0.insert(userID) }
        closeStreams(userID)
    }
}
