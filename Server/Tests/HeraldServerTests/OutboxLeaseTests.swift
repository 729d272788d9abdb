import Foundation
import HeraldCore
@testable import HeraldPostgres
import HeraldProtocol
@testable import HeraldRecords
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing

/// An outbox's leases when the database is slow, and at the stop.
///
/// On PostgreSQL a use of the database answers its caller at its bound while the use goes on in the pool's task (postgres-nio's
/// statements answer no cancellation). A lease that went on and committed after its caller was told it failed held
/// its jobs for nobody until the lease ran out: on a loaded machine, batches of 32 pushes went two minutes late
/// (a CI run of `PushCrashTests` caught it). And a server that stopped left what it had leased and not started held
/// until the lease ran out.
@Suite("Outbox leases", .timeLimit(.minutes(2)))
struct OutboxLeaseTests {
    @Test("PostgreSQL: a push lease whose caller stopped waiting (its bound passed) rolls back: nothing is left held by nobody",
          .enabled(if: StoreKind.postgresURL != nil))
    func leasePastItsBound() async throws {
        let logger = {
            var logger = Logger(label: "lease-test")
            logger.logLevel = .critical
            return logger
        }()
        try await StoreKind.withDatabase(logger: logger) { url in
            // A lease of 12 s may take 6 s (half of it); other uses 5 s.
            let store = try await PostgresStore.connect(
                url: url, leaseDuration: 12, retryFor: .seconds(30), queryLimit: .seconds(5), logger: logger)
            do {
                _ = try await Self.queueAlert(in: store)
                let job = try #require(try await store.database.query("SELECT id FROM push_jobs", logger: logger).first?.decode(Int64.self))
                try await PostgresServeTests.withClient(url) { client in
                    // Another transaction holds a lock the lease needs after it marked its jobs (recording what the
                    // device shows), until the lease's caller was answered at the bound.
                    let locked = AsyncStream<Void>.makeStream()
                    let release = AsyncStream<Void>.makeStream()
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            try await client.withConnection { connection in try await connection.withTransaction(logger: logger) { connection in
                                try await connection.query("LOCK TABLE push_shown IN SHARE MODE", logger: logger)
                                locked.continuation.yield()
                                for await _ in release.stream { break }
                            } }
                        }
                        for await _ in locked.stream { break }
                        await #expect(throws: StorageTimeout.self) {
                            _ = try await store.leasePushJobs(now: Date(), platform: .apns, limit: 10)
                        }
                        release.continuation.yield()
                        try await group.waitForAll()
                    }
                    // The lease's transaction ends (it held the jobs' table until then)...
                    try await eventually("the late lease's transaction ended", within: .seconds(30)) {
                        let rows = try await client.query(
                            """
                            SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                            WHERE c.relname = 'push_jobs' AND l.mode = 'RowExclusiveLock'
                            """, logger: logger).collect()
                        return try rows.first?.decode(Int.self) == 0
                    }
                    // ...having committed nothing: the job is nobody's, and the next lease takes it at once.
                    let held = try await client.query(
                        "SELECT leased_until FROM push_jobs WHERE id = \(job)", logger: logger).collect()
                    #expect(try held.first?.decode(Double?.self) == .some(nil), "the late lease was rolled back")
                }
                let next = try await store.leasePushJobs(now: Date(), platform: .apns, limit: 10)
                #expect(next.jobs.map(\.id) == [job])
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        }
    }

    @Test("jobs and events leased and never started are put back (the stop's): the next lease takes them at once",
          arguments: StoreKind.available)
    func putBack(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let alert = try await Self.queueAlert(in: store)
            let leased = try await store.leasePushJobs(now: Date(), platform: .apns, limit: 10)
            #expect(leased.jobs.count == 1)
            #expect(try await store.leasePushJobs(now: Date(), platform: .apns, limit: 10).jobs.isEmpty, "held")
            try await store.releasePushJobs(ids: leased.jobs.map(\.id), now: Date())
            #expect(try await store.leasePushJobs(now: Date(), platform: .apns, limit: 10).jobs.map(\.id) == leased.jobs.map(\.id))

            let start = try await store.place(of: .webhook)
            let events = [alert.entry].compactMap(NewWebhookEvent.entry)
            #expect(try await store.advance(.webhook, from: start, to: try await store.latestSeq(), writing: ConsumerOutput(webhookEvents: events)) != nil)
            let hooks = try await store.leaseWebhooks(now: Date(), limit: 10, lease: .seconds(120))
            #expect(hooks.jobs.count == 1)
            #expect(try await store.leaseWebhooks(now: Date(), limit: 10, lease: .seconds(120)).jobs.isEmpty, "held")
            try await store.releaseWebhooks(ids: hooks.jobs.map(\.id), now: Date())
            #expect(try await store.leaseWebhooks(now: Date(), limit: 10, lease: .seconds(120)).jobs.map(\.id) == hooks.jobs.map(\.id))

            // A lease that ran out is not this server's to put back: another node may hold the job since.
            if kind == .postgres {
                let late = Date().addingTimeInterval(300)
                try await store.releasePushJobs(ids: leased.jobs.map(\.id), now: late)
                try await store.releaseWebhooks(ids: hooks.jobs.map(\.id), now: late)
                #expect(try await store.leasePushJobs(now: Date(), platform: .apns, limit: 10).jobs.isEmpty)
                #expect(try await store.leaseWebhooks(now: Date(), limit: 10, lease: .seconds(120)).jobs.isEmpty)
            }
        }
    }

    /// Alice's message in a group with Bob, and an alert of it queued for Bob's phone, due now.
    private static func queueAlert(in store: any Store) async throws -> (entry: IncomingMessage, jobs: [NewPushJob]) {
        for id in ["alice", "bob"] { try await store.upsertUser(Person(id: id, displayName: id.capitalized)) }
        let group = try await store.createConversation(kind: .group, title: "Slow", memberIDs: ["alice", "bob"]).record.conversation
        try await store.registerDevice(DeviceRegistration(id: "bob-phone", userID: "bob", platform: .apns, token: "b1"), limit: 5)
        let alice = Person(id: "alice", displayName: "Alice")
        let draft = MessageDraft(id: "m-1", conversation: group, sender: alice, text: "hi", imageURL: nil)
        guard case .stored(let message) = try await store.post(draft) else { throw TestFailure("the message was not stored") }
        let entry = IncomingMessage(message: message, conversation: group, sender: alice)
        let jobs = [NewPushJob(kind: .alert, userID: "bob", deviceID: "bob-phone", content: PushContent(alert: entry, badge: 1), due: Date())]
        try await store.queuePushJobs(jobs)
        return (entry, jobs)
    }
}
