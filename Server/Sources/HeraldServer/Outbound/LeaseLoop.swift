import DequeModule
import Foundation

/// The rules of ``LeasedSender``'s loop: when to start a job, when to lease and how many, how long to wait, and
/// when to stop. No database, no task, no clock: the sender carries out each ``Action`` and says how it went.
///
/// A pure state machine in the style of ``LogOrder``. The loop asks ``next(now:)`` what to do, carries it out, and
/// reports: a lease's jobs (``leased(_:nextDue:)``) or its failure (``leaseFailed()``), the end of a wait
/// (``woke()``). The sends, in tasks of their own, report a service's answer (``answered()``: the slot is free)
/// and an outcome written (``written()``: the job is no longer held). ``stop()`` ends it.
///
/// The rules: up to `concurrency` sends in flight and as many jobs leased ahead; a lease when fewer than half are
/// ahead, of as many as there is room for (what is held, ahead, in flight and writing its outcome, stays within
/// ``maxHeld``); a lease that brings nothing, or no room, means a wait: for a wake, the next job due (when there is
/// room to lease it), or `idle`. A failed lease waits ``retryWait``. A wake that comes while the loop is not waiting
/// is kept by the sender's signal, so the next wait ends at once and the loop looks again.
struct LeaseLoop<Job> {
    /// What the loop does next.
    enum Action {
        /// Send `job` in a task of its own.
        case start(Job)
        /// Lease up to `limit` jobs due now, then say ``leased(_:nextDue:)`` or ``leaseFailed()``.
        case lease(limit: Int)
        /// Wait for a wake, at most this long, then say ``woke()``.
        case wait(Duration)
        /// Start nothing more: wait for the sends in flight, then say ``ended()``.
        case stop
    }

    private enum Phase {
        /// Start what can start, else lease or wait.
        case looking
        /// A lease is out.
        case leasing
        /// The last lease brought nothing: wait.
        case leasedNothing
        /// The last lease failed: wait ``retryWait``.
        case leaseFailed
        /// A wait is out.
        case waiting
        /// Stopped: nothing more.
        case stopped
    }

    /// The most sends in flight.
    let concurrency: Int
    /// The longest wait.
    let idle: Duration
    /// The wait after a failed lease.
    let retryWait: Duration
    private var phase = Phase.looking
    /// Jobs leased and not started, in the order they were leased.
    private var ahead: Deque<Job> = []
    /// Sends whose service has not answered.
    private(set) var inFlight = 0
    /// Jobs held: leased ahead, in flight, or writing their outcome.
    private(set) var held = 0
    /// When the next job not leased falls due, as the last lease said.
    private var nextDue: Date?
    /// Whether ``stop()`` was said.
    private(set) var stopping = false

    /// A loop of `concurrency` sends (at least one) that waits at most `idle`.
    init(concurrency: Int, idle: Duration, retryWait: Duration = .seconds(1)) {
        self.concurrency = max(1, concurrency)
        self.idle = idle
        self.retryWait = retryWait
    }

    /// The most jobs held at once (twice `concurrency`).
    var maxHeld: Int { 2 * concurrency }

    /// The jobs leased and not started.
    var leasedAhead: Int { ahead.count }

    /// What to do next, at `now` (which the next due time is measured from).
    mutating func next(now: Date) -> Action {
        if stopping {
            phase = .stopped
            return .stop
        }
        switch phase {
        case .looking:
            if inFlight < concurrency, let job = ahead.popFirst() {
                inFlight += 1
                return .start(job)
            }
            if ahead.count < max(1, concurrency / 2), room > 0 {
                phase = .leasing
                return .lease(limit: room)
            }
            return wait(now: now)
        case .leasedNothing:
            return wait(now: now)
        case .leaseFailed:
            phase = .waiting
            return .wait(retryWait)
        case .leasing, .waiting:
            // Asked again before the last action was answered (the loop does not): nothing new, so a short wait.
            return .wait(retryWait)
        case .stopped:
            return .stop
        }
    }

    /// The lease brought `jobs`; the next job not leased falls due at `nextDue` (nil: none).
    mutating func leased(_ jobs: [Job], nextDue: Date?) {
        held += jobs.count
        ahead.append(contentsOf: jobs)
        self.nextDue = nextDue
        if phase == .leasing { phase = jobs.isEmpty ? .leasedNothing : .looking }
    }

    /// The lease failed (the outbox could not be read, or the stop cut it).
    mutating func leaseFailed() {
        if phase == .leasing { phase = .leaseFailed }
    }

    /// The wait ended: a wake, or its time.
    mutating func woke() {
        if phase == .waiting { phase = .looking }
    }

    /// A send's service answered: its slot is free (its outcome is being written).
    mutating func answered() {
        inFlight -= 1
    }

    /// A send's outcome was written: its job is no longer held.
    mutating func written() {
        held -= 1
    }

    /// Start nothing more.
    mutating func stop() {
        stopping = true
    }

    /// The sends in flight returned after the stop: the jobs ahead are let go; returns them, to be put back.
    @discardableResult
    mutating func ended() -> [Job] {
        held -= ahead.count
        defer { ahead.removeAll() }
        return Array(ahead)
    }

    /// What may still be leased: room ahead (up to `concurrency`) and room held (up to ``maxHeld``).
    private var room: Int { min(concurrency - ahead.count, maxHeld - held) }

    /// A wait for a wake: until the next due job when nothing is ahead and there is room to lease it, else `idle`.
    private mutating func wait(now: Date) -> Action {
        var wait = idle.seconds
        if ahead.isEmpty, room > 0, let nextDue { wait = min(wait, max(0.001, nextDue.timeIntervalSince(now))) }
        phase = .waiting
        return .wait(.milliseconds(Int64(wait * 1000)))
    }
}

extension LeaseLoop: Sendable where Job: Sendable {}
extension LeaseLoop.Action: Sendable where Job: Sendable {}
