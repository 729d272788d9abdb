import Foundation
import HeraldRecords
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// The wait before a failed delivery is tried again: doubling from `base` up to `longest`, each between half and
/// all of that (jitter, so many retries do not come at once), and never sooner than a `Retry-After` the service
/// asked for (itself at most `longest`). One rule for pushes and webhooks.
struct Backoff: Hashable, Sendable {
    /// The first retry's wait.
    var base: Duration
    /// The longest wait.
    var longest: Duration

    /// The wait, in seconds, after `attempts` failed tries (`attempts` 0: the first retry); `random` in 0...1
    /// picks the point in the jitter.
    func wait(attempts: Int, retryAfter: Duration? = nil, random: Double = .random(in: 0...1)) -> TimeInterval {
        let full = min(longest.seconds, base.seconds * pow(2, Double(min(max(attempts, 0), 30))))
        let jittered = full * (0.5 + 0.5 * min(max(random, 0), 1))
        guard let retryAfter else { return jittered }
        return max(jittered, min(retryAfter.seconds, longest.seconds))
    }
}

/// Sends what an outbox leases: the one machine behind each push provider's loop and the webhooks' (lease, send,
/// outcome).
///
/// It keeps up to `concurrency` sends in flight, each in a task of its own, and as many jobs leased ahead, so a
/// freed slot takes the next job at once rather than after a trip to the database; it leases again when fewer than
/// half are left ahead. Otherwise it waits for a slot, new jobs (``wake()``), the next job due, or `idle` (another
/// node may have queued some). A lease in progress is cut by the graceful stop (it rolls back: the stop does not
/// wait on a database that is gone); from ``stop()`` on it starts nothing more and ends once the sends in flight
/// returned. Jobs leased and not started are then put back (else released at the next start, or on PostgreSQL once
/// their lease ran out).
///
/// A send's slot is free once the service answered, while its outcome is written; the job is still held (its task,
/// its error, its log line) until that write returned. So that a service that fails at once (a receiver down)
/// cannot pile up outcomes waiting for a slow database, one per job queued, the jobs held (leased ahead, in flight
/// and writing their outcome) are at most ``maxHeld``, twice `concurrency`, however long the outbox is: past it,
/// nothing more is leased nor started until an outcome is written.
///
/// Those rules are ``LeaseLoop``'s; the sender carries out what it says (the leases, the sends' tasks, the waits).
final class LeasedSender<Job: Sendable>: Sendable {
    /// Leases up to `limit` jobs due now; also says when the next one not leased falls due.
    typealias Lease = @Sendable (_ limit: Int) async throws -> (jobs: [Job], nextDue: Date?)
    /// Sends one job and records its outcome, calling `answered` once the service answered (its slot is then free,
    /// while the outcome is written).
    typealias Send = @Sendable (_ job: Job, _ answered: @escaping @Sendable () -> Void) async -> Void
    /// Puts back jobs leased and never started (at the stop).
    typealias Release = @Sendable (_ jobs: [Job]) async throws -> Void

    private let name: String
    private let now: @Sendable () -> Date
    private let lease: Lease
    private let send: Send
    private let release: Release
    private let logger: Logger
    private let signal = WakeSignal()
    /// What the loop does next (``LeaseLoop``); the sender carries it out.
    private let machine: NIOLockedValueBox<LeaseLoop<Job>>

    /// The most jobs held at once: leased ahead, in flight, or writing their outcome (twice `concurrency`).
    var maxHeld: Int { machine.withLockedValue { $0.maxHeld } }

    /// The jobs held now: leased and not started, in flight, or writing their outcome (for tests and metrics).
    var held: Int { machine.withLockedValue { $0.held } }

    /// A sender named `name` in its logs, reading due times on `now`; at the stop it puts back what it leased and
    /// never started with `release`.
    init(
        _ name: String, concurrency: Int, idle: Duration, now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger, lease: @escaping Lease, send: @escaping Send, release: @escaping Release
    ) {
        self.name = name
        machine = NIOLockedValueBox(LeaseLoop(concurrency: concurrency, idle: idle))
        self.now = now
        self.logger = logger
        self.lease = lease
        self.send = send
        self.release = release
    }

    /// Looks at the outbox at once: new jobs were queued, or the clock moved.
    func wake() { signal.notify() }

    /// Starts nothing more: ``run()`` returns once the sends in flight returned.
    func stop() {
        machine.withLockedValue { $0.stop() }
        signal.notify()
    }

    /// Sends until ``stop()`` (or cancellation): carries out what the ``LeaseLoop`` says, and tells it how it went.
    func run() async {
        await withDiscardingTaskGroup { group in
            loop: while true {
                if Task.isCancelled { machine.withLockedValue { $0.stop() } }
                let at = now()
                switch machine.withLockedValue({ $0.next(now: at) }) {
                case .start(let job):
                    group.addTask { [machine, signal, send] in
                        let freed = NIOLockedValueBox(false)
                        let answered: @Sendable () -> Void = {
                            let first = freed.withLockedValue { done in
                                defer { done = true }
                                return !done
                            }
                            guard first else { return }
                            machine.withLockedValue { $0.answered() }
                            signal.notify()
                        }
                        await send(job, answered)
                        answered()
                        machine.withLockedValue { $0.written() }
                        // And once the outcome is written: a retry or a follow-up may be the next job due, and there
                        // may be room for more.
                        signal.notify()
                    }
                case .lease(let limit):
                    do {
                        let leased = try await cancelWhenGracefulShutdown { [lease] in try await lease(limit) }
                        machine.withLockedValue { $0.leased(leased.jobs, nextDue: leased.nextDue) }
                    } catch {
                        if !Task.isCancelled, !Task.isShuttingDownGracefully {
                            logger.warning("\(name): outbox unreadable", metadata: ["error": "\(error)"])
                        }
                        machine.withLockedValue { $0.leaseFailed() }
                    }
                case .wait(let timeout):
                    // A wake that came meanwhile was kept by the signal: the wait then ends at once.
                    await signal.wait(timeout: timeout)
                    machine.withLockedValue { $0.woke() }
                case .stop:
                    break loop
                }
            }
            logger.debug("\(name): starting nothing more")
        }
        logger.debug("\(name): sends in flight ended")
        // Those ahead are put back, so that another node, or the next start, takes them at once rather than once
        // their lease ran out. Bounded: the database may be gone; then they wait for that.
        let ahead = machine.withLockedValue { $0.ended() }
        guard !ahead.isEmpty else { return }
        do {
            try await withinLimit(lastWriteLimit) { [release] in try await release(ahead) }
            logger.debug("\(name): \(ahead.count) leased and not started put back")
        } catch {
            logger.info("\(name): \(ahead.count) leased and not started wait for their lease to run out", metadata: ["error": "\(error)"])
        }
    }
}
