import Foundation
import HeraldCore
@testable import HeraldPostgres
@testable import HeraldRecords
@testable import HeraldSQLite
import Logging
import NIOConcurrencyHelpers
import NIOPosix
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

    @Test("a post from an event loop is committed and answered on that loop while the database is idle; on the database's thread when it is busy, or when every commit syncs")
    func postsFromALoopCommitThere() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        /// Posts `id` from `loop`, and says whether its answer (given on the thread that committed it) came there.
        func answeredOnLoop(_ store: SQLiteStore, _ id: String, in conversation: Conversation) async throws -> Bool {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                loop.execute {
                    store.post(draft(id, by: "alice", in: conversation)) { outcome in
                        continuation.resume(with: outcome.map { _ in loop.inEventLoop })
                    }
                }
            }
        }
        try await withStore { store in
            let record = try await store.createConversation(kind: .group, title: "Loop", memberIDs: ["alice", "bob"]).record
            try await store.database.settled()
            #expect(try await answeredOnLoop(store, "m1", in: record.conversation))
            let onLoop = try await withDatabaseHeld(store) { release in
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    group.addTask { try await answeredOnLoop(store, "m2", in: record.conversation) }
                    try await waitUntil { store.posts.waiting == 1 }
                    release()
                    return try await group.next() ?? true
                }
            }
            #expect(!onLoop, "queued behind a job, the post is committed on the database's thread")
            #expect(try await store.entries(in: record.conversation.id, for: "alice", after: 0, before: nil, limit: 10).count == 2)
        }
        var logger = Logger(label: "group-commit-test")
        logger.logLevel = .critical
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let synced = try await SQLiteStore.open(path: folder.appendingPathComponent("herald.sqlite").path, fullSync: true, logger: logger)
        try await withBackground({ try await synced.database.run() }) {
            let record = try await synced.createConversation(kind: .group, title: "Sync", memberIDs: ["alice"]).record
            #expect(try await !answeredOnLoop(synced, "m1", in: record.conversation), "a commit that waits for the disk never runs on a loop")
        }
    }

    @Test("under load, a stream's posts within the commit window wait for its end and commit together; none waits after a quiet spell, after its own sender's last commit, or over the HTTP API; one waiting when the database closes is refused")
    func commitWindow() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        var logger = Logger(label: "group-commit-test")
        logger.logLevel = .critical
        /// Posts `ids` as a stream does (alice's unless the id starts with "b"), all in one turn of `loop`: their
        /// outcomes in the order they were answered.
        func post(_ ids: [String], to store: SQLiteStore, in conversation: Conversation) async -> [(String, Result<PostOutcome, any Error>)] {
            let (answers, sink) = AsyncStream<(String, Result<PostOutcome, any Error>)>.makeStream()
            loop.execute {
                for id in ids {
                    store.post(draft(id, by: id.hasPrefix("b") ? "bob" : "alice", in: conversation)) { sink.yield((id, $0)) }
                }
            }
            var outcomes: [(String, Result<PostOutcome, any Error>)] = []
            for await answer in answers {
                outcomes.append(answer)
                if outcomes.count == ids.count { break }
            }
            return outcomes
        }
        func stored(_ outcomes: [(String, Result<PostOutcome, any Error>)]) -> [String] {
            outcomes.filter { if case .success(.stored) = $0.1 { true } else { false } }.map(\.0)
        }
        /// Runs `body` with a store whose commit window is `window`, and a conversation of alice and bob in it.
        func withWindow(_ window: Duration, _ body: (SQLiteStore, Conversation) async throws -> Void) async throws {
            let store = try await SQLiteStore.open(path: ":memory:", commitWindow: window, logger: logger)
            try await withBackground({ try await store.database.run() }) {
                let record = try await store.createConversation(kind: .group, title: "Window", memberIDs: ["alice", "bob"]).record
                try await store.database.settled()
                try await body(store, record.conversation)
            }
        }

        // Others' posts within the window wait for its end, and are one commit.
        let window = Duration.milliseconds(300)
        try await withWindow(window) { store, conversation in
            let start = ContinuousClock.now
            // "a1" finds no commit in the last window; bob's "b1" comes within the window a1's commit opened.
            let answered = await post(["a1", "b1", "a2", "b2"], to: store, in: conversation)
            let waited = ContinuousClock.now - start
            #expect(answered.map(\.0) == ["a1", "b1", "a2", "b2"] && stored(answered).count == 4, "\(answered)")
            #expect(store.posts.statistics == GroupCommitStatistics(transactions: 2, posts: 4), "a1 alone, then the three that waited")
            #expect(waited >= window - .milliseconds(1), "they waited for the window to end: \(waited)")
        }

        // A window far longer than the test: whatever waited for it would end the test at its time limit.
        try await withWindow(.seconds(300)) { store, conversation in
            for id in ["a1", "a2", "a3"] {
                #expect(stored(await post([id], to: store, in: conversation)) == [id], "alice's posts one after another")
            }
            // The HTTP API's way in (here from a task, off the loops) starts no wait either.
            let overHTTP = try await store.post(draft("h1", by: "bob", in: conversation))
            if case .stored = overHTTP {} else { Issue.record("the HTTP API's post: \(overHTTP)") }
            #expect(store.posts.statistics == GroupCommitStatistics(transactions: 4, posts: 4), "none waited")
        }

        // A post waiting for its window when the database closes is refused, not lost silently nor waited on.
        try await withWindow(.seconds(3)) { store, conversation in
            async let closing = post(["a1", "b1"], to: store, in: conversation)
            // a1 was committed (in the loop's turn, before b1 came), and b1 waits.
            try await waitUntil { store.posts.statistics.posts == 1 && store.posts.waiting == 1 }
            try await store.database.close(markingClean: false)
            let answered = await closing
            let refused = answered.filter { if case .failure(StoreError.closing) = $0.1 { true } else { false } }.map(\.0)
            #expect(stored(answered) == ["a1"] && refused == ["b1"], "\(answered)")
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

    // Issue 56, "No post waits for ever": a group's transaction that went on past its bound (the caller answered
    // 503 at the limit, the use still running) used to reserve its seqs in the log afterwards, where nobody would
    // end the reservation: the log then handed on nothing past them, and every later post waited for ever.
    @Test("PostgreSQL: a group whose transaction outlives its bound reserves nothing in the log once its posts were answered; the next post is answered",
          .enabled(if: StoreKind.postgresURL != nil))
    func transactionPastItsBound() async throws {
        var logger = Logger(label: "group-commit-test")
        logger.logLevel = .critical
        try await StoreKind.withDatabase(logger: logger) { url in
            let store = try await PostgresStore.connect(url: url, retryFor: .seconds(30), queryLimit: .seconds(5), logger: logger)
            do {
                let record = try await store.createConversation(kind: .group, title: "Late", memberIDs: ["alice", "bob"]).record
                let gate = HeldReservations(log: EventLog(after: try await store.latestSeq(), logger: logger) { after, through in
                    try await store.entries(after: after, through: through, limit: .max)
                })
                defer { gate.open() }
                store.attach(gate)

                // The first post's transaction stops as it reserves its seq, until its post was answered at the
                // bound (the use is cancelled then, but the reservation answers no cancellation; nor do
                // postgres-nio's statements after it).
                await #expect(throws: StorageTimeout.self) {
                    _ = try await store.post(draft("late", by: "alice", in: record.conversation))
                }
                gate.open()

                // The next post's transaction waits for the late one's end (the counter's lock): when it commits,
                // nothing else may still be reserved.
                try await withThrowingTaskGroup(of: PostOutcome.self) { group in
                    group.addTask { try await store.post(draft("next", by: "bob", in: record.conversation)) }
                    try await eventually("the next post is committed") { gate.commits > 0 }
                    let leftOpen = gate.leftOpenAtCommit
                    #expect(leftOpen.isEmpty, "a reservation outlived its transaction's caller: \(leftOpen)")
                    // Without that, the next post would wait for ever: end the reservation here so that it does not.
                    gate.releaseOpen()
                    guard case .stored(let next) = try await group.next() else {
                        Issue.record("the next post is not stored")
                        return
                    }
                    #expect(gate.log.delivered >= next.seq ?? 0, "answered once the log handed it on")
                }
                let stored = try await store.entries(in: record.conversation.id, for: "alice", after: 0, before: nil, limit: 10)
                #expect(stored.map(\.id) == ["next"], "the late transaction rolled back: its post was answered with an error")
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        }
    }
}

/// The log's sink, with every reservation held up (the thread telling it blocked) until the test opens it: a
/// transaction stopped at that point for as long as the test needs, as a busy machine can stop one. It keeps the
/// reservations the log was told of and not ended, and those still open when another transaction committed.
private final class HeldReservations: CommitSink {
    private struct State {
        var open: [ClosedRange<Int64>] = []
        var leftOpenAtCommit: [ClosedRange<Int64>] = []
        var commits = 0
    }

    let log: EventLog
    /// 1 once open.
    private let gate = ConditionLock(value: 0)
    private let state = NIOLockedValueBox(State())

    init(log: EventLog) {
        self.log = log
    }

    /// Lets every reservation through, from now on.
    func open() {
        gate.lock()
        gate.unlock(withValue: 1)
    }

    /// How many transactions committed.
    var commits: Int { state.withLockedValue { $0.commits } }

    /// The reservations still open when a transaction committed, but its own.
    var leftOpenAtCommit: [ClosedRange<Int64>] { state.withLockedValue { $0.leftOpenAtCommit } }

    /// Ends the reservations still open in the log.
    func releaseOpen() {
        let open = state.withLockedValue { state in
            defer { state.open = [] }
            return state.open
        }
        for seqs in open { log.failed(seqs) }
    }

    func reserve(_ seqs: ClosedRange<Int64>) {
        // At most a minute, should the test end without opening it.
        if gate.lock(whenValue: 1, timeoutSeconds: 60) { gate.unlock() }
        state.withLockedValue { $0.open.append(seqs) }
        log.reserve(seqs)
    }

    func committed(_ seqs: ClosedRange<Int64>, entries: [IncomingMessage], waiters: [LogWaiter]) {
        state.withLockedValue { state in
            state.open.removeAll { $0 == seqs }
            state.leftOpenAtCommit += state.open
            state.commits += 1
        }
        log.committed(seqs, entries: entries, waiters: waiters)
    }

    func failed(_ seqs: ClosedRange<Int64>) {
        state.withLockedValue { $0.open.removeAll { $0 == seqs } }
        log.failed(seqs)
    }

    func notified(through seq: Int64) {
        log.notified(through: seq)
    }

    func whenDelivered(_ seq: Int64, _ resume: @escaping @Sendable () -> Void) {
        log.whenDelivered(seq, resume)
    }
}

/// A log consumer that hands what it takes to a closure.
struct Recorder: LogConsumer {
    let body: @Sendable ([IncomingMessage]) -> Void
    init(_ body: @escaping @Sendable ([IncomingMessage]) -> Void) { self.body = body }
    func take(_ entries: [IncomingMessage]) async { body(entries) }
}
