import Foundation
import HeraldCore
import Logging
import NIOConcurrencyHelpers
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// Posts that arrive together are stored in one transaction, answered after it, and published in `seq` order.
@Suite("Group commit", .timeLimit(.minutes(1)))
struct GroupCommitTests {
    /// An in-memory store with its database running, for the length of `body`.
    private func withStore(_ body: (SQLiteStore) async throws -> Void) async throws {
        var logger = Logger(label: "group-commit-test")
        logger.logLevel = .critical
        let store = try await SQLiteStore.open(path: ":memory:", logger: logger)
        try await withBackground({ try await store.database.run() }) { try await body(store) }
    }

    private func draft(_ id: String, by sender: String, in conversation: Conversation, text: String = "hello") -> MessageDraft {
        MessageDraft(id: id, conversation: conversation, sender: Person(id: sender, displayName: sender.capitalized),
                     text: text, imageURL: nil)
    }

    /// Runs `body` with the database held busy until `body` calls the release it is given, so posts pile up behind
    /// it; released when `body` ends, whatever happened.
    private func withDatabaseHeld<T: Sendable>(
        _ store: SQLiteStore, _ body: (@escaping @Sendable () -> Void) async throws -> T
    ) async throws -> T {
        let (held, heldSink) = AsyncStream<Void>.makeStream()
        // The database's thread blocks on this until it holds 1.
        let gate = ConditionLock(value: 0)
        let release: @Sendable () -> Void = {
            gate.lock()
            gate.unlock(withValue: 1)
        }
        return try await withBackground({
            try await store.database.perform { _ in
                heldSink.yield()
                gate.lock(whenValue: 1)
                gate.unlock()
            }
        }) {
            defer { release() }
            for await _ in held { break }
            return try await body(release)
        }
    }

    /// Waits (checking every 5 ms, up to 60 s) until `condition` holds.
    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(condition())
    }

    @Test("200 posts that arrive while the database is busy are one transaction; each is answered with its seq, published in seq order")
    func postsThatArriveTogetherCommitTogether() async throws {
        try await withStore { store in
            let record = try await store.createConversation(kind: .group, title: "Busy", memberIDs: ["alice", "bob"]).record
            let published = NIOLockedValueBox<[Int64]>([])
            try await EventLog.attached(to: store, logger: Logger(label: "test")).add(Recorder { entries in
                published.withLockedValue { $0 += entries.compactMap(\.message.seq) }
            })
            let outcomes = try await withDatabaseHeld(store) { release in
                try await withThrowingTaskGroup(of: (String, PostOutcome).self) { group in
                    for index in 0..<200 {
                        group.addTask {
                            let id = "m\(index)"
                            let outcome = try await store.post(draft(id, by: index % 2 == 0 ? "alice" : "bob", in: record.conversation))
                            return (id, outcome)
                        }
                    }
                    try await waitUntil { store.posts.waiting == 200 }
                    #expect(published.withLockedValue { $0 }.isEmpty, "nothing is published before it is committed")
                    release()
                    var outcomes: [String: PostOutcome] = [:]
                    for try await (id, outcome) in group { outcomes[id] = outcome }
                    return outcomes
                }
            }
            let seqs = outcomes.values.compactMap { outcome -> Int64? in
                if case .stored(let message) = outcome { return message.seq }
                return nil
            }
            #expect(seqs.count == 200, "every post is stored")
            #expect(Set(seqs) == Set(1...200), "with seqs 1 to 200, each once")
            #expect(published.withLockedValue { $0 } == Array(1...200), "handed on by the log in seq order, once each")
            #expect(store.posts.statistics == GroupCommitStatistics(transactions: 1, posts: 200))

            // What the group wrote reads back as if each post had been stored alone.
            let stored = try await store.entries(in: record.conversation.id, for: "alice", after: 0, before: nil, limit: 500)
            #expect(stored.map(\.seq) == Array(1...200).map { Optional($0) })
            // The posts joined the queue in whatever order their tasks ran: each sender's newest is read from the store.
            let sender = Dictionary(uniqueKeysWithValues: stored.map { ($0.seq ?? 0, $0.senderID) })
            let newest = { (user: String) in sender.filter { $0.value == user }.keys.max() ?? 0 }
            for (user, other) in [("alice", "bob"), ("bob", "alice")] {
                let summary = try await store.conversations(of: user, after: nil, limit: 10, filter: .all).summaries[0]
                #expect(summary.activity == 200, "the conversation moved to the top, at its newest message")
                #expect(summary.readUpTo == newest(user), "\(user)'s own newest message marks what they have read")
                let unread = sender.filter { $0.value == other && $0.key > newest(user) }.count
                #expect(summary.unreadCount == unread, "\(other)'s messages after that are unread")
            }
        }
    }

    @Test("in one group, a repeated id is the first post's message, an id taken by another sender is refused alone")
    func repeatsAndConflictsInOneGroup() async throws {
        try await withStore { store in
            let record = try await store.createConversation(kind: .group, title: "Ids", memberIDs: ["alice", "bob"]).record
            let earlier = try await store.post(draft("before", by: "alice", in: record.conversation))
            let posts = [
                ("first", draft("same", by: "alice", in: record.conversation, text: "one")),
                ("repeat", draft("same", by: "alice", in: record.conversation, text: "one")),
                ("thief", draft("same", by: "bob", in: record.conversation)),
                ("old", draft("before", by: "alice", in: record.conversation)),
                ("stolen", draft("before", by: "bob", in: record.conversation)),
                ("other", draft("other", by: "bob", in: record.conversation)),
            ]
            let results = try await withDatabaseHeld(store) { release in
                try await withThrowingTaskGroup(of: (String, Result<PostOutcome, any Error>).self) { group in
                    for (index, (name, draft)) in posts.enumerated() {
                        group.addTask {
                            // In this order into the queue.
                            try await waitUntil { store.posts.waiting == index }
                            do {
                                return (name, .success(try await store.post(draft)))
                            } catch {
                                return (name, .failure(error))
                            }
                        }
                        try await waitUntil { store.posts.waiting == index + 1 }
                    }
                    release()
                    var results: [String: Result<PostOutcome, any Error>] = [:]
                    for try await (name, result) in group { results[name] = result }
                    return results
                }
            }
            guard case .success(.stored(let first)) = results["first"],
                  case .success(.existing(let repeated)) = results["repeat"],
                  case .success(.existing(let old)) = results["old"],
                  case .success(.stored(let other)) = results["other"],
                  case .stored(let before) = earlier
            else {
                Issue.record("unexpected outcomes: \(results)")
                return
            }
            #expect(repeated == first, "the repeat is answered with the first post's message")
            #expect(old == before)
            #expect(other.seq == (first.seq ?? 0) + 1, "a refused post takes no seq")
            for (name, id) in [("thief", "same"), ("stolen", "before")] {
                guard case .failure(let error as StoreError) = results[name] else {
                    Issue.record("\(name) should be refused: \(String(describing: results[name]))")
                    continue
                }
                #expect(error == .idTaken(id))
            }
            let stored = try await store.entries(in: record.conversation.id, for: "alice", after: 0, before: nil, limit: 10)
            #expect(stored.map(\.id) == ["before", "same", "other"])
        }
    }
}

/// A log consumer that hands what it takes to a closure.
struct Recorder: LogConsumer {
    let body: @Sendable ([IncomingMessage]) -> Void
    init(_ body: @escaping @Sendable ([IncomingMessage]) -> Void) { self.body = body }
    func take(_ entries: [IncomingMessage]) async { body(entries) }
}
