import Foundation
import HeraldTestSupport
@testable import HeraldServer
import Logging
import NIOConcurrencyHelpers
import Testing

/// What a ``LeasedSender`` leaves behind at the stop. On PostgreSQL a job leased and never started used to wait out its
/// lease (two minutes) before another node, or the next start, sent it.
@Suite("The leased sender at the stop", .timeLimit(.minutes(1)))
struct LeasedSenderStopTests {
    @Test("at the stop, what was leased and never started is put back, once, after the sends in flight returned")
    func aheadPutBack() async throws {
        let leased = NIOLockedValueBox<[Int]>([])
        let started = NIOLockedValueBox<[Int]>([])
        let released = NIOLockedValueBox<[[Int]]>([])
        let gate = Gate()
        let sender = LeasedSender<Int>(
            "push", concurrency: 2, idle: .seconds(3600), logger: Logger(label: "test"),
            lease: { limit in
                leased.withLockedValue { leased in
                    let jobs = Array(leased.count..<leased.count + limit)
                    leased += jobs
                    return (jobs, nil)
                }
            },
            send: { job, answered in
                started.withLockedValue { $0.append(job) }
                await gate.wait()
                // The put-back comes only once the sends in flight returned.
                #expect(released.withLockedValue { $0 }.isEmpty)
                answered()
            },
            release: { jobs in released.withLockedValue { $0.append(jobs) } })
        // The sender's own end is awaited (not cancelled: a stop puts back what is ahead, cancellation need not).
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await sender.run() }
            defer {
                sender.stop()
                gate.open()
            }
            // Two in flight (its concurrency), two leased ahead: its hands are full.
            try await eventually("two sends in flight and two jobs ahead", detail: { "\(leased.withLockedValue { $0 })" }) {
                started.withLockedValue { $0 } == [0, 1] && leased.withLockedValue { $0 } == [0, 1, 2, 3]
            }
        }
        #expect(released.withLockedValue { $0 } == [[2, 3]])
        #expect(started.withLockedValue { $0 } == [0, 1])
        #expect(sender.held == 0)
    }
}
