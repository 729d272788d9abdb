import HeraldCore
@testable import HeraldRecords
@testable import HeraldServer
import Testing

/// The conversations' members in memory: each member's span of seqs, changed only by the log's events; read once,
/// then from memory; bounded, keeping the ones in use.
@Suite("Memberships in memory", .timeLimit(.minutes(1)))
struct MembershipsTests {
    private func view(_ id: String, spans: [String: MemberSpan] = ["alice": MemberSpan(added: 0), "bob": MemberSpan(added: 0)]) -> MemberView {
        MemberView(conversation: Conversation(id: id, kind: .group, title: "Team"), spans: spans)
    }

    private func event(_ kind: ConversationEvent.Kind, seq: Int64, by sender: String = "alice", members: [String] = [], title: String? = nil) -> Message {
        Message(
            id: "e\(seq)", conversationID: "c1", senderID: sender, seq: seq,
            event: ConversationEvent(kind: kind, members: members.map { Person(id: $0, displayName: $0.capitalized) }, title: title))
    }

    @Test("events move spans: an added member receives from their arrival, a removed one up to their removal, both included")
    func spans() {
        var team = view("c1")
        team.apply(event(.memberAdded, seq: 5, members: ["carol"]))
        team.apply(event(.memberRemoved, seq: 8, members: ["bob"]))
        #expect(team.recipients(of: 4).sorted() == ["alice", "bob"], "carol does not get what came before she joined")
        #expect(team.recipients(of: 5).sorted() == ["alice", "bob", "carol"], "carol learns she was added")
        #expect(team.recipients(of: 8).sorted() == ["alice", "bob", "carol"], "bob learns he was removed")
        #expect(team.recipients(of: 9).sorted() == ["alice", "carol"], "and gets nothing after")
        #expect(team.isMember("carol") && !team.isMember("bob"))
        #expect(team.memberIDs.sorted() == ["alice", "carol"])

        team.apply(event(.memberLeft, seq: 10, by: "carol"))
        #expect(!team.isMember("carol") && team.recipients(of: 10).contains("carol"))
        team.apply(event(.renamed, seq: 11, title: "Renamed"))
        #expect(team.conversation.title == "Renamed" && team.titleSeq == 11)
        team.apply(event(.renamed, seq: 9, title: "Older"))
        #expect(team.conversation.title == "Renamed", "an older title never replaces a newer one")

        team.apply(event(.deleted, seq: 12))
        #expect(team.memberIDs.isEmpty && !team.isMember("alice"))
        #expect(team.recipients(of: 12) == ["alice"], "everyone still in it learns it was deleted")
        #expect(team.recipients(of: 13).isEmpty)
    }

    @Test("an event applied twice, or to a view read after it, changes nothing; a look-alike id is someone else")
    func idempotent() {
        var team = view("c1")
        let added = event(.memberAdded, seq: 5, members: ["carol"])
        team.apply(added)
        let once = team
        team.apply(added)
        #expect(team == once)
        var later = view("c1", spans: ["alice": MemberSpan(added: 0), "carol": MemberSpan(added: 7)])
        later.apply(added)
        #expect(later.spans["carol"] == MemberSpan(added: 7), "carol's later arrival stays")
        #expect(!team.isMember("Carol") && !team.isMember("carol\u{0}"))
    }

    @Test("a conversation is loaded once and then served from memory; one that does not exist is asked again")
    func loadsOnce() async throws {
        let memberships = Memberships(capacity: 10)
        var loads = 0
        for _ in 0..<3 {
            let found = await memberships.view(of: "c1") {
                loads += 1
                return view("c1")
            }
            #expect(found?.memberIDs.sorted() == ["alice", "bob"])
        }
        #expect(loads == 1)
        var missing = 0
        for _ in 0..<2 {
            let found = await memberships.view(of: "nowhere") { () -> MemberView? in
                missing += 1
                return nil
            }
            #expect(found == nil)
        }
        #expect(missing == 2, "a conversation that does not exist is not remembered")
    }

    @Test("a view read before an event that was applied meanwhile does not undo it")
    func rememberMerges() {
        let memberships = Memberships(capacity: 10)
        memberships.remember(view("c1"))
        memberships.apply(event(.memberRemoved, seq: 8, members: ["bob"]))
        let merged = memberships.remember(view("c1"))
        #expect(merged.spans["bob"] == MemberSpan(added: 0, removed: 8))
        #expect(memberships.cached("c1")?.isMember("bob") == false)
    }

    @Test("past its capacity it keeps the half used most recently")
    func bounded() async throws {
        let memberships = Memberships(capacity: 4)
        for id in ["a", "b", "c", "d"] { memberships.remember(view(id)) }
        // "a" and "b" read again: the most recently used.
        for id in ["a", "b"] { _ = await memberships.view(of: id) { () -> MemberView? in nil } }
        memberships.remember(view("e"))
        #expect(memberships.count == 3, "half of 4 kept, then e")
        var reloaded: [String] = []
        for id in ["a", "b", "e", "c", "d"] {
            _ = await memberships.view(of: id) { () -> MemberView? in
                reloaded.append(id)
                return nil
            }
        }
        #expect(reloaded == ["c", "d"], "the least recently used went")
    }
}
