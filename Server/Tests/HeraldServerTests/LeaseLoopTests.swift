import Foundation
@testable import HeraldServer
import Testing

/// The leased sender's loop, as a pure state machine: what it starts, when it leases and how many, how long it
/// waits, and how it stops. Jobs are numbers and times are plain dates: no outbox, no task, no clock.
@Suite("The leased sender's loop: start, lease ahead, wait until due, stop")
struct LeaseLoopTests {
    typealias Loop = LeaseLoop<Int>
    private let t0 = Date(timeIntervalSince1970: 1_000_000)

    @Test("it leases first, as many as it may hold ahead; then starts each job up to its concurrency")
    func leaseThenStart() {
        var loop = Loop(concurrency: 2, idle: .seconds(60))
        guard case .lease(let limit) = loop.next(now: t0) else {
            Issue.record("a lease first")
            return
        }
        #expect(limit == 2, "up to `concurrency` ahead")
        loop.leased([1, 2], nextDue: nil)
        guard case .start(1) = loop.next(now: t0), case .start(2) = loop.next(now: t0) else {
            Issue.record("both jobs started, in order")
            return
        }
        #expect(loop.inFlight == 2 && loop.held == 2)
        // Both slots busy, nothing ahead: it leases ahead again, with room for two more held.
        guard case .lease(let again) = loop.next(now: t0) else {
            Issue.record("a lease ahead")
            return
        }
        #expect(again == 2)
        loop.leased([3, 4], nextDue: nil)
        // No slot free and half or more ahead: it waits (for a slot), `idle` at most.
        guard case .wait(let wait) = loop.next(now: t0) else {
            Issue.record("a wait for a slot")
            return
        }
        #expect(wait == .seconds(60))
        loop.answered()
        loop.woke()
        guard case .start(3) = loop.next(now: t0) else {
            Issue.record("the freed slot takes the next job at once")
            return
        }
    }

    @Test("a lease that brings nothing means a wait until the next job is due (never less than a millisecond)")
    func waitUntilDue() {
        var loop = Loop(concurrency: 4, idle: .seconds(60))
        _ = loop.next(now: t0)
        loop.leased([], nextDue: t0.addingTimeInterval(2.5))
        guard case .wait(let wait) = loop.next(now: t0) else {
            Issue.record("a wait")
            return
        }
        #expect(wait == .milliseconds(2500))

        var late = Loop(concurrency: 4, idle: .seconds(60))
        _ = late.next(now: t0)
        late.leased([], nextDue: t0.addingTimeInterval(-5))
        guard case .wait(let overdue) = late.next(now: t0) else {
            Issue.record("a wait")
            return
        }
        #expect(overdue == .milliseconds(1), "a job already due: the shortest wait, not a loop with none")

        var idle = Loop(concurrency: 4, idle: .seconds(30))
        _ = idle.next(now: t0)
        idle.leased([], nextDue: t0.addingTimeInterval(3600))
        guard case .wait(let far) = idle.next(now: t0) else {
            Issue.record("a wait")
            return
        }
        #expect(far == .seconds(30), "never longer than `idle`: another node may queue jobs")
    }

    @Test("a wait that ends (a wake, or its time) leases again; a failed lease waits its retry first")
    func wakeLeasesAgain() {
        var loop = Loop(concurrency: 2, idle: .seconds(60), retryWait: .seconds(1))
        _ = loop.next(now: t0)
        loop.leased([], nextDue: nil)
        guard case .wait = loop.next(now: t0) else {
            Issue.record("a wait")
            return
        }
        loop.woke()
        guard case .lease(2) = loop.next(now: t0) else {
            Issue.record("a lease after the wake")
            return
        }
        loop.leaseFailed()
        guard case .wait(let retry) = loop.next(now: t0) else {
            Issue.record("a wait after the failure")
            return
        }
        #expect(retry == .seconds(1))
        loop.woke()
        guard case .lease = loop.next(now: t0) else {
            Issue.record("the lease tried again")
            return
        }
    }

    @Test("what is held stays within twice the concurrency: no lease nor due-time wait until an outcome is written")
    func heldIsBounded() {
        var loop = Loop(concurrency: 2, idle: .seconds(60))
        _ = loop.next(now: t0)
        loop.leased([1, 2], nextDue: nil)
        _ = loop.next(now: t0)
        _ = loop.next(now: t0)
        _ = loop.next(now: t0)
        loop.leased([3, 4], nextDue: t0.addingTimeInterval(1))
        // A service that answers at once: both slots free, both outcomes still being written.
        loop.answered()
        loop.answered()
        loop.woke()
        guard case .start(3) = loop.next(now: t0), case .start(4) = loop.next(now: t0) else {
            Issue.record("the jobs ahead started")
            return
        }
        #expect(loop.held == loop.maxHeld)
        loop.answered()
        loop.answered()
        guard case .wait(let wait) = loop.next(now: t0) else {
            Issue.record("no lease past maxHeld")
            return
        }
        #expect(wait == .seconds(60), "no room to lease the next due job: the wait is for an outcome")
        loop.written()
        loop.woke()
        guard case .lease(1) = loop.next(now: t0) else {
            Issue.record("an outcome written makes room for one")
            return
        }
    }

    @Test("a stop starts nothing more, whatever is ahead or in flight; the jobs ahead are let go at the end, to be put back")
    func stopWhileInFlight() {
        var loop = Loop(concurrency: 1, idle: .seconds(60))
        _ = loop.next(now: t0)
        loop.leased([1, 2], nextDue: nil)
        guard case .start(1) = loop.next(now: t0) else {
            Issue.record("the first job started")
            return
        }
        loop.stop()
        guard case .stop = loop.next(now: t0) else {
            Issue.record("a stop")
            return
        }
        #expect(loop.held == 2 && loop.inFlight == 1, "the send in flight is still held")
        loop.answered()
        loop.written()
        #expect(loop.ended() == [2], "the job ahead, to be put back")
        #expect(loop.held == 0 && loop.leasedAhead == 0)
        guard case .stop = loop.next(now: t0) else {
            Issue.record("stopped for good")
            return
        }
    }
}
