import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import HeraldWebhookSignature
import Logging
import NIOConcurrencyHelpers
import NIOHTTP1
import NIOSSL
import ServiceLifecycle

/// Webhooks to the app's backend (docs/integrate.md): the feed that turns the log's entries into events, the sender
/// that delivers them, signed, in order per conversation, at least once, and the reminders of unread messages.
///
/// The feed is a ``DurableConsumer`` of the ``EventLog``: its place in the log is written in the transaction that
/// queues its events, so each entry is told once, across a crash. Its ``LeasedSender`` leases events from the
/// outbox (``WebhookOutbox``): for each conversation only the first waiting, so a conversation's events arrive
/// one after the other, each once the one before was answered 2xx; a failure is tried again with back-off (and
/// `Retry-After`), the events behind it waiting, for ``WebhookSettings/maxAge``. With several nodes, each leases
/// what no other holds. Reads and dead devices queue their events themselves; the reminders' loop turns those due
/// into events.
final class WebhookDispatcher: Service, Sendable {
    let store: any WebhookOutbox & ConversationStore & EntryStore & ConsumerPlaces
    let settings: WebhookSettings
    private let lease: Duration
    private let logger: Logger
    private let http: GuardedHTTP?
    /// The log's consumer that turns entries into events and reminders: the application adds it to the log.
    let feed: DurableConsumer
    /// The sender, while it runs.
    private let sender = NIOLockedValueBox<LeasedSender<WebhookJob>?>(nil)
    private let reminderSignal = WakeSignal()
    /// Users a device of whom connected since the reminder loop last looked: their reminders are dropped first.
    /// Each with how far the log was when they connected: their reminders are dropped again once the feed decided
    /// that far (a round that was deciding when they connected may write one after the first drop).
    private let connectedUsers = NIOLockedValueBox<[String: Int64]>([:])

    init(
        store: any WebhookOutbox & ConversationStore & EntryStore & ConsumerPlaces, log: EventLog, hub: Hub, memberships: Memberships, cluster: any ClusterPresence,
        settings: WebhookSettings, lease: Duration, logger: Logger
    ) {
        self.store = store
        self.settings = settings
        self.lease = lease
        self.logger = logger
        http = settings.isOn ? GuardedHTTP(
            policy: AddressPolicy(allowPrivate: settings.allowPrivate),
            configuration: PushHTTP.configuration(tls: .makeClientConfiguration()),
            timeout: .nanoseconds(Int64(settings.timeout.seconds * 1e9)),
            resolver: GuardedHTTP.systemResolver) : nil
        let reminders = Reminders(
            reach: Reach(store: store, memberships: memberships, hub: hub, cluster: cluster), settings: settings)
        let sender = sender
        feed = DurableConsumer(
            .webhook, store: store, after: log.delivered, isOn: settings.isOn, interval: .milliseconds(20),
            // Every round writes its place: events queued beside the feed (a read, a removed device) are sent once
            // the place reaches them.
            unwrittenEntries: 0, logger: logger,
            decide: { entries in
                ConsumerOutput(
                    webhookEvents: entries.compactMap(NewWebhookEvent.entry).filter { settings.events.contains($0.type) },
                    reminders: try await reminders.due(for: entries))
            },
            wrote: { [reminderSignal, connectedUsers] _ in
                sender.withLockedValue { $0 }?.wake()
                // A round may have written reminders of who connected while it decided.
                if !connectedUsers.withLockedValue(\.isEmpty) { reminderSignal.notify() }
            })
    }

    /// Whether events of `type` are sent.
    func wants(_ type: WebhookEventType) -> Bool { settings.wants(type) }

    /// An event queued outside the feed (a read, a dead device): the sender looks at once.
    func queued() {
        sender.withLockedValue { $0 }?.wake()
    }

    /// A device of `userID` connected, when the log was at `latest` (or further): their reminders are dropped
    /// (they are live) by the reminder loop before it fires any, and again once the feed decided that far. Never
    /// waits.
    func connected(_ userID: String, latest: Int64) {
        guard wants(.unreadReminder) else { return }
        let through = max(latest, feed.taken)
        connectedUsers.withLockedValue { $0[userID] = max($0[userID] ?? 0, through) }
        reminderSignal.notify()
    }

    /// Drops the reminders of who connected, then fires those due, every quarter of the reminder's delay (at most
    /// 5 s), or at once when someone connects.
    private func reminderLoop() async {
        guard let after = settings.reminder else { return }
        let tick = Duration.milliseconds(Int64(min(5, max(0.1, after.seconds / 4)) * 1000))
        while !Task.isCancelled {
            let connected = connectedUsers.withLockedValue { users in
                defer { users = [:] }
                return users
            }
            do {
                var left = connected
                for (userID, through) in connected.sorted(by: { $0.key < $1.key }) {
                    // What is not dropped yet must not fire: kept for the next turn if this fails.
                    try await store.cancelReminders(of: userID)
                    // Dropped again next turn while the feed may still write one: it has not decided as far as the
                    // log was when they connected (nor, when the log has not handed that far, what it handed).
                    if feed.decidedThrough.withLockedValue({ $0 }) >= min(through, feed.taken) { left[userID] = nil }
                }
                if !left.isEmpty { connectedUsers.withLockedValue { $0.merge(left, uniquingKeysWith: max) } }
                if try await store.fireReminders(now: Date(), limit: 500) > 0 { sender.withLockedValue { $0 }?.wake() }
            } catch {
                connectedUsers.withLockedValue { $0.merge(connected, uniquingKeysWith: max) }
                if !Task.isCancelled { logger.warning("webhook: reminders failed", metadata: ["error": "\(error)"]) }
            }
            await reminderSignal.wait(timeout: tick)
        }
    }

    // MARK: Sending

    /// Feeds, reminds and sends until the server stops; with webhooks off, keeps the feed's place at the log's end.
    func run() async throws {
        guard settings.isOn, let http else {
            await feed.skipToEnd()
            try? await gracefulShutdown()
            await feed.skipToEnd(stopping: true)
            return
        }
        try await store.releaseWebhookLeases()
        let sender = LeasedSender<WebhookJob>(
            "webhook", concurrency: settings.concurrency, idle: .seconds(1), logger: logger,
            lease: { [store, lease] limit in try await store.leaseWebhooks(now: Date(), limit: limit, lease: lease) },
            send: { job, answered in await self.deliver(job, with: http, answered: answered) },
            release: { [store] jobs in try await store.releaseWebhooks(ids: jobs.map(\.id), now: Date()) })
        self.sender.withLockedValue { $0 = sender }
        await withDiscardingTaskGroup { group in
            group.addTask { await sender.run() }
            // As the push sender: the feed and the reminders run until the graceful stop, which cancels them (the
            // feed's round in progress rolls back); the deliveries in flight are answered and recorded, and nothing
            // more starts.
            await cancelWhenGracefulShutdown {
                await withDiscardingTaskGroup { loops in
                    loops.addTask { await self.feed.run() }
                    loops.addTask { await self.reminderLoop() }
                }
            }
            sender.stop()
        }
        await http.shutdown()
    }

    /// The body of `job`'s delivery: the envelope around its stored data.
    static func body(of job: WebhookJob) -> Data {
        let time = job.time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let conversation = job.conversationID.map { WireJSONString.quoted($0) } ?? "null"
        let text = #"{"conversationId":\#(conversation),"data":\#(job.data),"id":"\#(job.id)","seq":\#(job.seq),"time":"\#(time)","type":\#(WireJSONString.quoted(job.type))}"#
        return Data(text.utf8)
    }

    private func deliver(_ job: WebhookJob, with http: GuardedHTTP, answered: @Sendable () -> Void) async {
        defer { answered() }
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
            answered()
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
        answered()
        let wait = Backoff(base: settings.retryBase, longest: settings.maxRetryWait)
            .wait(attempts: job.attempts, retryAfter: retryAfter)
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
