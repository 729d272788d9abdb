import Foundation
import HeraldTestSupport
@testable import HeraldServer
import Logging
import NIOConcurrencyHelpers
import Testing

/// The webhook sender (a ``LeasedSender``) in front of a long outbox while the receiver is down (issue 56): what it
/// holds in memory is bounded by its concurrency, not by how many events wait.
@Suite("The webhook sender with a receiver down and a long outbox", .timeLimit(.minutes(1)))
struct WebhookBacklogTests {
    /// An outbox of `total` events, each leased once, whose deliveries are answered at once (the receiver refuses
    /// them) and whose outcomes wait, unwritten, until ``openDatabase()`` (a slow or busy database).
    final class Outbox: Sendable {
        struct State {
            /// Events leased so far (the next one to lease).
            var leased = 0
            /// Events leased whose send has not returned: what the sender holds.
            var held = 0
            /// The most ever held.
            var peak = 0
            /// Sends waiting for their outcome to be written.
            var writing = 0
            /// Sends returned.
            var done = 0

            var summary: String { "leased \(leased), held \(held) (at most \(peak)), writing \(writing), done \(done)" }
        }

        let total: Int
        let state = NIOLockedValueBox(State())
        /// The outcomes wait until it opens.
        private let database = Gate()

        init(total: Int) {
            self.total = total
        }

        func lease(_ limit: Int) -> (jobs: [Int], nextDue: Date?) {
            state.withLockedValue { state in
                let jobs = Array(state.leased..<min(total, state.leased + limit))
                state.leased += jobs.count
                state.held += jobs.count
                state.peak = max(state.peak, state.held)
                // Every event left is due now: the first of its conversation.
                return (jobs, state.leased < total ? Date() : nil)
            }
        }

        func send(_ job: Int, answered: @Sendable () -> Void) async {
            // The receiver is down: refused at once, and the retry is to be written.
            answered()
            state.withLockedValue { $0.writing += 1 }
            await database.wait()
            state.withLockedValue { state in
                state.writing -= 1
                state.held -= 1
                state.done += 1
            }
        }

        /// Lets every outcome be written, those waiting and those to come.
        func openDatabase() {
            database.open()
        }
    }

    @Test("with 3,000 events due and every outcome waiting on the database, the sender leases and holds at most twice its concurrency, then sends all once the outcomes are written")
    func heldIsBounded() async throws {
        let concurrency = 4
        let outbox = Outbox(total: 3_000)
        // `idle` long: the sender looks again because something happened, never because time passed.
        let sender = LeasedSender<Int>(
            "webhook", concurrency: concurrency, idle: .seconds(3600), logger: Logger(label: "test"),
            lease: { limit in outbox.lease(limit) },
            send: { job, answered in await outbox.send(job, answered: answered) },
            release: { _ in })
        #expect(sender.maxHeld == 2 * concurrency)
        // The sender runs beside the body; stopped at its end, it is awaited before the last check.
        try await withBackground({ await sender.run() }) {
            // Either the sender stopped leasing with its hands full, every outcome waiting, or (unbounded) it leased the
            // whole outbox.
            try await eventually("the sender full, or the whole outbox leased", detail: { outbox.state.withLockedValue(\.summary) }) {
                let state = outbox.state.withLockedValue { $0 }
                return state.leased == outbox.total
                    || (sender.held == sender.maxHeld && state.held == sender.maxHeld && state.writing == sender.maxHeld)
            }
            let stuck = outbox.state.withLockedValue { $0 }
            #expect(stuck.leased <= sender.maxHeld, "leased \(stuck.leased) of \(outbox.total) while no outcome was written")
            #expect(stuck.peak <= sender.maxHeld, "held \(stuck.peak) at once")

            outbox.openDatabase()
            try await eventually("every event sent", detail: { outbox.state.withLockedValue(\.summary) }) {
                outbox.state.withLockedValue { $0.done } == outbox.total
            }
            let end = outbox.state.withLockedValue { $0 }
            #expect(end.peak <= sender.maxHeld, "held \(end.peak) at once")
            #expect(end.leased == outbox.total && end.held == 0)
            sender.stop()
        }
        #expect(sender.held == 0)
    }
}
