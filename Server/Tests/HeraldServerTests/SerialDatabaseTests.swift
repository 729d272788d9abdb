import Foundation
import HeraldCore
@testable import HeraldSQLite
import HeraldTestSupport
import Logging
import NIOConcurrencyHelpers
import Testing

/// The embedded database's one connection: a caller runs a job itself when the connection is free, jobs keep their
/// order, and the write-ahead log is folded into the file on the database's thread, never by a caller's commit.
@Suite("The database's connection, shared by its thread and its callers", .timeLimit(.minutes(1)))
struct SerialDatabaseTests {
    private static let logger: Logger = {
        var logger = Logger(label: "serial-database-test")
        logger.logLevel = .critical
        return logger
    }()

    /// A database at `path` with its service running, for the length of `body`.
    private func withDatabase(path: String = ":memory:", _ body: (SerialDatabase) async throws -> Void) async throws {
        let database = try await SerialDatabase.open(path: path, lock: nil, logger: Self.logger)
        try await withBackground({ try await database.run() }) { try await body(database) }
    }

    @Test("an idle connection runs the caller's job at once on the caller's thread; a busy one refuses it, and jobs queued meanwhile keep their order")
    func callerRunsWhenIdle() async throws {
        try await withDatabase { database in
            let order = NIOLockedValueBox<[String]>([])
            let caller = pthread_self()
            let here = NIOLockedValueBox<Bool?>(nil)
            let ran = database.runHereIfIdle { _ in
                here.withLockedValue { $0 = pthread_equal(pthread_self(), caller) != 0 }
            }
            #expect(ran)
            #expect(here.withLockedValue { $0 } == true, "run before runHereIfIdle returned, on the calling thread")

            // Jobs queued while the caller holds the connection run after its job, on the database's thread, in order.
            let threads = NIOLockedValueBox<[Bool]>([])
            var queued: [Bool] = []
            let ranWithQueue = database.runHereIfIdle { _ in
                for name in ["a", "b"] {
                    queued.append(database.enqueue { _ in
                        order.withLockedValue { $0.append(name) }
                        threads.withLockedValue { $0.append(pthread_equal(pthread_self(), caller) != 0) }
                    })
                }
                order.withLockedValue { $0.append("caller") }
            }
            #expect(ranWithQueue)
            #expect(queued == [true, true])
            try await database.perform { _ in }
            #expect(order.withLockedValue { $0 } == ["caller", "a", "b"])
            #expect(threads.withLockedValue { $0 } == [false, false])

            // While a job holds the connection on the database's thread, a caller's job is refused and not run.
            let gate = ConditionLock(value: 0)
            let (held, heldSink) = AsyncStream<Void>.makeStream()
            try await withBackground({
                try await database.perform { _ in
                    heldSink.yield()
                    gate.lock(whenValue: 1)
                    gate.unlock()
                }
            }) {
                defer {
                    gate.lock()
                    gate.unlock(withValue: 1)
                }
                for await _ in held { break }
                let refused = NIOLockedValueBox(true)
                #expect(!database.runHereIfIdle { _ in refused.withLockedValue { $0 = false } })
                #expect(refused.withLockedValue { $0 })
                #expect(database.enqueue { _ in order.withLockedValue { $0.append("queued") } })
                // Queued behind the held job: the connection is not free until the queue is empty.
                gate.lock()
                gate.unlock(withValue: 1)
                try await database.perform { _ in }
            }
            #expect(order.withLockedValue { $0 }.last == "queued")
            try await database.settled()

            // A task's short job, when the connection is free: on the task's thread, not the database's.
            let databaseThread = try await database.perform { _ in pthread_self() }
            try await database.settled()
            let taskThread = try await database.perform(onCallerIfIdle: true) { _ in pthread_self() }
            #expect(pthread_equal(databaseThread, taskThread) == 0)
            #expect(pthread_equal(databaseThread, try await database.perform { _ in pthread_self() }) != 0)
        }
    }

    @Test("once stopped, it refuses callers' jobs as it refuses queued ones")
    func refusesOnceClosed() async throws {
        let database = try await SerialDatabase.open(path: ":memory:", lock: nil, logger: Self.logger)
        try await database.close(markingClean: false)
        #expect(!database.runHereIfIdle { _ in Issue.record("ran after the close") })
        #expect(!database.enqueue { _ in Issue.record("ran after the close") })
    }

    @Test("SQLite no longer folds the log into the file at a commit; a second connection does, once past 1,000 pages, so the log stays bounded")
    func checkpointsOnItsThread() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let blob = SQLiteValue.blob(Array(repeating: 7, count: 3_000))
        let setUp = Self.setUp, frames = Self.frames

        // A connection alone: SQLite's own checkpoint is off, so 800 commits leave well over 1,000 pages in the log.
        let alone = try SQLiteHandle(path: folder.appendingPathComponent("alone.sqlite").path)
        try setUp(alone)
        for _ in 0..<800 { try alone.query("INSERT INTO t (data) VALUES (?1)", [blob]) }
        #expect(try frames(alone) > 1_500)
        alone.close()

        // The same commits made by callers: each that leaves the log past 1,000 pages (set so here; the default is
        // longer) asks the checkpointer to fold it, on its own connection and thread, while commits go on.
        try await withDatabase(path: folder.appendingPathComponent("served.sqlite").path) { database in
            try await database.perform { handle in
                try setUp(handle)
                handle.checkpointPages = 1_000
            }
            var onCaller = 0
            for _ in 0..<800 {
                if database.runHereIfIdle({ _ = try? $0.query("INSERT INTO t (data) VALUES (?1)", [blob]) }) {
                    onCaller += 1
                } else {
                    try await database.perform { _ = try $0.query("INSERT INTO t (data) VALUES (?1)", [blob]) }
                }
            }
            #expect(onCaller > 0)
            // The log starts over at the first commit after a checkpoint that folded all of it: commits that came
            // during a checkpoint are folded by the next one, which the next commit asks for.
            var log = Int.max, more = 0
            for _ in 0..<4 where log >= 1_000 {
                await database.checkpointsSettled()
                more += 1
                log = try await database.perform { handle in
                    try handle.query("INSERT INTO t (data) VALUES (?1)", [blob])
                    return handle.logPages
                }
            }
            #expect(log < 1_000, "log frames: \(log)")
            #expect(database.checkpoints > 0)
            let count = try await database.perform { try $0.query("SELECT count(*) AS n FROM t").first?.column("n")?.integer }
            #expect(count == 800 + more)
        }
    }

    @Test("a log that did not start over after a checkpoint beside the commits is folded on the connection itself at twice the length")
    func checkpointHereWhenTheLogKeepsGrowing() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let handle = try SQLiteHandle(path: folder.appendingPathComponent("grown.sqlite").path)
        defer { handle.close() }
        try Self.setUp(handle)
        handle.checkpointPages = 40
        let blob = SQLiteValue.blob(Array(repeating: 7, count: 3_000))
        var asked: [SQLiteHandle.CheckpointDue] = []
        // Nobody folds what is asked beside: the log grows past 40, then past 80 pages.
        while asked.last != .here {
            try handle.query("INSERT INTO t (data) VALUES (?1)", [blob])
            if let due = handle.takeCheckpointDue() { asked.append(due) }
            #expect(asked.count < 100)
        }
        #expect(asked.first == .beside)
        #expect(handle.logPages == 0, "asked once, until the next commit")
        handle.checkpointHere()
        try handle.query("INSERT INTO t (data) VALUES (?1)", [blob])
        #expect(handle.logPages > 0 && handle.logPages < 40, "the log started over: \(handle.logPages)")
        #expect(handle.takeCheckpointDue() == nil)
    }

    @Sendable private static func setUp(_ handle: SQLiteHandle) throws {
        try handle.query("PRAGMA journal_mode = WAL", keep: false)
        try handle.query("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, data BLOB)")
    }

    /// Frames in the log now (a passive checkpoint reports them before folding what it can).
    @Sendable private static func frames(_ handle: SQLiteHandle) throws -> Int {
        try handle.query("PRAGMA wal_checkpoint(PASSIVE)", keep: false).first?.column("log")?.integer ?? -1
    }
}

extension SerialDatabase {
    /// Returns once the connection is free and nothing is queued (checked every millisecond, for up to 10 s): a
    /// queued job's caller may resume before the database's thread has let the connection go.
    func settled(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !runHereIfIdle({ _ in }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("the database stayed busy", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
