import Foundation
import HeraldCore
@testable import HeraldPostgres
@testable import HeraldRecords
@testable import HeraldSQLite
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing

/// The conversation list's order: a message moves its conversation for every member, joining moves it for the one
/// who joined, other events move it for nobody. The stores keep one `activity` per conversation and one per member
/// (when they joined), and list by the later of the two.
@Suite("The list's order, on every store", .timeLimit(.minutes(2)))
struct ListOrderTests {
    static let kinds = StoreKind.available

    private func person(_ id: String) -> Person { Person(id: id, displayName: id.capitalized) }

    private func post(_ store: any Store, _ id: String, by sender: String, in conversation: Conversation) async throws {
        _ = try await store.post(MessageDraft(id: id, conversation: conversation, sender: person(sender), text: id, imageURL: nil))
    }

    /// `userID`'s whole list, a page of `limit` at a time.
    private func order(_ store: any Store, of userID: String, limit: Int = 10) async throws -> [String] {
        var ids: [String] = []
        var cursor: ConversationCursor?
        repeat {
            let page = try await store.conversations(of: userID, after: cursor, limit: limit, filter: .all)
            ids += page.summaries.map(\.record.conversation.id)
            cursor = page.next
        } while cursor != nil
        return ids
    }

    @Test("a message moves its conversation up for every member, joining for the one who joined, other events for nobody; pages agree", arguments: kinds)
    func order(kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["alice", "bob", "carol"] { try await store.upsertUser(person(id)) }
            func group(_ title: String, _ members: [String]) async throws -> Conversation {
                try await store.createConversation(kind: .group, title: title, memberIDs: members).record.conversation
            }
            let old = try await group("Old", ["bob", "carol"])
            try await post(store, "o1", by: "bob", in: old)
            let first = try await group("First", ["alice", "bob"])
            let second = try await group("Second", ["alice", "bob"])
            let quiet = try await group("Quiet", ["alice"])
            try await post(store, "f1", by: "bob", in: first)
            try await post(store, "s1", by: "bob", in: second)
            // A new chat starts at the top; then messages move theirs above it.
            #expect(try await order(store, of: "alice") == [second.id, first.id, quiet.id])
            #expect(try await order(store, of: "bob") == [second.id, first.id, old.id])

            // Joining a group whose last message is older puts it at the top of the joiner's list only.
            _ = try await store.change(.add(["alice"], history: .full), in: old.id, by: .member("bob"), memberLimit: 100)
            #expect(try await order(store, of: "alice") == [old.id, second.id, first.id, quiet.id])
            #expect(try await order(store, of: "bob") == [second.id, first.id, old.id], "an event moves nobody else")
            let joined = try #require(try await store.summary(of: old.id, for: "alice"))
            #expect(joined.lastMessage?.event?.kind == .memberAdded, "the last entry of a group just joined is the joining")
            // Renaming moves nobody.
            _ = try await store.change(.rename("First, renamed"), in: first.id, by: .member("alice"), memberLimit: 100)
            #expect(try await order(store, of: "alice") == [old.id, second.id, first.id, quiet.id])

            // A message after the joining moves the group for everyone in it, by its own seq.
            try await post(store, "f2", by: "bob", in: first)
            #expect(try await order(store, of: "alice") == [first.id, old.id, second.id, quiet.id])
            try await post(store, "o2", by: "carol", in: old)
            #expect(try await order(store, of: "alice") == [old.id, first.id, second.id, quiet.id])
            #expect(try await order(store, of: "bob") == [old.id, first.id, second.id])
            let moved = try #require(try await store.summary(of: old.id, for: "alice"))
            #expect(moved.lastMessage?.id == "o2" && moved.unreadCount == 1)
            // Pages of one give the same order as one page, each conversation once.
            #expect(try await order(store, of: "alice", limit: 1) == [old.id, first.id, second.id, quiet.id])
            #expect(try await order(store, of: "alice", limit: 3) == [old.id, first.id, second.id, quiet.id])

            // A member who left no longer lists the group; messages after it do not bring it back.
            _ = try await store.change(.remove("alice"), in: second.id, by: .member("alice"), memberLimit: 100)
            try await post(store, "s2", by: "bob", in: second)
            #expect(try await order(store, of: "alice") == [old.id, first.id, quiet.id])
            #expect(try await order(store, of: "bob") == [second.id, old.id, first.id])
        }
    }

    @Test("the plan: the walks only for the whole list of a member of at least half of all conversations and of four pages")
    func plan() {
        #expect(ListPlan(memberships: 10, conversations: 100_000, limit: 100, filtered: false) == .scan)
        #expect(ListPlan(memberships: 30_000, conversations: 100_000, limit: 100, filtered: false) == .scan)
        #expect(ListPlan(memberships: 60_000, conversations: 100_000, limit: 100, filtered: false) == .walk)
        #expect(ListPlan(memberships: 20_000, conversations: 20_000, limit: 100, filtered: false) == .walk)
        #expect(ListPlan(memberships: 20_000, conversations: 20_000, limit: 100, filtered: true) == .scan)
        #expect(ListPlan(memberships: 16, conversations: 16, limit: 4, filtered: false) == .walk)
        #expect(ListPlan(memberships: 16, conversations: 16, limit: 5, filtered: false) == .scan)
        #expect(ListPlan(memberships: 0, conversations: 0, limit: 0, filtered: false) == .scan)
        // Counting a member's rows up to the limit is enough to choose.
        let cap = ListPlan.countLimit(conversations: 20_000, limit: 100)
        #expect(cap == 10_000 && ListPlan(memberships: cap, conversations: 20_000, limit: 100, filtered: false) == .walk)
        #expect(ListPlan.countLimit(conversations: 10, limit: 100) == 400)
    }

    @Test("both plans give one order: a member of every group, some joined late, ties, a group left and one deleted; pages of up to four (the walks) agree with one page (the scan) and with the rule", arguments: kinds)
    func plansAgree(kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["alice", "bob"] { try await store.upsertUser(person(id)) }
            var place: [String: Int64] = [:]
            var latest: Int64 = 0
            func group(_ title: String, _ members: [String]) async throws -> Conversation {
                let made = try await store.createConversation(kind: .group, title: title, memberIDs: members)
                if members.contains("alice") { place[made.record.conversation.id] = latest }
                return made.record.conversation
            }
            func changed(_ change: ConversationChange, in group: Conversation, by actor: String) async throws -> Int64 {
                let outcome = try await store.change(change, in: group.id, by: .member(actor), memberLimit: 100)
                latest = max(latest, outcome.entries.last?.message.seq ?? 0)
                return latest
            }
            func posted(_ id: String, in group: Conversation) async throws {
                guard case .stored(let message) = try await store.post(
                    MessageDraft(id: id, conversation: group, sender: person("bob"), text: id, imageURL: nil)) else {
                    Issue.record("\(id) not stored"); return
                }
                latest = max(latest, message.seq ?? 0)
                place[group.id] = max(place[group.id] ?? 0, latest)
            }
            // A group alice leaves and one she deletes: still her rows, never listed.
            let left = try await group("Left", ["bob", "alice"])
            let deleted = try await group("Deleted", ["alice", "bob"])
            try await posted("l1", in: left)
            try await posted("d1", in: deleted)
            _ = try await changed(.remove("alice"), in: left, by: "alice")
            _ = try await changed(.delete, in: deleted, by: "alice")
            place[left.id] = nil
            place[deleted.id] = nil
            var groups: [Conversation] = []
            for index in 0..<12 {
                groups.append(try await group("G\(index)", index % 3 == 0 ? ["bob"] : ["bob", "alice"]))
            }
            // Messages in a scrambled order, then alice joins the groups she was not in, some before more messages.
            for (step, index) in [5, 1, 9, 3, 11, 0, 7, 2, 10, 4, 8, 6].enumerated() {
                try await posted("m\(step)", in: groups[index])
                if step % 4 == 3 {
                    let late = groups[(step / 4) * 3]
                    place[late.id] = try await changed(.add(["alice"], history: .full), in: late, by: "bob")
                }
            }
            place[groups[9].id] = try await changed(.add(["alice"], history: .none), in: groups[9], by: "bob")
            try await posted("last", in: groups[4])
            // Two chats made together with no message: the same place as each other and as the last message's group.
            _ = try await group("Quiet one", ["alice", "bob"])
            _ = try await group("Quiet two", ["alice", "bob"])
            let rule = place.keys.sorted { (place[$0]!, $0) > (place[$1]!, $1) }
            #expect(rule.count == 14)
            #expect(try await order(store, of: "alice", limit: 100) == rule, "one page: the scan")
            for limit in [1, 2, 4] {
                #expect(try await order(store, of: "alice", limit: limit) == rule, "pages of \(limit): the walks")
            }
            #expect(try await order(store, of: "alice", limit: 5) == rule, "pages of five: the scan")
        }
    }

    /// A database one step before the list moved by conversation: three groups, messages that moved each member's
    /// row (the old trigger), and carol, who joined the second after its last message.
    static let oldRows = [
        "INSERT INTO users (id, name) VALUES ('alice', 'Alice'), ('bob', 'Bob'), ('carol', 'Carol')",
        "INSERT INTO conversations (id, kind, title, created_at) VALUES ('c1', 'group', 'One', 0), ('c2', 'group', 'Two', 0), ('c3', 'group', 'Three', 0)",
        "INSERT INTO members (conversation_id, user_id) VALUES ('c1', 'alice'), ('c1', 'bob'), ('c2', 'alice'), ('c2', 'bob'), ('c3', 'alice')",
        "INSERT INTO messages (seq, id, conversation_id, sender_id, text, created_at) VALUES (1, 'm-1', 'c1', 'bob', 'one', 0)",
        "INSERT INTO messages (seq, id, conversation_id, sender_id, text, created_at) VALUES (2, 'm-2', 'c2', 'bob', 'two', 0)",
        "INSERT INTO messages (seq, id, conversation_id, sender_id, text, created_at) VALUES (3, 'm-3', 'c1', 'alice', 'three', 0)",
        "INSERT INTO members (conversation_id, user_id, activity, added_seq) VALUES ('c2', 'carol', 4, 4)",
    ]

    @Test("a database from before the list moved by conversation migrates: the same order for everyone, which new messages move on", arguments: kinds)
    func migration(kind: StoreKind) async throws {
        let check = { (store: any Store) in
            #expect(try await self.order(store, of: "alice") == ["c1", "c2", "c3"])
            #expect(try await self.order(store, of: "carol") == ["c2"])
            let read = try #require(try await store.summary(of: "c1", for: "alice"))
            #expect(read.lastMessage?.id == "m-3" && read.unreadCount == 0, "the sender's marker moved with the old trigger")
            try await self.post(store, "m-5", by: "bob", in: Conversation(id: "c2", kind: .group, title: "Two"))
            #expect(try await self.order(store, of: "alice") == ["c2", "c1", "c3"])
            #expect(try await self.order(store, of: "bob") == ["c2", "c1"])
            try await self.post(store, "m-6", by: "alice", in: Conversation(id: "c3", kind: .group, title: "Three"))
            #expect(try await self.order(store, of: "alice") == ["c3", "c2", "c1"])
            let own = try #require(try await store.summary(of: "c3", for: "alice"))
            #expect(own.readUpTo == own.lastMessage?.seq, "a post moves its sender's read marker")
        }
        let trigger = { (store: any Store) in
            guard let sqlite = store as? SQLiteStore else { return }
            let triggers = try await sqlite.database.perform { connection in
                try connection.query("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'", [])
                    .map { $0.column("name")?.string ?? "" }
            }
            #expect(triggers == ["messages_move_conversation"], "no trigger moves every member's row any more")
        }
        let checkAll = { (store: any Store) in
            try await trigger(store)
            try await check(store)
        }
        // PostgreSQL numbers messages from its counter row.
        try await kind.withOldDatabase(
            sqliteStep: SQLiteMigrations.steps.count - 1, postgresStep: PostgresMigrations.steps.count - 1,
            rows: Self.oldRows, postgresRows: ["UPDATE message_seq SET seq = 4"], checkAll)
    }
}
