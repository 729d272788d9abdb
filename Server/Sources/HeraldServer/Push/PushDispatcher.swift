import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
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
    /// Whether a push of a message that names the member (or `@all`) in a group may break through Focus
    /// (`HERALD_PUSH_TIME_SENSITIVE_MENTIONS=1`; APNs and Expo `time-sensitive`): the app needs Apple's Time Sensitive
    /// Notifications capability, so it is off unless the operator turns it on.
    public var timeSensitiveMentions = false
    /// How long after a member's alert of a conversation the next ones replace it silently, with a count
    /// (`HERALD_PUSH_BURST_WINDOW`, seconds, default 60; 0: every push alerts). A message naming the member still
    /// alerts; a read ends the burst (``NotificationBursts``).
    public var burstWindow: Duration = NotificationBursts.defaultWindow
    /// Whether alerts carry the keys of the app's own strings beside their English words (`HERALD_PUSH_LOC_KEYS=1`;
    /// APNs `loc-key`, FCM `body_loc_key`, ...). Off by default: iOS shows a key the app does not ship as it is, so
    /// only an app that ships Herald's strings (docs/ios.md) turns them on.
    public var localizationKeys = false
    /// What alerts tell Apple, Google and Expo (`HERALD_PUSH_CONTENT`: `full`, `sender`, `none` or `encrypted`;
    /// default `full`).
    public var content: PushContentMode = .full
    /// Whether an APNs, FCM or Expo device must register push keys (`HERALD_PUSH_REQUIRE_ENCRYPTION=1`, with
    /// ``content`` ``PushContentMode/encrypted`` only): one without them is refused (`encryption_required`).
    public var requireEncryption = false
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
/// The decider, a ``DurableConsumer`` of the ``EventLog``, decides on each entry (``PushDecisions``: who is pushed
/// what) and writes the jobs to the outbox, with its place in the log, before anything is sent: each entry is
/// decided on once, also across a crash. Each provider has a ``LeasedSender`` of its own that leases due jobs, at
/// most ``PushProvider/concurrency`` at once.
public final class PushDispatcher: Service, Sendable {
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

    let store: any PushOutbox & DeviceStore & ConversationStore & EntryStore & ConsumerPlaces & TrailStore
    let hub: Hub
    /// The nodes: where the others' connections are, and whom a push is told to.
    let cluster: any Cluster
    let settings: PushSettings
    /// The server's clock: what a job's due time, a lease's "now" and an entry's age are read on (tests move it).
    let clock: WallClock
    /// Who an entry reached, and where each member's streams are (on every node).
    let reach: Reach
    /// The providers, by platform.
    public let providers: [DeviceRegistration.Platform: any PushProvider]
    private let http: PushHTTP?
    private let logger: Logger
    /// The log's consumer that decides who is pushed what: the application adds it to the log.
    let decider: DurableConsumer
    /// Each provider's sender, while it runs.
    private let senders = NIOLockedValueBox<[DeviceRegistration.Platform: LeasedSender<PushJob>]>([:])
    private let counters = NIOLockedValueBox(Counts())
    private let outcomes: OutcomeWriter
    /// Told of devices removed for a dead token (`device.removed`).
    private let webhooks: WebhookDispatcher?
    /// Set at a graceful stop: the confirmations left are written once more, and not waited for again.
    private let stopping = NIOLockedValueBox(false)
    /// Confirmations not written yet: the furthest of each device.
    private let unwritten = NIOLockedValueBox<[DeviceKey: Int64]>([:])
    private let confirmationSignal = WakeSignal()
    /// The least time between two writes of confirmations: a flood of them is one write of each device's furthest.
    /// At most a second, and a fifth of the grace period, so a confirmation is written long before the push it
    /// holds back falls due.
    var confirmationWriteInterval: Duration { min(.seconds(1), settings.confirmWithin / 5) }

    /// A dispatcher sending through `providers`; `http` is shut down when it stops. `cluster` tells of the other
    /// nodes' connections, and tells every node of an alert pushed. Its ``decider`` decides on the entries of `log` once it was added to
    /// it, with the members `memberships` knows.
    init(
        store: any PushOutbox & DeviceStore & ConversationStore & EntryStore & ConsumerPlaces & TrailStore, log: EventLog, hub: Hub, memberships: Memberships, cluster: any Cluster,
        providers: [any PushProvider], settings: PushSettings, http: PushHTTP?, webhooks: WebhookDispatcher? = nil,
        clock: WallClock = WallClock(), logger: Logger
    ) {
        self.clock = clock
        self.webhooks = webhooks
        self.store = store
        self.hub = hub
        self.cluster = cluster
        self.settings = settings
        let providers = Dictionary(providers.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
        self.providers = providers
        self.http = http
        self.logger = logger
        outcomes = OutcomeWriter(store: store)
        let reach = Reach(store: store, memberships: memberships, hub: hub, cluster: cluster)
        self.reach = reach
        let decisions = PushDecisions(
            store: store, reach: reach,
            settings: settings, clock: clock, platforms: Set(providers.keys), trail: store.trailSwitch)
        let (counters, senders) = (counters, senders)
        decider = DurableConsumer(
            .push, store: store, after: log.delivered, isOn: !providers.isEmpty, interval: settings.decisionInterval,
            logger: logger,
            decide: {
                let decided = try await decisions.decide($0)
                return ConsumerOutput(pushJobs: decided.jobs, trail: decided.trail)
            },
            wrote: { added in
                counters.withLockedValue { $0.queued += added }
                for sender in senders.withLockedValue({ $0.values }) { sender.wake() }
            })
    }

    /// What it has done so far.
    public var counts: Counts { counters.withLockedValue { $0 } }

    /// The last seq a round of this node decided on (0 before its first): what tests wait for before changing a
    /// member's choices, which the decision reads when it is made.
    var decidedThrough: NIOLockedValueBox<Int64> { decider.decidedThrough }

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
        defer { logger.debug("push: confirmations ended") }
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

    /// Wakes every sender, to lease what is due now: after a test moved ``clock`` forward.
    func wakeSenders() {
        wake(Set(providers.keys))
    }

    /// When a clear queued now is due, or nil when there is nothing to push with (a read queues no clear then).
    var clearsDue: Date? { providers.isEmpty ? nil : clock.now() }

    /// Clears queued by a read or a change to a group (people no longer in it): the providers go and send them.
    func queued(clears: Int) {
        guard clears > 0 else { return }
        counters.withLockedValue { $0.queued += clears }
        wake(Set(providers.keys))
    }

    private func wake(_ platforms: Set<DeviceRegistration.Platform>) {
        let senders = senders.withLockedValue { $0 }
        for platform in platforms { senders[platform]?.wake() }
    }

    /// Sends until the server stops: what was in flight when it last stopped goes first (with the same collapse
    /// id, so a device shows it once).
    public func run() async throws {
        guard !providers.isEmpty else {
            // Nothing to push with: no decisions, and the decider's place moves to the log's end at start and at
            // stop, so that a provider configured later starts from then, not from what was said meanwhile.
            await decider.skipToEnd()
            try? await gracefulShutdown()
            await decider.skipToEnd(stopping: true)
            await http?.shutdown()
            return
        }
        let released = try await store.releasePushLeases()
        if released > 0 { logger.notice("push: \(released) pushes in flight at the last stop will be sent again") }
        let senders = providers.mapValues { provider in
            LeasedSender<PushJob>(
                "push", concurrency: provider.concurrency, idle: .seconds(60), now: { [clock] in clock.now() },
                logger: logger,
                lease: { [store, clock] limit in
                    try await store.leasePushJobs(now: clock.now(), platform: provider.platform, limit: limit)
                },
                send: { job, answered in await self.process(job, with: provider, answered: answered) },
                release: { [store, clock] jobs in try await store.releasePushJobs(ids: jobs.map(\.id), now: clock.now()) })
        }
        self.senders.withLockedValue { $0 = senders }
        await withDiscardingTaskGroup { writing in
            // The outcomes are written until the last send in flight was answered.
            writing.addTask { await self.outcomes.run() }
            await withDiscardingTaskGroup { group in
                for sender in senders.values {
                    group.addTask { await sender.run() }
                }
                group.addTask { await self.confirmationLoop() }
                // The decider runs until the graceful stop, which cancels it: a round in progress is cut and rolls
                // back, and what it had not decided is decided at the next start, from the place kept (deciding a
                // backlog here could outlast the shutdown timeout). Then the senders start nothing more; the sends
                // in flight are answered and their outcomes written (a push cut here would go again at the next
                // start, and show twice), unless the shutdown timeout cuts them first. Jobs leased and not started
                // are put back.
                await cancelWhenGracefulShutdown {
                    await withDiscardingTaskGroup { deciding in
                        deciding.addTask { await self.decider.run() }
                        deciding.addTask { await self.housekeeping() }
                    }
                }
                logger.debug("push: decisions stopped")
                stopping.withLockedValue { $0 = true }
                for sender in senders.values { sender.stop() }
                confirmationSignal.notify()
            }
            logger.debug("push: sends and confirmations ended")
            outcomes.close()
        }
        logger.debug("push: outcomes written")
        await http?.shutdown()
        logger.debug("push: stopped")
    }

    /// Forgets the device keys' grants that ran out (``PushGrant/lifetime``) and the delivery trail's steps older than
    /// `HERALD_TRAIL_HOURS` (``forgetOldTrail()``), now and every ten minutes, until cancelled.
    private func housekeeping() async {
        while !Task.isCancelled {
            do {
                let forgotten = try await store.forgetPushGrants(before: clock.now().addingTimeInterval(-PushGrant.lifetime))
                if forgotten > 0 { logger.debug("push: expired device-key grants forgotten", metadata: ["count": "\(forgotten)"]) }
                let steps = try await forgetOldTrail()
                if steps > 0 { logger.debug("push: old steps of the delivery trail forgotten", metadata: ["count": "\(steps)"]) }
            } catch {
                if !Task.isCancelled { logger.warning("push: expired grants or trail not forgotten", metadata: ["error": "\(error)"]) }
            }
            try? await Task.sleep(for: .seconds(600))
        }
    }

    /// Forgets the delivery trail's steps older than `HERALD_TRAIL_HOURS` on the server's clock (all of them when the
    /// trail is off); returns how many.
    @discardableResult
    func forgetOldTrail() async throws -> Int {
        try await store.forgetTrail(before: clock.now().addingTimeInterval(-Double(store.trailSwitch.hours) * 3_600))
    }

    private func process(_ job: PushJob, with provider: any PushProvider, answered: @Sendable () -> Void) async {
        let metadata: Logger.Metadata = [
            "provider": "\(provider.name)", "user": "\(job.device.userID)", "device": "\(job.device.id)",
            "kind": "\(job.kind.rawValue)", "message": "\(job.content.messageID ?? job.content.conversationID)"]
        // (A job's creation is stamped by the store on the system's time: its age is read on that time too.)
        let deadline = job.createdAt.addingTimeInterval(settings.maxAge.seconds)
        guard Date() < deadline else {
            answered()
            return await drop(job, reason: "older than HERALD_PUSH_MAX_AGE", step: .expired, metadata: metadata)
        }
        let outcome = job.kind == .receipt ? await provider.checkReceipt(job) : await provider.send(job)
        answered()
        do {
            switch outcome {
            case .sent, .logged:
                // A logged push (`--demo`) is finished as a sent one, and counted apart.
                let (ticket, id): (String?, String?) = if case .sent(let given, let id) = outcome { (given, id) } else { (nil, nil) }
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
                HeraldMetrics.pushJob(provider: job.device.platform.rawValue, outcome: outcome == .logged ? "logged" : "sent")
                let kind: TrailStep.Kind = job.kind == .receipt ? .delivered : outcome == .logged ? .logged : .sent
                try await outcomes.finish(FinishedPush(
                    job: job, followUp: followUp, sent: true, step: TrailStep(job: job, at: clock.now(), kind: kind, detail: id)))
                // The device's streams, on whichever node, hear of it, so it does not notify the message itself.
                if let notice = PushedNotice(job: job) { await cluster.announce(notice) }
                logger.debug(job.coveredBy == nil ? "push sent" : "push sent: no device confirmed the message in time",
                             metadata: metadata)
            case .retry(let after, let reason):
                let wait = backoff.wait(attempts: job.attempts, retryAfter: after)
                let due = clock.now().addingTimeInterval(wait)
                guard Date().addingTimeInterval(wait) < deadline else {
                    return await drop(job, reason: "\(reason), and no time left to retry", step: .expired, metadata: metadata)
                }
                counters.withLockedValue { $0.retried += 1 }
                HeraldMetrics.pushJob(provider: job.device.platform.rawValue, outcome: "retried")
                try await store.retryPushJob(id: job.id, at: due)
                try await record(TrailStep(job: job, at: clock.now(), kind: .retried, detail: reason))
                logger.info(
                    "push will be retried in \(String(format: "%.1f", wait)) s: \(ControlCharacters.escaped(reason))",
                    metadata: metadata)
            case .removeDevice(let reason):
                counters.withLockedValue { $0.removedDevices += 1 }
                HeraldMetrics.pushJob(provider: job.device.platform.rawValue, outcome: "device_removed")
                let webhook = webhooks?.wants(.deviceRemoved) ?? false
                // Recorded first: whoever sees the device gone finds why in the trail.
                try await record(TrailStep(job: job, at: clock.now(), kind: .deviceRemoved, detail: reason))
                _ = try await store.removeDevice(id: job.device.id, userID: job.device.userID, webhook: webhook)
                if webhook { webhooks?.queued() }
                logger.notice("push token dead, device removed: \(ControlCharacters.escaped(reason))", metadata: metadata)
            case .drop(let reason):
                await drop(job, reason: reason, step: .refused, metadata: metadata)
            case .redirected(let status, let location):
                let target = location.map { " to \(ControlCharacters.escaped(String($0.prefix(200))))" } ?? ""
                await drop(
                    job, reason: "the push service redirected (HTTP \(status)\(target)); redirects are not followed",
                    outcome: "redirected", step: .redirected, metadata: metadata)
            }
        } catch {
            // The job stays leased: it goes again once its lease runs out (PostgreSQL) or at the next start. Expected
            // while the store closes; while running it delays a push by a lease, so it is said.
            let level: Logger.Level = stopping.withLockedValue { $0 } ? .debug : .warning
            logger.log(
                level: level, "push outcome not recorded: the push goes again once its lease runs out",
                metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
    }

    private func drop(
        _ job: PushJob, reason: String, outcome: String = "dropped", step: TrailStep.Kind, metadata: Logger.Metadata
    ) async {
        counters.withLockedValue { $0.dropped += 1 }
        HeraldMetrics.pushJob(provider: job.device.platform.rawValue, outcome: outcome)
        try? await outcomes.finish(FinishedPush(job: job, step: TrailStep(job: job, at: clock.now(), kind: step, detail: reason)))
        logger.warning("push dropped: \(ControlCharacters.escaped(reason))", metadata: metadata)
    }

    /// Sends a test notification to `device` at once, outside the outbox (it is about no message, and is not tried
    /// again), and answers with what its push service said. A token the service calls dead removes the device, as
    /// a message's push would.
    func test(_ device: DeviceRegistration) async throws -> WireTestNotification {
        let answer = { (outcome: WireTestNotification.Outcome, id: String?, reason: String?) in
            WireTestNotification(device: device.id, platform: device.platform, outcome: outcome, providerID: id, reason: reason)
        }
        guard let provider = providers[device.platform] else {
            return answer(.noProvider, nil, "this server has no push service for \(device.platform.rawValue): \(Self.setting(for: device.platform))")
        }
        let job = PushJob(
            id: 0, kind: .alert, device: device, content: .test(badge: try await store.badge(of: device.userID)),
            createdAt: Date(), attempts: 0)
        let outcome = await provider.send(job)
        let metadata: Logger.Metadata = ["provider": "\(provider.name)", "user": "\(device.userID)", "device": "\(device.id)"]
        logger.info("push: test notification sent", metadata: metadata.merging(["outcome": "\(outcome)"]) { $1 })
        switch outcome {
        case .sent(_, let id): return answer(.sent, id, nil)
        case .logged: return answer(.logged, nil, "a --demo server writes pushes to its log instead of sending them")
        case .retry(_, let reason): return answer(.retry, nil, reason)
        case .removeDevice(let reason):
            let webhook = webhooks?.wants(.deviceRemoved) ?? false
            _ = try await store.removeDevice(id: device.id, userID: device.userID, webhook: webhook)
            if webhook { webhooks?.queued() }
            counters.withLockedValue { $0.removedDevices += 1 }
            return answer(.deviceRemoved, nil, reason)
        case .drop(let reason): return answer(.refused, nil, reason)
        case .redirected(let status, _): return answer(.redirected, nil, "HTTP \(status); redirects are not followed")
        }
    }

    /// The settings that give the server a push service for `platform`.
    private static func setting(for platform: DeviceRegistration.Platform) -> String {
        switch platform {
        case .apns: "set HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID and HERALD_APNS_TOPIC"
        case .fcm: "set HERALD_FCM_SERVICE_ACCOUNT"
        case .expo: "Expo's service is on unless the server runs with no push at all"
        case .webpush: "Web Push is on unless the server runs with no push at all"
        }
    }

    /// Records `step` in the delivery trail (nothing for a clear's, nor when the trail is off).
    private func record(_ step: TrailStep?) async throws {
        guard let step, store.trailSwitch.isOn else { return }
        try await store.recordTrail([step])
    }

    /// The wait before a retry (``PushSettings/retryBase`` doubling to ``PushSettings/maxRetryWait``).
    var backoff: Backoff { Backoff(base: settings.retryBase, longest: settings.maxRetryWait) }
}
