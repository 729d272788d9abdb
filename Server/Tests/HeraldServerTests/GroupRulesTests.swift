import HeraldCore
@testable import HeraldRecords
@testable import HeraldServer
import Testing

/// The rules of a change to a group, decided once above storage (both stores carry out these steps; the
/// membership suites run them on both).
@Suite("Group rules")
struct GroupRulesTests {
    /// Ana (owner, first), Ben, Cy, in the order they joined.
    static let team = GroupSnapshot(
        conversation: Conversation(id: "team", kind: .group, title: "Team"),
        members: [.init(id: "ana", owner: true), .init(id: "ben", owner: false), .init(id: "cy", owner: false)])

    func steps(_ change: ConversationChange, by actor: GroupChangeAuthority, in group: GroupSnapshot = team, limit: Int = 10) throws -> [GroupStep] {
        try GroupRules.steps(for: change, by: actor, in: group, memberLimit: limit)
    }

    @Test("adding: only the new people, in id order, within the member limit")
    func adding() throws {
        #expect(try steps(.add(["dee", "ben", "bo"], history: .none), by: .member("ana")) == [
            GroupStep(kind: .memberAdded, people: ["bo", "dee"], effects: [.add(["bo", "dee"], history: .none)]),
        ])
        #expect(try steps(.add(["ben"], history: .full), by: .member("ana")).isEmpty, "already a member: nothing")
        #expect(throws: StoreError.memberLimit(4)) { try steps(.add(["dee", "eve"], history: .none), by: .member("ana"), limit: 4) }
        #expect(try steps(.add(["dee"], history: .none), by: .member("ana"), limit: 4).count == 1, "up to the limit")
    }

    @Test("who may: owners change the group, anyone leaves, the backend does anything, a stranger nothing")
    func authority() throws {
        #expect(throws: StoreError.notAnOwner) { try steps(.rename("Ours"), by: .member("ben")) }
        #expect(throws: StoreError.notAMember) { try steps(.remove("zed"), by: .member("zed")) }
        #expect(try steps(.remove("ben"), by: .member("ben")) == [GroupStep(kind: .memberLeft, effects: [.end("ben")])])
        #expect(try steps(.rename("Ours"), by: .service) == [GroupStep(kind: .renamed, title: "Ours", effects: [.retitle("Ours")])])
        #expect(try steps(.rename("Team"), by: .service).isEmpty, "the title it has: nothing")
        let direct = GroupSnapshot(conversation: Conversation(id: "d", kind: .direct), members: [.init(id: "ana", owner: false)])
        #expect(throws: StoreError.directConversation) { try steps(.add(["ben"], history: .none), by: .service, in: direct) }
    }

    @Test("the last owner: cannot be unmade; when they leave or are removed, the longest-standing member left owns the group")
    func lastOwnerAndHeir() throws {
        #expect(throws: StoreError.lastOwner) { try steps(.owner("ana", false), by: .member("ana")) }
        #expect(try steps(.remove("ana"), by: .member("ana")) == [
            GroupStep(kind: .memberLeft, effects: [.end("ana")]),
            GroupStep(kind: .ownerAdded, people: ["ben"], effects: [.setOwner("ben", true)]),
        ])
        #expect(try steps(.remove("ana"), by: .service) == [
            GroupStep(kind: .memberRemoved, people: ["ana"], effects: [.end("ana")]),
            GroupStep(kind: .ownerAdded, people: ["ben"], effects: [.setOwner("ben", true)]),
        ])
        // With another owner left, no heir.
        var two = Self.team
        two.members[2].owner = true
        #expect(try steps(.remove("ana"), by: .member("ana"), in: two).count == 1)
        #expect(try steps(.owner("ana", false), by: .member("cy"), in: two) == [
            GroupStep(kind: .ownerRemoved, people: ["ana"], effects: [.setOwner("ana", false)]),
        ])
        #expect(try steps(.owner("cy", true), by: .member("ana"), in: two).isEmpty, "an owner made one again: nothing")
        #expect(throws: StoreError.memberNotFound("zed")) { try steps(.owner("zed", true), by: .member("ana")) }
        #expect(throws: StoreError.memberNotFound("zed")) { try steps(.remove("zed"), by: .member("ana")) }
    }

    @Test("deleting ends every member, after the group's messages go")
    func deleting() throws {
        #expect(try steps(.delete, by: .member("ana")) == [
            GroupStep(kind: .deleted, effects: [.delete, .end("ana"), .end("ben"), .end("cy")]),
        ])
        #expect(throws: StoreError.notAnOwner) { try steps(.delete, by: .member("cy")) }
    }
}
