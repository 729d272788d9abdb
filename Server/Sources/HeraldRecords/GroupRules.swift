import HeraldCore
import HeraldProtocol

/// A group as a change to it finds it, read in the change's transaction.
package struct GroupSnapshot: Sendable {
    /// One current member.
    package struct Member: Hashable, Sendable {
        package var id: String
        package var owner: Bool

        /// One of these, member by member.
        package init(id: String, owner: Bool) {
            self.id = id
            self.owner = owner
        }
    }

    /// The conversation (its kind and title).
    package var conversation: Conversation
    /// Its current members, longest-standing first (by the seq that added them, then by id).
    package var members: [Member]

    /// One of these, member by member.
    package init(conversation: Conversation, members: [Member]) {
        self.conversation = conversation
        self.members = members
    }
}

/// One event a change to a group appends, and what it does to the group's rows at that event's seq.
package struct GroupStep: Hashable, Sendable {
    /// What an event does to the rows.
    package enum Effect: Hashable, Sendable {
        /// These people are members from the event on; `history` says what they see of the past.
        case add([String], history: HistoryAccess)
        /// This member is one no more from the event on: nothing after it reaches them, their waiting pushes of
        /// the group are dropped, and their devices shown its messages get a silent push clearing them.
        case end(String)
        /// This member owns the group, or no longer does.
        case setOwner(String, Bool)
        /// The group's title.
        case retitle(String?)
        /// The group is deleted for everyone: its messages before the event go (the event stays, so every device
        /// learns of it).
        case delete
    }

    /// The event's kind.
    package var kind: ConversationEvent.Kind
    /// Whom the event names: who was added, removed, made or unmade an owner.
    package var people: [String] = []
    /// A new title's event carries it.
    package var title: String?
    /// What the event does, in order.
    package var effects: [Effect]
}

/// How a change to a group is decided, once for both stores: who may (``GroupChangeAuthority``), the member limit,
/// the last owner, the heir. A store reads the ``GroupSnapshot`` in the change's transaction, asks for the steps, and
/// carries them out.
package enum GroupRules {
    /// The steps of `change` by `authority` to `group`, none when it changes nothing (people already members, the
    /// title it has, an owner made an owner again).
    ///
    /// - Throws: ``StoreError`` `notAMember`, `directConversation`, `notAnOwner` (``GroupChangeAuthority``),
    ///   `memberLimit` (past `memberLimit` members), `memberNotFound`, `lastOwner` (the last owner unmade).
    package static func steps(
        for change: ConversationChange, by authority: GroupChangeAuthority, in group: GroupSnapshot, memberLimit: Int
    ) throws -> [GroupStep] {
        let current = group.members.map(\.id)
        let owners = Set(group.members.filter(\.owner).map(\.id))
        let actor = group.members.first { $0.id == authority.senderID }
        let (owner, leaving) = try authority.check(
            change, member: actor != nil, owner: actor?.owner ?? false, kind: group.conversation.kind)

        switch change {
        case .add(let ids, let history):
            let new = HeraldID.sorted(Set(ids).subtracting(current))
            guard !new.isEmpty else { return [] }
            guard current.count + new.count <= memberLimit else { throw StoreError.memberLimit(memberLimit) }
            return [GroupStep(kind: .memberAdded, people: new, effects: [.add(new, history: history)])]
        case .remove(let target):
            let step: GroupStep
            let ownerLeaves: Bool
            if leaving {
                step = GroupStep(kind: .memberLeft, effects: [.end(target)])
                ownerLeaves = owner
            } else {
                guard current.contains(target) else { throw StoreError.memberNotFound(target) }
                step = GroupStep(kind: .memberRemoved, people: [target], effects: [.end(target)])
                ownerLeaves = owners.contains(target)
            }
            return [step] + (ownerLeaves ? heir(after: target, in: group) : [])
        case .rename(let title):
            guard title != group.conversation.title else { return [] }
            return [GroupStep(kind: .renamed, title: title, effects: [.retitle(title)])]
        case .owner(let target, let make):
            guard current.contains(target) else { throw StoreError.memberNotFound(target) }
            guard owners.contains(target) != make else { return [] }
            if !make, owners == [target] { throw StoreError.lastOwner }
            return [GroupStep(kind: make ? .ownerAdded : .ownerRemoved, people: [target], effects: [.setOwner(target, make)])]
        case .delete:
            return [GroupStep(kind: .deleted, effects: [.delete] + current.map { .end($0) })]
        }
    }

    /// After the last owner went (left, or was removed by the app's backend), the longest-standing member left owns
    /// the group: one more step, or none while an owner remains (or no one does).
    private static func heir(after leaver: String, in group: GroupSnapshot) -> [GroupStep] {
        let staying = group.members.filter { $0.id != leaver }
        guard !staying.contains(where: \.owner), let heir = staying.first else { return [] }
        return [GroupStep(kind: .ownerAdded, people: [heir.id], effects: [.setOwner(heir.id, true)])]
    }
}
