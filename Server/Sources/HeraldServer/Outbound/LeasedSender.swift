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
/// returned. Jobs leased and not started are released at the next start.
///
/// A send's slot is free once the service answered, while its outcome is written; the job is still held (its task,
/// its error, its log line) until that write returned. So that a service that fails at once (a receiver down)
/// cannot pile up outcomes waiting for a slow database, one per job queued, the jobs held (leased ahead, in flight
/// and writing their outcome) are at most ``maxHeld``, twice `concurrency`, however long the outbox is: past it,
/// nothing more is leased nor started until an outcome is written.
final class LeasedSender<Job: Sendable>: Sendable {
    /// Leases up to `limit` jobs due now; also says when the next one not leased falls due.
    typealias Lease = @Sendable (_ limit: Int) async throws -> (jobs: [Job], nextDue: Date?)
    /// Sends one job and records its outcome, calling `answered` once the service answered (its slot is then free,
    /// while the outcome is written).
    typealias Send = @Sendable (_ job: Job, _ answered: @escaping @Sendable () -> Void) async -> Void

    private let name: String
    private let concurrency: Int
    private let idle: Duration
    private let now: @Sendable () -> Date
    private let lease: Lease
    private let send: Send
    private let logger: Logger
    private let signal = WakeSignal()
    private let stopping = NIOLockedValueBox(false)
    private let heldJobs = NIOLockedValueBox(0)

    /// The most jobs held at once: leased ahead, in flight, or writing their outcome (twice `concurrency`).
    var maxHeld: Int { 2 * concurrency }

    /// The jobs held now: leased and not started, in flight, or writing their outcome (for tests and metrics).
    var held: Int { heldJobs.withLockedValue { $0 } }

    /// A sender named `name` in its logs, reading due times on `now`.
    init(
        _ name: String, concurrency: Int, idle: Duration, now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger, lease: @escaping Lease, send: @escaping Send
    ) {
        self.name = name
        self.concurrency = max(1, concurrency)
        self.idle = idle
        self.now = now
        self.logger = logger
        self.lease = lease
        self.send = send
    }

    /// Looks at the outbox at once: new jobs were queued, or the clock moved.
    func wake() { signal.notify() }

    /// Starts nothing more: ``run()`` returns once the sends in flight returned.
    func stop() {
        stopping.withLockedValue { $0 = true }
        signal.notify()
    }

    /// Sends until ``stop()`` (or cancellation).
    func run() async {
        let inFlight = NIOLockedValueBox(0)
        let heldJobs = heldJobs
        var ahead: [Job] = []
        var nextDue: Date?
        let takeSlot = { [concurrency] in
            inFlight.withLockedValue { busy in
                guard busy < concurrency else { return false }
                busy += 1
                return true
            }
        }
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled, !stopping.withLockedValue({ $0 }) {
                while !ahead.isEmpty, takeSlot() {
                    let job = ahead.removeFirst()
                    group.addTask { [signal, send] in
                        let freed = NIOLockedValueBox(false)
                        let answered: @Sendable () -> Void = {
                            let first = freed.withLockedValue { done in
                                defer { done = true }
                                return !done
                            }
                            guard first else { return }
                            inFlight.withLockedValue { $0 -= 1 }
                            signal.notify()
                        }
                        await send(job, answered)
                        answered()
                        heldJobs.withLockedValue { $0 -= 1 }
                        // And once the outcome is written: a retry or a follow-up may be the next job due, and there
                        // may be room for more.
                        signal.notify()
                    }
                }
                // Room: what is held (ahead, in flight, writing outcomes) stays within `maxHeld`.
                let room = min(concurrency - ahead.count, maxHeld - heldJobs.withLockedValue { $0 })
                if ahead.count < max(1, concurrency / 2), room > 0 {
                    do {
                        let limit = room
                        let leased = try await cancelWhenGracefulShutdown { [lease] in try await lease(limit) }
                        heldJobs.withLockedValue { $0 += leased.jobs.count }
                        ahead += leased.jobs
                        nextDue = leased.nextDue
                        if !leased.jobs.isEmpty { continue }
                    } catch {
                        if !Task.isCancelled, !Task.isShuttingDownGracefully {
                            logger.warning("\(name): outbox unreadable", metadata: ["error": "\(error)"])
                        }
                        await signal.wait(timeout: .seconds(1))
                        continue
                    }
                }
                // Nothing to start: wait for a free slot (a job ahead), an outcome written (room), new jobs, or the
                // next due one (when there is room to lease it).
                var wait = idle.seconds
                if ahead.isEmpty, room > 0, let nextDue { wait = min(wait, max(0.001, nextDue.timeIntervalSince(now()))) }
                await signal.wait(timeout: .milliseconds(Int64(wait * 1000)))
            }
            logger.debug("\(name): starting nothing more")
        }
        // Those ahead are let go (released at the next start).
        heldJobs.withLockedValue { $0 -= ahead.count }
        logger.debug("\(name): sends in flight ended")
    }
}
