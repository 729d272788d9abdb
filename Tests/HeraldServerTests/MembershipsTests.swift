import HeraldCore
@testable import HeraldServer
import Testing

/// The conversations' members in memory: read once, then from memory; bounded, keeping the ones in use.
@Suite("Memberships in memory", .timeLimit(.minutes(1)))
struct MembershipsTests {
    private func membership(_ id: String) -> Membership {
        Membership(conversation: Conversation(id: id, kind: .group, title: nil), memberIDs: ["alice", "bob"])
    }

    @Test("a conversation is loaded once and then served from memory; one that does not exist is asked again")
    func loadsOnce() async throws {
        let memberships = Memberships(capacity: 10)
        var loads = 0
        for _ in 0..<3 {
            let found = await memberships.membership(of: "c1") {
                loads += 1
                return membership("c1")
            }
            #expect(found?.memberIDs == ["alice", "bob"])
        }
        #expect(loads == 1)
        var missing = 0
        for _ in 0..<2 {
            let found = await memberships.membership(of: "nowhere") {
                missing += 1
                return nil
            }
            #expect(found == nil)
        }
        #expect(missing == 2, "a conversation that does not exist is not remembered")
    }

    @Test("past its capacity it keeps the half used most recently")
    func bounded() async throws {
        let memberships = Memberships(capacity: 4)
        for id in ["a", "b", "c", "d"] { memberships.remember(membership(id)) }
        // "a" and "b" read again: the most recently used.
        for id in ["a", "b"] { _ = await memberships.membership(of: id) { nil } }
        memberships.remember(membership("e"))
        #expect(memberships.count == 3, "half of 4 kept, then e")
        var reloaded: [String] = []
        for id in ["a", "b", "e", "c", "d"] {
            _ = await memberships.membership(of: id) {
                reloaded.append(id)
                return nil
            }
        }
        #expect(reloaded == ["c", "d"], "the least recently used went")
    }
}
