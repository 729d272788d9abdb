import DequeModule
import Foundation
import HeraldCore
import HeraldProtocol
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// How pushes are timed and bounded (`HERALD_PUSH_*`).
public struct PushSettings: Hashable, Sendable {
    /// How long after a message its pushes wait (`HERALD_PUSH_DELAY`, default 0): reading the conversation on
    /// any device meanwhile cancels them, as chat apps that wait to see if you read it elsewhere do.
    public var delay: Duration = .zero
    /// How long a connected device has to confirm a message (the stream's `received`) before its push goes anyway
    /// (`HERALD_CONFIRM_WITHIN`, default 5 s): a device holds back a push only for what it confirmed taking in
    /// (docs/behaviour.md, rule 8). A frozen app, a vanished network or a hung tab is pushed this long after the
    /// message (or after ``delay``, if that is longer).
    public var confirmWithin: Duration = .seconds(5)
    /// The seconds ``confirmWithin`` may be: at least 2, since the clients confirm a burst at most once a second and
    /// the confirmation must land before the push falls due.
    public static let confirmWithinRange: ClosedRange<Double> = 2...300
    /// How long a push is tried before it is dropped (`HERALD_PUSH_MAX_AGE`, default one hour); also the
    /// expiry the push services are given.
    public var maxAge: Duration = .seconds(3600)
    /// With several nodes, how long a job a node took is its own (`HERALD_PUSH_LEASE`, default 120 s): a node that
    /// died holds its jobs that long, then another sends them.
    public var lease: Duration = .seconds(120)
    /// The least time from one decision round's start to the next's (`HERALD_PUSH_DECISION_INTERVAL`, default
    /// 20 ms): a round costs two trips to the database whatever it decides, so under a stream of posts one round
    /// takes the entries of many. A post after a quiet spell is decided at once.
    public var decisionInterval: Duration = .milliseconds(20)
    /// How many pushes each provider sends at once (`HERALD_PUSH_CONCURRENCY`, default 32).
    public var concurrency = 32
    /// The first retry's wait; each further retry waits twice as long (with jitter), up to ``maxRetryWait``.
    public var retryBase: Duration = .seconds(1)
    /// The longest wait between two tries.
    public var maxRetryWait: Duration = .seconds(15 * 60)
    /// How long after an Expo push its receipt is asked for (`HERALD_EXPO_RECEIPT_DELAY`, default 15 minutes).
    public var receiptDelay: Duration = .seconds(15 * 60)
    /// Extra trusted CA certificates (PEM) for the push services' endpoints (`HERALD_PUSH_CA_FILE`).
    public var caFile: String?
    /// APNs, when its key, key id, team id and topic are all set (`HERALD_APNS_*`).
    public var apns: APNsProvider.Settings?
    /// The service-account JSON file for FCM (`HERALD_FCM_SERVICE_ACCOUNT`).
    public var fcmServiceAccount: String?
    /// FCM's server (`HERALD_FCM_URL`).
    public var fcmURL = "https://fcm.googleapis.com"
    /// Expo's server (`HERALD_EXPO_URL`).
    public var expoURL: String?
    /// Expo's access token, for projects that require one (`HERALD_EXPO_ACCESS_TOKEN`).
    public var expoAccessToken: String?
    /// The VAPID key (PEM) for Web Push (`HERALD_VAPID_PRIVATE_KEY_FILE`); nil: the one kept beside the database.
    public var vapidKeyFile: String?
    /// The VAPID subject, a `mailto:` or `https:` URL (`HERALD_VAPID_SUBJECT`).
    public var vapidSubject: String?
    /// Whether Web Push endpoints on this machine or a private network are taken (`HERALD_WEBPUSH_ALLOW_PRIVATE=1`):
    /// for tests against a local push service only.
    public var webPushAllowPrivate = false

    /// The defaults: no credentials, so APNs and FCM are off; Expo (which needs none) is on.
    public init() {}
}

/// Push delivery: the decision for each entry of the log, the outbox's jobs sent by each provider, retries, pruning.
///
/// The decider, a consumer of the ``EventLog``, decides on each entry (``PushDecisions``: who is pushed what) and
/// writes the jobs to the outbox before anything is sent. It keeps its place in the log in the database, written in
/// the transaction that writes the jobs, so each entry is decided on once, also across a crash; it holds at most
/// ``decisionBuffer`` entries in memory and reads the log from the database when it is further behind. Each provider
/// has a loop of its own that leases due jobs, at most ``PushProvider/concurrency`` at once.
public final class PushDispatcher: Service, LogConsumer, Sendable {
    /// What the dispatcher has done since it started.
    public struct Counts: Hashable, Sendable {
        /// Jobs queued by decisions and reads.
        public var queued = 0
        /// Pushes the services took.
        public var sent = 0
        /// Tries that will be tried again.
        public var retried = 0
        /// Devices removed for a dead token.
        public var removedDevices = 0
        /// Jobs given up (refused, too old).
        public var dropped = 0
        /// Pushes sent because no device confirmed their message in time (part of ``sent``).
        public var unconfirmed = 0
        /// Batches of confirmations written.
        public var confirmationWrites = 0
    }

    /// Entries the log handed on that the decider has not decided on yet.
    private struct Pending {
        var entries: Deque<IncomingMessage> = []
        /// Entries up to this seq are not held (they came before the start, or were let go past the buffer): the
        /// decider reads them from the database.
        var readUpTo: Int64
    }

    /// The most entries the decider holds in memory; past it, they are let go and read again from the database.
    static let decisionBuffer = 4_096
    /// The most entries one decision round takes.
    static let decisionRound = 256

    let store: any Store
    let hub: Hub
    /// The other nodes' connections, with several nodes.
    let cluster: (any ClusterPresence)?
    let settings: PushSettings
    /// The server's clock: what a job's due time, a lease's "now" and an entry's age are read on (tests move it).
    let clock: WallClock
    /// The providers, by platform.
    public let providers: [DeviceRegistration.Platform: any PushProvider]
    private let http: PushHTTP?
    private let logger: Logger
    private let pending: NIOLockedValueBox<Pending>
    private let decisionSignal = WakeSignal()
    private let signals: [DeviceRegistration.Platform: WakeSignal]
    private let counters = NIOLockedValueBox(Counts())
    private let outcomes: OutcomeWriter
    /// Who is told what, for each round.
    private let decisions: PushDecisions
    /// Told of devices removed for a dead token (`device.removed`).
    private let webhooks: WebhookDispatcher?
    /// Set at a graceful stop: the send loops start nothing more and end once their sends in flight are answered.
    private let stopping = NIOLockedValueBox(false)
    /// Confirmations not written yet: the furthest of each device.
    private let unwritten = NIOLockedValueBox<[DeviceKey: Int64]>([:])
    private let confirmationSignal = WakeSignal()
    /// The least time between two writes of confirmations: a flood of them is one write of each device's furthest.
    /// At most a second, and a fifth of the grace period, so a confirmation is written long before the push it
    /// holds back falls due.
    var confirmationWriteInterval: Duration { min(.seconds(1), settings.confirmWithin / 5) }

    /// A dispatcher sending through `providers`; `http` is shut down when it stops. With several nodes, `cluster`
    /// tells of the other nodes' connections. It decides on the entries of `log` once it was added to it as a
    /// consumer, with the members `memberships` knows.
    init(
        store: any Store, log: EventLog, hub: Hub, memberships: Memberships, cluster: (any ClusterPresence)? = nil,
        providers: [any PushProvider], settings: PushSettings, http: PushHTTP?, webhooks: WebhookDispatcher? = nil,
        clock: WallClock = WallClock(), logger: Logger
    ) {
        self.clock = clock
        self.webhooks = webhooks
        self.store = store
        self.hub = hub
        pending = NIOLockedValueBox(Pending(readUpTo: log.delivered))
        self.cluster = cluster
        self.settings = settings
        self.providers = Dictionary(providers.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
        self.http = http
        self.logger = logger
        signals = self.providers.mapValues { _ in WakeSignal() }
        outcomes = OutcomeWriter(store: store)
        decisions = PushDecisions(
            store: store, hub: hub, cluster: cluster, memberships: memberships, settings: settings, clock: clock,
            platforms: Set(self.providers.keys))
    }

    /// What it has done so far.
    public var counts: Counts { counters.withLockedValue { $0 } }

    /// Takes entries the log handed on and holds them for the decider: never waits. Past ``decisionBuffer`` they
    /// are let go; the decider reads them from the database when it gets there.
    func take(_ entries: [IncomingMessage]) async {
        _ = takeAtOnce(entries)
    }

    /// As ``take(_:)``, which never waits: takes them all.
    func takeAtOnce(_ entries: [IncomingMessage]) -> Int {
        guard !providers.isEmpty else { return entries.count }
        pending.withLockedValue { pending in
            if pending.entries.count + entries.count > Self.decisionBuffer {
                let last = entries.last?.message.seq ?? pending.entries.last?.message.seq ?? pending.readUpTo
                pending.readUpTo = max(pending.readUpTo, last)
                pending.entries.removeAll()
            } else {
                pending.entries.append(contentsOf: entries)
            }
        }
        decisionSignal.notify()
        return entries.count
    }

    /// Moves the decider's place to the log's end, deciding nothing (there is no provider to push with); at a stop,
    /// within ``lastWriteLimit``.
    private func skipDecisions(stopping: Bool = false) async {
        let skip: @Sendable () async throws -> Void = { [store] in
            let latest = try await store.latestSeq()
            _ = try await store.decidePushes { cursor in ([], max(cursor, latest)) }
        }
        do {
            if stopping { try await withinLimit(lastWriteLimit, skip) } else { try await skip() }
        } catch {
            logger.warning("push: the decisions' place could not be moved", metadata: ["error": "\(error)"])
        }
    }

    /// Decides round after round while the log has entries it has not decided on; when a round finds the place
    /// held by another node, or fails, it tries again after a second.
    ///
    /// Rounds start at most every ``PushSettings/decisionInterval``: a round costs two trips to the database (its
    /// place, then its jobs with the new place) whatever it decides, so under a stream of posts one round takes the
    /// entries of many rather than each post paying for its own. A post after a quiet spell is decided at once.
    /// The last seq a round of this node decided on (0 before its first): what tests wait for before changing a
    /// member's choices, which the decision reads when it is made.
    let decidedThrough = NIOLockedValueBox<Int64>(0)

    private func decideLoop() async {
        var retry = true
        while !Task.isCancelled {
            let started = ContinuousClock.now
            retry = await decideAll() == false
            await decisionSignal.wait(timeout: retry ? .seconds(1) : .seconds(60))
            let next = started + settings.decisionInterval
            if ContinuousClock.now < next { try? await Task.sleep(until: next) }
        }
    }

    /// Rounds until the decisions reach the last entry held (or one decides nothing): true when they got there,
    /// false when another node holds the place or a round failed.
    @discardableResult
    private func decideAll() async -> Bool {
        while !Task.isCancelled {
            do {
                let more = NIOLockedValueBox(false)
                guard let added = try await store.decidePushes({ cursor in
                    let round = try await self.round(after: cursor)
                    let behind = self.pending.withLockedValue { pending in
                        (pending.entries.last?.message.seq ?? 0) > round.through || pending.readUpTo > round.through
                    }
                    more.withLockedValue { $0 = round.through > cursor && behind }
                    self.decidedThrough.withLockedValue { $0 = max($0, round.through) }
                    return round
                }) else { return false }
                if added > 0 {
                    counters.withLockedValue { $0.queued += added }
                    wake(Set(providers.keys))
                }
                if !more.withLockedValue({ $0 }) { return true }
            } catch {
                if !Task.isCancelled { logger.warning("push: decisions failed", metadata: ["error": "\(error)"]) }
                return false
            }
        }
        return true
    }

    /// One round: the entries after `cursor` (from memory, or from the database when they are not held), each
    /// decided on; their jobs, and the seq decided through.
    private func round(after cursor: Int64) async throws -> (jobs: [NewPushJob], through: Int64) {
        let (held, readUpTo) = pending.withLockedValue { pending -> ([IncomingMessage], Int64) in
            while let first = pending.entries.first, (first.message.seq ?? 0) <= cursor { pending.entries.removeFirst() }
            return (Array(pending.entries.prefix(Self.decisionRound)), pending.readUpTo)
        }
        var entries = held
        var through = held.last?.message.seq ?? cursor
        if cursor < readUpTo {
            // Behind what is held: from the database, up to where memory starts (seqs without a row count too).
            let upper = min(readUpTo, cursor + 10_000)
            entries = try await store.entries(after: cursor, through: upper, limit: Self.decisionRound)
            through = entries.count == Self.decisionRound ? (entries.last?.message.seq ?? upper) : upper
        }
        return (try await decisions.jobs(for: entries), through)
    }

    /// A stream of `userID`'s `device` (empty: one that did not say) confirmed taking in every message up to
    /// `through`: written (coalesced) for the decisions of every node. Never waits.
    func confirmed(userID: String, device: String, through: Int64) {
        guard !providers.isEmpty else { return }
        unwritten.withLockedValue { unwritten in
            let key = DeviceKey(userID: userID, id: device)
            unwritten[key] = max(unwritten[key] ?? 0, through)
        }
        confirmationSignal.notify()
    }

    /// Writes the confirmations as they come, at most every ``confirmationWriteInterval``, until the graceful stop; then
    /// what is left.
    private func confirmationLoop() async {
        while true {
            let stopped = stopping.withLockedValue { $0 }
            if !stopped { await confirmationSignal.wait(timeout: .seconds(60)) }
            let batch = unwritten.withLockedValue { unwritten in
                defer { unwritten = [:] }
                return unwritten
            }
            if !batch.isEmpty {
                do {
                    let confirmations = batch.map {
                        PushConfirmation(userID: $0.key.userID, device: $0.key.id, through: $0.value)
                    }
                    let write: @Sendable () async throws -> Int = { [store] in try await store.recordConfirmations(confirmations) }
                    // The last write of a stop is bounded: the stop ends within its grace period with the database gone.
                    let dropped = stopped ? try await withinLimit(lastWriteLimit, write) : try await write()
                    counters.withLockedValue { $0.confirmationWrites += 1 }
                    if dropped > 0 { logger.trace("push: \(dropped) alerts held back by confirmations") }
                } catch {
                    if stopped { return }
                    // Kept for the next write (a push that goes meanwhile shows once: docs/push.md).
                    unwritten.withLockedValue { unwritten in
                        for (key, through) in batch { unwritten[key] = max(unwritten[key] ?? 0, through) }
                    }
                    logger.warning("push: confirmations not recorded", metadata: ["error": "\(error)"])
                    try? await Task.sleep(for: .seconds(1))
                    confirmationSignal.notify()
                    continue
                }
            }
            if stopped || Task.isCancelled { return }
            try? await Task.sleep(for: confirmationWriteInterval)
        }
    }

    /// Wakes every send loop, to lease what is due now: after a test moved ``clock`` forward.
    func wakeSenders() {
        wake(Set(providers.keys))
    }

    /// Clears queued by a change to a group (people no longer in it): the providers go and send them.
    func changed(clears: Int) {
        guard clears > 0 else { return }
        counters.withLockedValue { $0.queued += clears }
        wake(Set(providers.keys))
    }

    /// After `userID` read `conversationID`: alerts still waiting for it are dropped, and the devices that were
    /// shown its messages by a push, but the one that read (`device`), get a silent push clearing them.
    func conversationRead(userID: String, conversationID: String, device: String?) async {
        guard !providers.isEmpty else { return }
        do {
            let clears = try await store.pushAfterRead(
                userID: userID, conversationID: conversationID, device: device, due: clock.now())
            if clears > 0 {
                counters.withLockedValue { $0.queued += clears }
                wake(Set(providers.keys))
            }
        } catch {
            logger.warning("push: read not recorded", metadata: ["error": "\(error)"])
        }
    }

    private func wake(_ platforms: Set<DeviceRegistration.Platform>) {
        for platform in platforms { signals[platform]?.notify() }
    }

    /// Sends until the server stops: what was in flight when it last stopped goes first (with the same collapse
    /// id, so a device shows it once).
    public func run() async throws {
        guard !providers.isEmpty else {
            // Nothing to push with: no decisions, and the decider's place moves to the log's end at start and at
            // stop, so that a provider configured later starts from then, not from what was said meanwhile.
            await skipDecisions()
            try? await gracefulShutdown()
            await skipDecisions(stopping: true)
            await http?.shutdown()
            return
        }
        let released = try await store.releasePushLeases()
        if released > 0 { logger.notice("push: \(released) pushes in flight at the last stop will be sent again") }
        await withDiscardingTaskGroup { writing in
            // The outcomes are written until the last send in flight was answered.
            writing.addTask { await self.outcomes.run() }
            await withDiscardingTaskGroup { group in
                for provider in providers.values {
                    group.addTask { await self.sendLoop(provider) }
                }
                group.addTask { await self.confirmationLoop() }
                // The decider runs until the graceful stop, which cancels it: a round in progress is cut and rolls
                // back, and what it had not decided is decided at the next start, from the place kept (deciding a
                // backlog here could outlast the shutdown timeout). Then the send loops start nothing more; the
                // sends in flight are answered and their outcomes written (a push cut here would go again at the
                // next start, and show twice), unless the shutdown timeout cuts them first. Jobs leased and not
                // started are released at the next start.
                await cancelWhenGracefulShutdown { await self.decideLoop() }
                stopping.withLockedValue { $0 = true }
                wake(Set(providers.keys))
                confirmationSignal.notify()
            }
            outcomes.close()
        }
        await http?.shutdown()
    }

    /// One provider's loop. It keeps up to ``PushProvider/concurrency`` pushes in flight, each in a task of its own,
    /// and as many leased ahead, so a freed slot takes the next job at once rather than after a trip to the
    /// database; it leases again when fewer than half are left ahead, and otherwise waits for a slot, new jobs or
    /// the next due job.
    private func sendLoop(_ provider: any PushProvider) async {
        guard let signal = signals[provider.platform] else { return }
        let concurrency = provider.concurrency
        let inFlight = NIOLockedValueBox(0)
        var ahead: [PushJob] = []
        var nextDue: Date?
        let takeSlot = {
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
                    group.addTask {
                        // The slot is free once the service answered; the outcome is written meanwhile (the job
                        // stays leased until then, so it is not sent twice).
                        await self.process(job, with: provider) {
                            inFlight.withLockedValue { $0 -= 1 }
                            signal.notify()
                        }
                        // And once the outcome is written: a retry or a receipt may be the next job due.
                        signal.notify()
                    }
                }
                if ahead.count < max(1, concurrency / 2) {
                    do {
                        // A lease in progress is cut by the graceful stop (it rolls back): the stop does not wait on
                        // a database that is gone. The sends in flight are children, and are not cut.
                        let limit = concurrency - ahead.count
                        let leased = try await cancelWhenGracefulShutdown { [store, clock] in
                            try await store.leasePushJobs(now: clock.now(), platform: provider.platform, limit: limit)
                        }
                        ahead += leased.jobs
                        nextDue = leased.nextDue
                        if !leased.jobs.isEmpty { continue }
                    } catch {
                        if !Task.isCancelled, !Task.isShuttingDownGracefully {
                            logger.warning("push: outbox unreadable", metadata: ["error": "\(error)"])
                        }
                        await signal.wait(timeout: .seconds(1))
                        continue
                    }
                }
                // Nothing to start: wait for a free slot (a job ahead), new jobs, or the next due one.
                let wait = ahead.isEmpty ? nextDue.map { max(0.001, $0.timeIntervalSince(clock.now())) } ?? 60 : 60
                await signal.wait(timeout: .milliseconds(Int64(min(wait, 60) * 1000)))
            }
        }
    }

    private func process(_ job: PushJob, with provider: any PushProvider, answered: () -> Void) async {
        let metadata: Logger.Metadata = [
            "provider": "\(provider.name)", "user": "\(job.device.userID)", "device": "\(job.device.id)",
            "kind": "\(job.kind.rawValue)", "message": "\(job.content.messageID ?? job.content.conversationID)"]
        // (A job's creation is stamped by the store on the system's time: its age is read on that time too.)
        let deadline = job.createdAt.addingTimeInterval(settings.maxAge.seconds)
        guard Date() < deadline else {
            answered()
            return await drop(job, reason: "older than HERALD_PUSH_MAX_AGE", metadata: metadata)
        }
        let outcome = job.kind == .receipt ? await provider.checkReceipt(job) : await provider.send(job)
        answered()
        do {
            switch outcome {
            case .sent(let ticket):
                let followUp = ticket.map {
                    NewPushJob(kind: .receipt, userID: job.device.userID, deviceID: job.device.id, content: job.content,
                               ticket: $0, due: clock.now().addingTimeInterval(settings.receiptDelay.seconds))
                }
                // Counted before it is written: whoever sees the outbox empty sees the counts too.
                if job.kind != .receipt {
                    counters.withLockedValue {
                        $0.sent += 1
                        if job.coveredBy != nil { $0.unconfirmed += 1 }
                    }
                }
                if job.coveredBy != nil { HeraldMetrics.pushesUnconfirmed.increment() }
                HeraldMetrics.pushJob(provider: job.device.platform.rawValue, outcome: "sent")
                try await outcomes.finish(FinishedPush(job: job, followUp: followUp, sent: true))
                // The device's streams hear of it, so it does not notify the message itself. With several nodes, the
                // store told every node at the commit.
                if cluster == nil, let notice = PushedNotice(job: job) { hub.pushed(notice) }
                logger.debug(job.coveredBy == nil ? "push sent" : "push sent: no device confirmed the message in time",
                             metadata: metadata)
            case .retry(let after, let reason):
                let wait = after?.seconds ?? backoff(attempts: job.attempts)
                let due = clock.now().addingTimeInterval(wait)
                guard Date().addingTimeInterval(wait) < deadline else {
                    return await drop(job, reason: "\(reason), and no time left to retry", metadata: metadata)
                }
                counters.withLockedValue { $0.retried += 1 }
                HeraldMetrics.pushJob(provider: job.device.platform.rawValue, outcome: "retried")
                try await store.retryPushJob(id: job.id, at: due)
                logger.info(
                    "push will be retried in \(String(format: "%.1f", wait)) s: \(ControlCharacters.escaped(reason))",
                    metadata: metadata)
            case .removeDevice(let reason):
                counters.withLockedValue { $0.removedDevices += 1 }
                HeraldMetrics.pushJob(provider: job.device.platform.rawValue, outcome: "device_removed")
                let webhook = webhooks?.wants(.deviceRemoved) ?? false
                _ = try await store.removeDevice(id: job.device.id, userID: job.device.userID, webhook: webhook)
                if webhook { webhooks?.queued() }
                logger.notice("push token dead, device removed: \(ControlCharacters.escaped(reason))", metadata: metadata)
            case .drop(let reason):
                await drop(job, reason: reason, metadata: metadata)
            case .redirected(let status, let location):
                let target = location.map { " to \(ControlCharacters.escaped(String($0.prefix(200))))" } ?? ""
                await drop(
                    job, reason: "the push service redirected (HTTP \(status)\(target)); redirects are not followed",
                    outcome: "redirected", metadata: metadata)
            }
        } catch {
            // The store is closing: the job stays leased and is sent again at the next start.
            logger.debug("push outcome not recorded", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
    }

    private func drop(_ job: PushJob, reason: String, outcome: String = "dropped", metadata: Logger.Metadata) async {
        counters.withLockedValue { $0.dropped += 1 }
        HeraldMetrics.pushJob(provider: job.device.platform.rawValue, outcome: outcome)
        try? await outcomes.finish(FinishedPush(job: job))
        logger.warning("push dropped: \(ControlCharacters.escaped(reason))", metadata: metadata)
    }

    /// The wait before try `attempts + 1`: doubling from ``PushSettings/retryBase``, at most
    /// ``PushSettings/maxRetryWait``, each between half and all of that (jitter, so many retries do not come at
    /// once).
    func backoff(attempts: Int) -> TimeInterval {
        let full = min(settings.maxRetryWait.seconds, settings.retryBase.seconds * pow(2, Double(min(attempts, 30))))
        return full * Double.random(in: 0.5...1)
    }
}
