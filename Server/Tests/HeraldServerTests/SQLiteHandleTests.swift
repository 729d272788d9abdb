import Foundation
import HeraldCore
@testable import HeraldRecords
@testable import HeraldSQLite
import Logging
import Testing
@testable import HeraldServer
import HeraldTestSupport

/// The store's own SQLite layer: statements prepared once and reused, values read back exactly as written.
@Suite("SQLite statements are prepared once and reused; values read back exactly")
struct SQLiteHandleTests {
    @Test("the same SQL reuses its statement with new values; lists of any length share a few statements")
    func statementsReused() throws {
        let database = try SQLiteHandle(path: ":memory:")
        defer { database.close() }
        try database.query("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        for index in 1...100 {
            try database.query("INSERT INTO t (id, name) VALUES (?1, ?2)", [.integer(index), .text("n\(index)")])
        }
        #expect(database.preparedCount == 2)
        let row = try database.query("SELECT name FROM t WHERE id = ?1", [.integer(42)]).first
        #expect(row?.column("name")?.string == "n42")
        #expect(row?.column("missing") == nil)

        for count in 1...300 {
            let list = SQLiteHandle.padded((1...count).map { [.integer($0)] })
            #expect(list.binds.count >= count && list.binds.count < 2 * max(count, 1))
            let rows = try database.query("SELECT count(*) AS n FROM t WHERE id IN (\(list.placeholders))", list.binds)
            #expect(rows.first?.column("n")?.integer == min(count, 100))
        }
        #expect(database.preparedCount == 3 + 10, "one statement per power of two up to 512")
        try database.query("SELECT 1 AS once", keep: false)
        #expect(database.preparedCount == 13, "a statement that runs once is not kept")

        // Kept statements are told apart by all of their SQL: these two have the same length and the same first
        // and last 32 bytes.
        let start = "SELECT 'the same start of the SQL' AS v, ", end = " AS w FROM t WHERE id = ?1 -- and the same end of it"
        let names = try database.query(start + "name" + end, [.integer(42)]).first?.column("w")?.string
        let fixed = try database.query(start + "'xx'" + end, [.integer(42)]).first?.column("w")?.string
        #expect((names, fixed) == ("n42", "xx"))
        #expect(database.preparedCount == 15)

        let rows = SQLiteHandle.padded([[.integer(1), .text("a")], [.integer(2), .text("b")], [.integer(3), .null]], width: 2)
        #expect(rows.placeholders == "(?1, ?2), (?3, ?4), (?5, ?6), (?7, ?8)")
        #expect(rows.binds == [.integer(1), .text("a"), .integer(2), .text("b"), .integer(3), .null, .null, .null])
    }

    @Test("a kept statement is not compiled again when new values are bound to it")
    func keptStatementsStayCompiled() throws {
        let database = try SQLiteHandle(path: ":memory:")
        defer { database.close() }
        try database.query("CREATE TABLE m (c TEXT, u TEXT, removed INTEGER, PRIMARY KEY (c, u))")
        try database.query("CREATE TABLE d (u TEXT, id TEXT)")
        try database.query("CREATE INDEX d_u ON d(u)")
        try database.query("INSERT INTO m VALUES ('a', 'ann', NULL), ('b', 'bob', NULL)")
        try database.query("INSERT INTO d VALUES ('ann', 'phone')")
        // The shape of the push decider's device check. SQLite 3.54 plans it by the value bound to ?1 unless the
        // query planner's stability guarantee is on, and then compiles it again at every use (3.40 does not).
        for conversation in ["a", "b", "a", "b", "c"] {
            let rows = try database.query(
                "SELECT m.u FROM m WHERE m.c = ?1 AND m.removed IS NULL AND EXISTS (SELECT 1 FROM d WHERE d.u = m.u)",
                [.text(conversation)])
            #expect(rows.map { $0.column("u")?.string } == (conversation == "a" ? ["ann"] : []))
        }
        #expect(database.recompilations == 0)
        // What the count counts: a change of schema makes SQLite compile a kept statement again.
        try database.query("CREATE TABLE other (x)")
        _ = try database.query(
            "SELECT m.u FROM m WHERE m.c = ?1 AND m.removed IS NULL AND EXISTS (SELECT 1 FROM d WHERE d.u = m.u)",
            [.text("a")])
        #expect(database.recompilations == 1)
    }

    @Test("text with any characters, empty text, NULL, numbers and blobs read back as written; errors carry SQLite's message")
    func valuesRoundTrip() throws {
        let database = try SQLiteHandle(path: ":memory:")
        defer { database.close() }
        try database.query("CREATE TABLE v (a, b, c, d, e)")
        let text = "héllo \u{0}wörld 👋🏽 \u{202E}"
        try database.query(
            "INSERT INTO v VALUES (?1, ?2, ?3, ?4, ?5)",
            [.text(text), .text(""), .null, .float(1.5), .blob([0, 1, 2, 255])])
        let row = try #require(try database.query("SELECT * FROM v").first)
        #expect(row.column("a")?.string == text, "a NUL inside text is kept")
        #expect(row.column("b")?.string == "")
        #expect(row.column("c") == .null)
        #expect(row.column("d")?.double == 1.5)
        #expect(row.column("e")?.blob == [0, 1, 2, 255])

        #expect(throws: SQLiteFailure.self) { try database.query("SELECT * FROM nowhere") }
        do {
            try database.query("SELECT * FROM nowhere")
        } catch let failure as SQLiteFailure {
            #expect(failure.message.contains("no such table"))
        }
        database.close()
        #expect(throws: SQLiteFailure.self) { try database.query("SELECT 1") }
    }

    @Test("a busy store keeps a small, fixed set of statements whatever the sizes of its groups and lists")
    func storeKeepsFewStatements() async throws {
        var logger = Logger(label: "statements-test")
        logger.logLevel = .critical
        let store = try await SQLiteStore.open(path: ":memory:", logger: logger)
        try await withBackground({ try await store.database.run() }) {
            let alice = Person(id: "alice", displayName: "Alice")
            try await store.upsertUser(alice)
            var conversations: [Conversation] = []
            for index in 0..<40 {
                let record = try await store.createConversation(kind: .group, title: "c\(index)", memberIDs: ["alice", "b\(index)"])
                conversations.append(record.record.conversation)
            }
            // Posts in flight together, in many group sizes, and lists of many lengths.
            for round in 1...20 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<(round * 7) {
                        let draft = MessageDraft(
                            id: "m\(round)-\(index)", conversation: conversations[index % conversations.count], sender: alice,
                            text: "hello", imageURL: nil)
                        group.addTask { _ = try await store.post(draft) }
                    }
                    try await group.waitForAll()
                }
                _ = try await store.conversations(of: "alice", after: nil, limit: round * 2, filter: .all)
            }
            let prepared = try await store.database.perform { $0.preparedCount }
            #expect(prepared <= 40, "kept statements: \(prepared)")
            #expect(store.groupCommitStatistics.posts == (1...20).reduce(0) { $0 + $1 * 7 })
        }
    }
}
