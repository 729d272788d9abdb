import Foundation
import HeraldCore
@testable import HeraldPostgres
@testable import HeraldRecords
@testable import HeraldServer
@testable import HeraldSQLite
import HeraldTestSupport
import Logging
import Testing

/// `HERALD_RETENTION`: old entries leave the database, and a client catching up from before the horizon is told.
@Suite("Retention", .timeLimit(.minutes(3)))
struct RetentionTests {
    @Test("with a short HERALD_RETENTION old messages leave the database; a catch-up from before the horizon gets what is kept and a ready naming the horizon",
          arguments: StoreKind.available)
    func retention(kind: StoreKind) async throws {
        // Kept 30 s (checked every 3 s): the test makes its old messages old by moving their time back a day, so
        // that nothing else it posts can grow old while it runs, however slow the machine.
        try await ServiceTests.withServer(kind, configure: { $0.retention = .seconds(30) }) { server in
            let store = server.environment.store
            let alice = try await server.token("alice")
            let bob = try await server.token("bob")
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let old = try await server.post(alice, to: chat, id: "old-1", text: "Gone soon")
            let older = try await server.post(alice, to: chat, id: "old-2", text: "Gone soon too")
            try await Self.age(store, through: older.seq)
            // Gone from the database, not only from answers.
            try await eventually("the old messages deleted", within: .seconds(30)) {
                try await store.entries(after: 0, through: try await store.latestSeq(), limit: 100).isEmpty
            }
            #expect(try await store.retentionHorizon() >= old.seq + 1)
            let new = try await server.post(alice, to: chat, id: "new", text: "Still here")

            // Bob's device last saw nothing (after=0): it gets what is kept, and `ready` names the horizon.
            let socket = try await server.stream(bob, after: 0)
            var reader = FrameReader(socket)
            let (frames, ready) = try await reader.untilReady()
            #expect(frames.compactMap(\.message?.id) == ["new"])
            let readyText = try #require(try await readyFrame(server: server, token: bob, after: 0))
            #expect(readyText.contains(#""horizon":"#))
            #expect(ready.seq == new.seq)
            // A device that saw everything up to the horizon is told nothing more.
            let upToDate = try #require(try await readyFrame(server: server, token: bob, after: new.seq))
            #expect(!upToDate.contains("horizon"))
            let history = try await server.request("GET", "/v1/conversations/\(chat)/messages", token: bob)
            #expect(try history.decode(MessageListJSON.self).messages.map(\.id) == ["new"])
            socket.close()
        }
    }

    @Test("retention deletes the oldest entries in seq order, a batch at a time, up to the first one still kept",
          arguments: StoreKind.available)
    func batches(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let chat = try await store.createConversation(kind: .group, title: "Team", memberIDs: ["alice", "bob"])
                .record.conversation
            var seqs: [Int64] = []
            for index in 1...5 {
                let draft = MessageDraft(
                    id: "m-\(index)", conversation: chat, sender: Person(id: "alice", displayName: "Alice"),
                    text: "\(index)", imageURL: nil)
                guard case .stored(let message) = try await store.post(draft), let seq = message.seq else {
                    throw TestFailure("m-\(index) not stored")
                }
                seqs.append(seq)
            }
            // The first three messages are a day old; the last two are new.
            try await Self.age(store, through: seqs[2])
            let cutoff = Date().addingTimeInterval(-3600)
            #expect(try await store.expireEntries(before: cutoff, limit: 2, waitingFor: []) == (2, seqs[1]))
            #expect(try await store.expireEntries(before: cutoff, limit: 2, waitingFor: []) == (1, seqs[2]))
            #expect(try await store.expireEntries(before: cutoff, limit: 2, waitingFor: []) == (0, seqs[2]))
            let kept = try await store.entries(after: 0, through: try await store.latestSeq(), limit: 10)
            #expect(kept.compactMap(\.message.seq) == Array(seqs[3...]))
        }
    }

    @Test("HERALD_RETENTION takes seconds or a number with s, m, h or d")
    func setting() throws {
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_RETENTION": "30d"]).retention == .seconds(30 * 86_400))
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_RETENTION": "90"]).retention == .seconds(90))
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_RETENTION": "12h"]).retention == .seconds(12 * 3600))
        #expect(try ServerConfiguration.fromEnvironment([:]).retention == nil)
        for bad in ["0", "-5m", "soon", "5w", "0.5s"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                _ = try ServerConfiguration.fromEnvironment(["HERALD_RETENTION": bad])
            }
        }
    }

    /// Moves the time of the entries up to `seq` a day back.
    static func age(_ store: any Store, through seq: Int64) async throws {
        if let sqlite = store as? SQLiteStore {
            try await sqlite.database.perform { connection in
                _ = try connection.query(
                    "UPDATE messages SET created_at = created_at - 86400 WHERE seq <= ?1", [.integer(Int(seq))])
            }
        } else if let postgres = store as? PostgresStore {
            try await postgres.database.query(
                "UPDATE messages SET created_at = created_at - 86400 WHERE seq <= \(seq)", logger: Logger(label: "test"))
        } else {
            throw TestFailure("a store this test does not know")
        }
    }

    /// The text of the `ready` frame a stream opened `after` gets.
    private func readyFrame(server: TestServer, token: String, after: Int64) async throws -> String? {
        let socket = try await server.stream(token, after: after)
        defer { socket.close() }
        var reader = FrameReader(socket)
        while let text = await reader.nextText() {
            if text.contains(#""type":"ready""#) { return text }
        }
        return nil
    }
}
