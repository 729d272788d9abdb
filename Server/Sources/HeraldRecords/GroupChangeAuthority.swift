import HeraldCore

/// Who makes a change to a group, and so what they may do: the rules both stores apply, decided here once.
package enum GroupChangeAuthority: Hashable, Sendable {
    /// A member: owners change the group; anyone leaves.
    case member(String)
    /// The app's backend: any change a group allows, with no sender.
    case service
    /// The erasure of this user: they leave, a direct conversation too.
    case erasure(String)

    package init(_ actor: ChangeActor) {
        switch actor {
        case .member(let id): self = .member(id)
        case .service: self = .service
        }
    }

    /// The sender of the change's events: who did it, or `""` for the app's backend.
    package var senderID: String {
        switch self {
        case .member(let id), .erasure(let id): id
        case .service: ""
        }
    }

    /// Whether `change` may be made, given whether the actor is a `member` of the conversation and an `owner`, and
    /// its `kind`: whether it acts as an owner, and whether it is the actor leaving.
    ///
    /// - Throws: ``StoreError`` `notAMember`, `directConversation` or `notAnOwner`.
    package func check(_ change: ConversationChange, member: Bool, owner: Bool, kind: Conversation.Kind) throws -> (owner: Bool, leaving: Bool) {
        switch self {
        case .member(let id):
            guard member else { throw StoreError.notAMember }
            guard kind == .group else { throw StoreError.directConversation }
            let leaving = change == .remove(id)
            guard owner || leaving else { throw StoreError.notAnOwner }
            return (owner, leaving)
        case .service:
            guard kind == .group else { throw StoreError.directConversation }
            return (true, false)
        case .erasure(let id):
            guard member else { throw StoreError.notAMember }
            guard change == .remove(id) else { throw StoreError.notAnOwner }
            return (owner, true)
        }
    }
}
