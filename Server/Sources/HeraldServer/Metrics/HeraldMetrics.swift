import HeraldPostgres
import Metrics
import Prometheus

/// What a node counts, through swift-metrics, and what `GET /metrics` shows of it in the Prometheus text format
/// (swift-prometheus). `herald serve` calls ``bootstrap()`` first thing; a process that does not (the in-process test
/// servers, the benchmarks) counts into swift-metrics' no-op backend.
///
/// The metrics are made on first use, so after the bootstrap.
public enum HeraldMetrics {
    /// The registry `GET /metrics` shows.
    public static let registry = PrometheusCollectorRegistry()

    /// Makes ``registry`` the process's metrics backend (once per process: swift-metrics allows one bootstrap).
    public static func bootstrap() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // Post to publish is well under a millisecond to a few, not the default's 5 ms to 10 s.
        factory.durationHistogramBuckets[Label.postToPublish] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1),
        ]
        factory.valueHistogramBuckets[Label.catchUp] = [0, 1, 10, 100, 1_000, 10_000, 100_000]
        MetricsSystem.bootstrap(factory)
        // Made now, so that a scrape shows each at zero before it first moves.
        _ = (connectionsOpen, requestsInFlight, messagesPosted, deliveries, postToPublish, catchUp, slowReadersDropped,
             streamsClosedForFlooding, outboxDepth, presenceWritesWaiting, rateLimited, databaseErrors, confirmations,
             pushesUnconfirmed, heapBytes)
    }

    enum Label {
        static let postToPublish = "herald_post_to_publish_seconds"
        static let catchUp = "herald_catch_up_messages"
    }

    /// Stream connections open now.
    static let connectionsOpen = Meter(label: "herald_connections_open")
    /// HTTP requests the router is answering now (this scrape included): what a graceful stop waits for.
    static let requestsInFlight = Meter(label: "herald_http_requests_in_flight")
    /// Messages stored (new ones; a repeated id is not counted again).
    static let messagesPosted = Counter(label: "herald_messages_posted_total")
    /// Message frames handed to live connections (one a message and connection).
    static let deliveries = Counter(label: "herald_deliveries_total")
    /// From a post's arrival to its message handed to the connections.
    static let postToPublish = Timer(label: Label.postToPublish)
    /// How many messages a stream's catch-up sent.
    static let catchUp = Recorder(label: Label.catchUp, aggregate: true)
    /// Streams closed because their reader fell too far behind.
    static let slowReadersDropped = Counter(label: "herald_slow_readers_dropped_total")
    /// Streams closed because they kept sending past their frame budget.
    static let streamsClosedForFlooding = Counter(label: "herald_streams_closed_for_flooding_total")
    /// Bytes the allocator has handed out and not taken back (read when `/metrics` is asked; glibc's `mallinfo2`):
    /// what the node's data holds, without the pages the allocator keeps for reuse that resident memory counts.
    static let heapBytes = Gauge(label: "herald_heap_bytes_in_use")
    /// Push jobs waiting or being sent (read when `/metrics` is asked).
    static let outboxDepth = Gauge(label: "herald_push_outbox_depth")
    /// With PostgreSQL, connections whose presence waits to be written (after each write): at most the node's
    /// connections, however fast their frames come.
    static var presenceWritesWaiting: Metrics.Gauge { PostgresPresence.writesWaiting }
    /// Requests and frames refused by a per-user limit.
    static let rateLimited = Counter(label: "herald_rate_limited_total")
    /// Requests that failed because the database did not answer, and failed background reads and writes.
    static let databaseErrors = Counter(label: "herald_database_errors_total")

    /// `received` frames taken: devices confirming how far they took messages in (docs/behaviour.md, rule 8).
    static let confirmations = Counter(label: "herald_confirmations_total")
    /// Pushes sent because no device that would have held them back confirmed the message in time: a frozen app,
    /// a vanished network, a client too old to confirm.
    static let pushesUnconfirmed = Counter(label: "herald_push_unconfirmed_total")

    /// A webhook delivery's end: `outcome` is `delivered`, `retried` or `dropped`.
    static func webhook(outcome: String) {
        Counter(label: "herald_webhooks_total", dimensions: [("outcome", outcome)]).increment()
    }

    /// A push job's end: `outcome` is `sent`, `logged` (`--demo` without the service's credentials), `retried`,
    /// `device_removed`, `dropped` or `redirected`.
    static func pushJob(provider: String, outcome: String) {
        Counter(label: "herald_push_jobs_total", dimensions: [("provider", provider), ("outcome", outcome)]).increment()
    }
}
