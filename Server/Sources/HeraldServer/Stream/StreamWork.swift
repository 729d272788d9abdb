import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Where the streams' asynchronous work runs: opening a stream (its token, its registration, its catch-up) and storing
/// a `send` whose conversation must be read first (one in memory goes straight to the group commit, with no task). A
/// stream has no task of its own; each piece of work is a child task of this service's, for as long as it takes.
///
/// At a graceful stop the streams are told to close (``Hub/closeAll()``, by ``HeraldApplication``); this service then
/// waits, a bounded while, until they have, and for the work in flight.
final class StreamWork: Service, Sendable {
    typealias Job = @Sendable () async -> Void

    private let jobs: AsyncStream<Job>
    private let submissions: AsyncStream<Job>.Continuation
    private let hub: Hub
    private let closeLimit: Duration
    private let submitted = NIOLockedValueBox(0)

    /// Work for the streams of `hub`, which are given `closeLimit` to close at a stop.
    init(hub: Hub, closeLimit: Duration) {
        (jobs, submissions) = AsyncStream.makeStream()
        self.hub = hub
        self.closeLimit = closeLimit
    }

    /// Runs `job` as a child task of the service; false once the service has stopped.
    func submit(_ job: @escaping Job) -> Bool {
        if case .terminated = submissions.yield(job) { return false }
        submitted.withLockedValue { $0 += 1 }
        return true
    }

    /// How many jobs were submitted so far.
    var submissionCount: Int { submitted.withLockedValue { $0 } }

    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { [hub, closeLimit, submissions] in
                // At a stop: the streams close, then no more work is taken; what is in flight ends.
                try? await gracefulShutdown()
                // Again: a stream that opened while the server was stopping (HeraldApplication told those before).
                hub.closeAll()
                await hub.waitUntilEmpty(within: closeLimit)
                submissions.finish()
            }
            for await job in jobs {
                group.addTask(operation: job)
            }
        }
    }
}
