import Foundation
import HeraldCore
@testable import HeraldRecords
@testable import HeraldSQLite
import HeraldTestSupport
import Logging
import NIOConcurrencyHelpers
@testable import HeraldServer
import Testing

/// The writer of push outcomes (``OutcomeWriter``): a write that fails in passing is written again, not left leased.
@Suite("Push outcomes", .timeLimit(.minutes(1)))
struct OutcomeWriterTests {
    @Test("an outcome whose write fails in passing (the database's bound, under load) is written again, and its sender told it was")
    func writtenAgain() async throws {
        var logger = Logger(label: "outcome-test")
        logger.logLevel = .critical
        let store = try await SQLiteStore.open(path: ":memory:", logger: logger)
        try await withBackground({ try await store.database.run() }) {
            try await store.upsertUser(Person(id: "bob", displayName: "Bob"))
            try await store.registerDevice(DeviceRegistration(id: "phone", userID: "bob", platform: .fcm, token: "f-1"), limit: 5)
            let now = Date()
            let clear = PushContent(clear: "c1", readUpTo: 1, badge: 0)
            try await store.queuePushJobs([NewPushJob(kind: .clear, userID: "bob", deviceID: "phone", content: clear, due: now)])
            let job = try #require(try await store.leasePushJobs(now: now, platform: .fcm, limit: 10).jobs.first)

            let flaky = FlakyOutcomes(store, failing: 2)
            let writer = OutcomeWriter(store: flaky)
            try await withBackground({ await writer.run() }) {
                try await writer.finish(FinishedPush(job: job, sent: true))
            }
            #expect(flaky.failed == 2)
            #expect(try await store.pushJobCount() == 0, "written on the third try")
        }
    }
}

/// A push outbox whose first `failing` writes of outcomes fail; everything else goes to `store`.
final class FlakyOutcomes: PushOutbox {
    private let store: any PushOutbox
    private let left: NIOLockedValueBox<Int>
    private let count = NIOLockedValueBox(0)

    init(_ store: any PushOutbox, failing: Int) {
        self.store = store
        left = NIOLockedValueBox(failing)
    }

    /// How many writes failed.
    var failed: Int { count.withLockedValue { $0 } }

    struct Passing: Error {}

    func finishPushJobs(_ finished: [FinishedPush]) async throws {
        let fail = left.withLockedValue { left in
            defer { left = max(0, left - 1) }
            return left > 0
        }
        if fail {
            count.withLockedValue { $0 += 1 }
            throw Passing()
        }
        try await store.finishPushJobs(finished)
    }

    func pushTargets(_ queries: [PushTargetQuery]) async throws -> [[PushTarget]] { try await store.pushTargets(queries) }
    func queuePushJobs(_ jobs: [NewPushJob]) async throws -> Int { try await store.queuePushJobs(jobs) }
    func leasePushJobs(now: Date, platform: DeviceRegistration.Platform, limit: Int) async throws -> (jobs: [PushJob], nextDue: Date?) {
        try await store.leasePushJobs(now: now, platform: platform, limit: limit)
    }
    func recordConfirmations(_ confirmations: [PushConfirmation]) async throws -> Int {
        try await store.recordConfirmations(confirmations)
    }
    func pushedSeqs(userID: String, device: String, after: Int64, through: Int64) async throws -> Set<Int64> {
        try await store.pushedSeqs(userID: userID, device: device, after: after, through: through)
    }
    func retryPushJob(id: Int64, at due: Date) async throws { try await store.retryPushJob(id: id, at: due) }
    func badge(of userID: String) async throws -> Int { try await store.badge(of: userID) }
    func pushedDevices(of conversationID: String, messageID: String) async throws -> [PushedDevice] {
        try await store.pushedDevices(of: conversationID, messageID: messageID)
    }
    func forgetPushGrants(before date: Date) async throws -> Int { try await store.forgetPushGrants(before: date) }
    func releasePushLeases() async throws -> Int { try await store.releasePushLeases() }
    func releasePushJobs(ids: [Int64], now: Date) async throws { try await store.releasePushJobs(ids: ids, now: now) }
    func pushJobCount() async throws -> Int { try await store.pushJobCount() }
}
