import Foundation
import HeraldCore
import HeraldProtocol
import Logging
import NIOConcurrencyHelpers
import NIOHTTP1
import NIOSSL
import ServiceLifecycle

/// Webhooks to the app's backend (docs/integrate.md): the feed that turns the log's entries into events, the sender
/// that delivers them, signed, in order per conversation, at least once, and the reminders of unread messages.
///
/// The feed is a consumer of the ``EventLog`` with its place in the log kept in the database, written in the
/// transaction that queues its events (so each entry is told once, across a crash). The sender leases events from
/// the outbox (``WebhookOutbox``): for each conversation only the first waiting, so a conversation's events arrive
/// one after the other, each once the one before was answered 2xx; a failure is tried again with back-off (and
/// `Retry-After`), the events behind it waiting, for ``WebhookSettings/maxAge``. With several nodes, each leases
/// what no other holds. Reads and dead devices queue their events themselves; the reminders' loop turns those due
/// into events.
final class WebhookDispatcher: Service, LogConsumer, Sendable {
    let store: any Store
    /// The node's log: how far the feed may read.
    private let log: EventLog
    let settings: WebhookSettings
    private let hub: Hub
    private let memberships: Memberships
    private let cluster: (any ClusterPresence)?
    private let lease: Duration
    private let logger: Logger
    private let http: GuardedHTTP?
    private let feedSignal = WakeSignal()
    private let sendSignal = WakeSignal()
    private let reminderSignal = WakeSignal()
    /// Users a device of whom connected since the reminder loop last looked: their reminders are dropped first.
    private let connectedUsers = NIOLockedValueBox<Set<String>>([])
    private let stopping = NIOLockedValueBox(false)
    /// The last seq the log handed on: committed, and what the feed goes up to. (The log's own `delivered` moves
    /// only after every consumer took the entries, so a feed woken by them would not see them there yet.)
    private let handedOn = NIOLockedValueBox<Int64>(0)

    /// The most entries one round of the feed reads.
    static let feedRound = 256

    init(
        store: any Store, log: EventLog, hub: Hub, memberships: Memberships, cluster: (any ClusterPresence)?,
        settings: WebhookSettings, lease: Duration, logger: Logger
    ) {
        self.store = store
        self.log = log
        self.hub = hub
        self.memberships = memberships
        self.cluster = cluster
        self.settings = settings
        self.lease = lease
        self.logger = logger
        http = settings.isOn ? GuardedHTTP(
            policy: AddressPolicy(allowPrivate: settings.allowPrivate),
            configuration: PushHTTP.configuration(tls: .makeClientConfiguration()),
            timeout: .nanoseconds(Int64(settings.timeout.seconds * 1e9)),
            resolver: GuardedHTTP.systemResolver) : nil
    }

    /// Whether events of `type` are sent.
    func wants(_ type: WebhookEventType) -> Bool { settings.wants(type) }

    // MARK: The feed

    func take(_ entries: [IncomingMessage]) async {
        _ = takeAtOnce(entries)
    }

    /// The feed reads what it tells from the database: the log only wakes it, and says how far it may read.
    func takeAtOnce(_ entries: [IncomingMessage]) -> Int {
        guard settings.isOn else { return entries.count }
        if let last = entries.last?.message.seq { handedOn.withLockedValue { $0 = max($0, last) } }
        feedSignal.notify()
        return entries.count
    }

    /// An event queued outside the feed (a read, a dead device): the sender looks at once.
    func queued() {
        if settings.isOn { sendSignal.notify() }
    }

    /// A device of `userID` connected: their reminders are dropped (they are live), by the reminder loop before it
    /// fires any. Never waits.
    func connected(_ userID: String) {
        guard wants(.unreadReminder) else { return }
        connectedUsers.withLockedValue { _ = $0.insert(userID) }
        reminderSignal.notify()
    }

    /// Moves the feed's place to the log's end, telling nothing (webhooks are off); at a stop, within
    /// ``lastWriteLimit``.
    private func skipFeed(stopping: Bool = false) async {
        let skip: @Sendable () async throws -> Void = { [store] in
            let latest = try await store.latestSeq()
            _ = try await store.feedWebhooks { cursor in ([], [], max(cursor, latest)) }
        }
        do {
            if stopping { try await withinLimit(lastWriteLimit, skip) } else { try await skip() }
        } catch {
            logger.warning("webhook: the feed's place could not be moved", metadata: ["error": "\(error)"])
        }
    }

    private func feedLoop() async {
        while !Task.isCancelled {
            let caughtUp = await feedAll()
            await feedSignal.wait(timeout: caughtUp ? .seconds(60) : .seconds(1))
        }
    }

    /// Rounds until the feed reaches what the log delivered: false when a round failed or another node holds the
    /// place.
    private func feedAll() async -> Bool {
        while !Task.isCancelled {
            let target = max(log.delivered, handedOn.withLockedValue { $0 })
            do {
                let reached = NIOLockedValueBox<Int64>(0)
                guard let queued = try await store.feedWebhooks({ cursor in
                    let round = try await self.round(after: cursor, upTo: target)
                    reached.withLockedValue { $0 = round.through }
                    return round
                }) else { return false }
                if queued > 0 { sendSignal.notify() }
                if reached.withLockedValue({ $0 }) >= target { return true }
            } catch {
                if !Task.isCancelled { logger.warning("webhook: the feed failed", metadata: ["error": "\(error)"]) }
                return false
            }
        }
        return true
    }

    /// The events and reminders of the entries after `cursor`, up to `target`.
    private func round(
        after cursor: Int64, upTo target: Int64
    ) async throws -> (events: [NewWebhookEvent], reminders: [NewUnreadReminder], through: Int64) {
        guard target > cursor else { return ([], [], cursor) }
        let upper = min(target, cursor + 10_000)
        let entries = try await store.entries(after: cursor, through: upper, limit: Self.feedRound)
        let through = entries.count == Self.feedRound ? (entries.last?.message.seq ?? upper) : upper
        let events = entries.compactMap(NewWebhookEvent.entry).filter { settings.events.contains($0.type) }
        return (events, try await reminders(for: entries), through)
    }

    /// For each message (not silent, not an event), a reminder for each member it reached, but its sender, with no
    /// device connected anywhere.
    private func reminders(for entries: [IncomingMessage]) async throws -> [NewUnreadReminder] {
        guard wants(.unreadReminder), let after = settings.reminder else { return [] }
        var asks: [(entry: IncomingMessage, members: [String])] = []
        for entry in entries where entry.message.isMessage && !entry.message.silent {
            guard let seq = entry.message.seq else { continue }
            let view = try await memberships.view(of: entry.conversation.id) {
                try await store.memberView(of: entry.conversation.id)
            }
            let sender = entry.message.senderID
            let members = (view?.recipients(of: seq) ?? []).filter { $0 != sender && hub.connectedDevices(of: $0).isEmpty }
            if !members.isEmpty { asks.append((entry, members)) }
        }
        var elsewhere: [String: RemotePresence] = [:]
        if let cluster, !asks.isEmpty {
            elsewhere = try await cluster.othersPresence(of: asks.reduce(into: Set<String>()) { $0.formUnion($1.members) })
        }
        return asks.flatMap { ask in
            ask.members.filter { elsewhere[$0]?.devices.isEmpty != false }.map {
                NewUnreadReminder(
                    userID: $0, conversationID: ask.entry.conversation.id, seq: ask.entry.message.seq ?? 0,
                    due: ask.entry.message.sentAt.addingTimeInterval(after.seconds))
            }
        }
    }

    /// Drops the reminders of who connected, then fires those due, every quarter of the reminder's delay (at most
    /// 5 s), or at once when someone connects.
    private func reminderLoop() async {
        guard let after = settings.reminder else { return }
        let tick = Duration.milliseconds(Int64(min(5, max(0.1, after.seconds / 4)) * 1000))
        while !Task.isCancelled {
            let connected = connectedUsers.withLockedValue { users in
                defer { users = [] }
                return users
            }
            do {
                for (index, userID) in connected.sorted().enumerated() {
                    do {
                        try await store.cancelReminders(of: userID)
                    } catch {
                        // Kept for the next turn: what is not dropped yet must not fire.
                        connectedUsers.withLockedValue { $0.formUnion(connected.sorted().dropFirst(index)) }
                        throw error
                    }
                }
                if try await store.fireReminders(now: Date(), limit: 500) > 0 { sendSignal.notify() }
            } catch {
                if !Task.isCancelled { logger.warning("webhook: reminders failed", metadata: ["error": "\(error)"]) }
            }
            await reminderSignal.wait(timeout: tick)
        }
    }

    // MARK: Sending

    /// Feeds, reminds and sends until the server stops; with webhooks off, keeps the feed's place at the log's end.
    func run() async throws {
        guard settings.isOn, let http else {
            await skipFeed()
            try? await gracefulShutdown()
            await skipFeed(stopping: true)
            return
        }
        try await store.releaseWebhookLeases()
        await withDiscardingTaskGroup { group in
            group.addTask { await self.sendLoop(http) }
            // As the push sender: the feed and the reminders run until the graceful stop, which cancels them (the
            // feed's round in progress rolls back); the deliveries in flight are answered and recorded, and nothing
            // more starts.
            await cancelWhenGracefulShutdown {
                await withDiscardingTaskGroup { loops in
                    loops.addTask { await self.feedLoop() }
                    loops.addTask { await self.reminderLoop() }
                }
            }
            stopping.withLockedValue { $0 = true }
            sendSignal.notify()
        }
        await http.shutdown()
    }

    /// Leases what may go, delivers each in a task of its own (at most ``WebhookSettings/concurrency``), and
    /// otherwise waits for new events, a slot, the next due one, or a second (another node may have queued some).
    private func sendLoop(_ http: GuardedHTTP) async {
        let inFlight = NIOLockedValueBox(0)
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled, !stopping.withLockedValue({ $0 }) {
                let free = settings.concurrency - inFlight.withLockedValue { $0 }
                var nextDue: Date?
                if free > 0 {
                    do {
                        // As the push sender's: a lease in progress is cut by the graceful stop.
                        let leased = try await cancelWhenGracefulShutdown { [store, lease] in
                            try await store.leaseWebhooks(now: Date(), limit: free, lease: lease)
                        }
                        nextDue = leased.nextDue
                        for job in leased.jobs {
                            inFlight.withLockedValue { $0 += 1 }
                            group.addTask {
                                await self.deliver(job, with: http)
                                inFlight.withLockedValue { $0 -= 1 }
                                self.sendSignal.notify()
                            }
                        }
                        if !leased.jobs.isEmpty { continue }
                    } catch {
                        if !Task.isCancelled, !Task.isShuttingDownGracefully {
                            logger.warning("webhook: outbox unreadable", metadata: ["error": "\(error)"])
                        }
                    }
                }
                let wait = nextDue.map { max(0.001, min(1, $0.timeIntervalSinceNow)) } ?? 1
                await sendSignal.wait(timeout: .milliseconds(Int64(wait * 1000)))
            }
        }
    }

    /// The body of `job`'s delivery: the envelope around its stored data.
    static func body(of job: WebhookJob) -> Data {
        let time = job.time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let conversation = job.conversationID.map { WireJSONString.quoted($0) } ?? "null"
        let text = #"{"conversationId":\#(conversation),"data":\#(job.data),"id":"\#(job.id)","seq":\#(job.seq),"time":"\#(time)","type":\#(WireJSONString.quoted(job.type))}"#
        return Data(text.utf8)
    }

    private func deliver(_ job: WebhookJob, with http: GuardedHTTP) async {
        guard let url = settings.url.flatMap(URL.init(string:)) else { return }
        let metadata: Logger.Metadata = ["event": "\(job.id)", "type": "\(job.type)", "seq": "\(job.seq)"]
        let body = Self.body(of: job)
        let headers = [
            ("Content-Type", "application/json"), ("User-Agent", "Herald/\(HeraldVersion.current)"),
            (WebhookSignature.header, WebhookSignature.sign(body: body, secret: settings.secret)),
            ("Herald-Event-Id", "\(job.id)"), ("Herald-Event-Type", job.type),
        ]
        let failure: String
        var retryAfter: Duration?
        do {
            let answer = try await http.send(.POST, url, headers: headers, body: body)
            if (200..<300).contains(answer.status.code) {
                do {
                    try await store.finishWebhook(id: job.id)
                    HeraldMetrics.webhook(outcome: "delivered")
                } catch {
                    // Delivered, not recorded: it goes again (deliveries are at least once).
                    logger.debug("webhook delivered, not recorded", metadata: metadata.merging(["error": "\(error)"]) { $1 })
                }
                return
            }
            failure = "HTTP \(answer.status.code)"
            retryAfter = answer.retryAfter
        } catch {
            failure = "\(error)"
        }
        let deadline = job.time.addingTimeInterval(settings.maxAge.seconds)
        let exponent = Double(min(job.attempts, 20))
        var wait = min(settings.retryBase.seconds * pow(2, exponent), settings.maxRetryWait.seconds)
        wait *= Double.random(in: 0.8...1.2)
        if let retryAfter { wait = max(wait, min(retryAfter.seconds, settings.maxRetryWait.seconds)) }
        let due = Date().addingTimeInterval(wait)
        do {
            if due > deadline {
                try await store.finishWebhook(id: job.id)
                HeraldMetrics.webhook(outcome: "dropped")
                logger.error(
                    "webhook given up after \(job.attempts + 1) tries: \(ControlCharacters.escaped(failure))", metadata: metadata)
            } else {
                try await store.retryWebhook(id: job.id, at: due)
                HeraldMetrics.webhook(outcome: "retried")
                logger.info(
                    "webhook will be retried in \(String(format: "%.1f", wait)) s: \(ControlCharacters.escaped(failure))",
                    metadata: metadata)
            }
        } catch {
            logger.debug("webhook outcome not recorded", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
    }
}

/// JSON string literals, for an envelope written around data already JSON.
enum WireJSONString {
    /// `text` as a JSON string, quotes included.
    static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data(#""""#.utf8), as: UTF8.self)
    }
}
