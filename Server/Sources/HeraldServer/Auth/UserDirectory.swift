import Foundation
import HeraldRecords
import NIOConcurrencyHelpers

/// Keeps users' names and pictures current from their tokens, writing only when the claims change, and refuses
/// erased users.
///
/// What it remembers it trusts for ``recheck``; an erasure (on this node, or told by another) is taken at once
/// (``erased(_:)``): the user is refused from then on without asking the database, and their streams are closed.
final class UserDirectory: Sendable {
    private let store: any UserStore
    /// Each user's last claims, and the identity as stored from them (the name others see), since when.
    private let known = NIOLockedValueBox<[String: (claims: Identity, stored: Identity, since: Date)]>([:])
    private let gone = NIOLockedValueBox<Set<String>>([])
    /// Ends a user's open streams.
    private let closeStreams: @Sendable (String) -> Void

    /// How long a user's claims are taken as written without asking the database again.
    static let recheck: TimeInterval = 60

    init(store: any UserStore, closeStreams: @escaping @Sendable (String) -> Void = { _ in }) {
        self.store = store
        self.closeStreams = closeStreams
    }

    /// Writes `identity`'s claims (when they changed, or were last written ``recheck`` ago) and returns the user as
    /// stored: the name others see, which may not be the token's (a token with no name keeps the name the user has).
    ///
    /// - Throws: ``StoreError/userErased`` for an erased user.
    func remember(_ identity: Identity) async throws -> Identity {
        if gone.withLockedValue({ $0.contains(identity.userID) }) { throw StoreError.userErased }
        let now = Date()
        let fresh = known.withLockedValue { known -> Identity? in
            guard let entry = known[identity.userID], entry.claims == identity,
                  now.timeIntervalSince(entry.since) < Self.recheck else { return nil }
            return entry.stored
        }
        if let fresh { return fresh }
        let person = try await store.upsertUser(identity.person, nameIsStandIn: identity.nameIsStandIn)
        let stored = Identity(userID: identity.userID, name: person.displayName, picture: person.avatarURL)
        known.withLockedValue { $0[identity.userID] = (identity, stored, now) }
        return stored
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
