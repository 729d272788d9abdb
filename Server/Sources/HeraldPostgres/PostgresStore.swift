import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import Logging
import NIOConcurrencyHelpers
import NIOSSL
import PostgresNIO
import ServiceLifecycle

/// The store for several nodes: PostgreSQL through postgres-nio's connection pool (`PostgresClient`), migrated at
/// start.
///
/// Sequence numbers come from one counter row (`message_seq`) that every entry's transaction updates (a post group,
/// a change to a group): a second one, on any node, waits for the first to commit before it gets its number, so
/// entries commit in `seq` order and a reader never sees seq 6 before seq 5 (a PostgreSQL sequence would hand out
/// numbers that can commit out of order). Posts arriving together on one node share one transaction, as with SQLite
/// (group commit), which is what keeps the counter from being a queue of single commits under load. Each commit
/// notifies `herald_entries` with its last seq; every node's ``EventLog`` reads what it did not commit itself.
///
/// Its concerns are in files of their own, as SQLite's: `+Users`, `+Conversations`, `+Entries`, `+ReadState`,
/// `+Devices`, `+Push`.
public final class PostgresStore: Store, Service {
    /// The pool.
    package let client: PostgresClient
    /// The pool with every wait bounded: what requests use.
    package let database: BoundedPostgres
    /// The pool's own task: it runs from ``connect(url:leaseDuration:retryFor:logger:)`` until the store's service
    /// stops (after the HTTP server, so the pool closes last).
    private let pool: Task<Void, Never>
    /// Told when the pool's task ends.
    private let poolEnded: WakeSignal
    package let logger: Logger
    /// Posts waiting for the next group commit.
    package let posts = GroupCommitQueue()
    /// How long a node keeps a leased push job before another may take it over.
    package let leaseDuration: TimeInterval
    /// Where committed entries go, this node's and (notified) the others': the node's log, once attached.
    package let commits = CommitTarget()
    /// The wall clock entries are stamped with.
    public let clock: WallClock
    /// Whether the delivery trail is kept.
    public let trailSwitch = TrailSwitch()
    /// This node's connections as the other nodes see them, and theirs.
    package let presence: PostgresPresence

    private init(
        client: PostgresClient, leaseDuration: TimeInterval, presenceExpiry: Duration, wallClock: WallClock,
        queryLimit: Duration, logger: Logger
    ) {
        self.clock = wallClock
        self.client = client
        let database = BoundedPostgres(client: client, limit: queryLimit)
        self.database = database
        // One of the server's few unstructured tasks: the pool (and the uses of it, its children) must run from the
        // connection on, before the service group starts (the migrations, and the demo's seed, use it), and until
        // the store's service stops, after the HTTP server and every consumer (``close()`` cancels it and waits for
        // its end).
        let ended = WakeSignal()
        poolEnded = ended
        self.pool = Task {
            await database.runPool()
            ended.notify()
        }
        self.leaseDuration = leaseDuration
        self.logger = logger
        self.presence = PostgresPresence(database: database, expiry: presenceExpiry, logger: logger)
    }

    /// Connects to the database `url` names (`postgres://user:password@host:port/database?sslmode=…`) and migrates
    /// it. A database that cannot be reached is tried again with back-off (1 s doubling to 30 s), each failure
    /// logged, for up to `retryFor`; then the last error is thrown. `leaseDuration`: how long a leased push job is
    /// this node's; `presenceExpiry`: how long after its last heartbeat a node's connections still count;
    /// `queryLimit`: how long one use of the database may take before the request is answered
    /// `database_unavailable`. Without `asNode` (a reader beside the servers, `herald explain`) nothing is migrated
    /// and no node joins: a schema older than this build's is refused.
    public static func connect(
        url: String, leaseDuration: TimeInterval = 120, presenceExpiry: Duration = .seconds(30),
        retryFor: Duration = .seconds(600), clock: WallClock = WallClock(), queryLimit: Duration = .seconds(5),
        asNode: Bool = true, logger: Logger
    ) async throws -> PostgresStore {
        let configuration = try configuration(url)
        // The pool's own notes (each connection it could not make) only from warnings up: the store says what matters.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .warning)
        let store = PostgresStore(
            client: PostgresClient(configuration: configuration, backgroundLogger: poolLogger),
            leaseDuration: leaseDuration, presenceExpiry: presenceExpiry, wallClock: clock, queryLimit: queryLimit,
            logger: logger)
        let waits = ContinuousClock()
        let deadline = waits.now.advanced(by: retryFor)
        var wait = Duration.seconds(1)
        while true {
            do {
                // The pool waits for a connection as long as it is asked to, so each try is bounded: a first
                // answer within 5 s (the database is there), then the set-up within 60 s (migrations on a busy
                // server can take longer than the first answer should).
                try await store.database.within(.seconds(5)).query("SELECT 1", logger: logger)
                if asNode {
                    try await store.database.within(.seconds(60)).run {
                        try await PostgresMigrations.migrate(store.client, logger: logger)
                        try await store.presence.join()
                    }
                } else {
                    // A reader (`herald explain`): not a node, and the schema as the servers left it.
                    let rows = try await store.database.within(.seconds(5)).query(
                        "SELECT version FROM herald_schema", logger: logger)
                    let version = try rows.first.map { try $0.decode(Int.self) } ?? 0
                    guard version >= PostgresMigrations.steps.count else {
                        await store.close()
                        throw StorageError(
                            "the database at \(Self.redacted(url)) has schema \(version), older than this herald's "
                                + "\(PostgresMigrations.steps.count): start a server of this version on it first")
                    }
                }
                return store
            } catch let error as StorageError {
                throw error
            } catch {
                let reason = describe(error)
                guard waits.now.advanced(by: wait) < deadline, !Task.isCancelled else {
                    await store.close()
                    throw StorageError("cannot use the PostgreSQL database at \(Self.redacted(url)): \(reason)")
                }
                logger.warning("the database cannot be reached; trying again", metadata: [
                    "database": "\(Self.redacted(url))", "error": "\(reason)", "retry_in": "\(wait)"])
                try? await Task.sleep(for: wait)
                wait = min(wait * 2, .seconds(30))
            }
        }
    }

    /// The URL without its password, for logs and errors: the one in `user:password@` (which may hold `#`, `/`, `?`
    /// or `@` unencoded, as generated passwords do, so it runs to the last `@`) and a `password=` parameter. Read as
    /// text, not as a URL, since such a password makes it no valid URL.
    public static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.range(of: "://"), let at = text.range(of: "@", options: .backwards),
           at.lowerBound > scheme.upperBound, let colon = text[scheme.upperBound..<at.lowerBound].firstIndex(of: ":") {
            text.replaceSubrange(text.index(after: colon)..<at.lowerBound, with: "***")
        }
        return text.replacing(#/([?&]password=)[^&]*/#.ignoresCase()) { "\($0.output.1)***" }
    }

    /// What went wrong, in PostgreSQL's words where it said any.
    package static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            return "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
        }
        return String(describing: error)
    }

    /// Waits (at most `limit`) until every other live node has taken erasure `seq`. A node that does not answer
    /// (stopped, cut off) counts no more after its heartbeat expires; the database refuses what it would write
    /// for the erased user meanwhile.
    package func awaitErasure(_ seq: Int64, within limit: Duration = .seconds(5)) async {
        let expiry = Double(presence.expiry.components.seconds) + Double(presence.expiry.components.attoseconds) / 1e18
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline, !Task.isCancelled {
            let behind = try? await database.query(
                """
                SELECT count(*) FROM nodes WHERE id <> \(presence.nodeID) AND erasures_through < \(seq)
                  AND seen_at > now() - make_interval(secs => \(expiry))
                """, logger: logger).first.map { try $0.decode(Int64.self) }
            if behind == 0 { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
        logger.warning("an erasure was not acknowledged by every node in time", metadata: ["erasure": "\(seq)"])
    }

    /// Keeps the pool until the graceful shutdown, then closes it: listed before the HTTP server's users of it (and
    /// the cluster's), the store stops after them.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    public func attach(_ sink: any CommitSink) {
        commits.attach(sink)
    }

    /// Closes the pool, and waits (up to 3 s) for its connections to close. A stop cut short (this task cancelled)
    /// does not wait: the process ends, and its connections with it, before the service group's cancellation
    /// limit would end it with a crash.
    package func close() async {
        pool.cancel()
        await poolEnded.wait(timeout: .seconds(3))
    }

    /// Reachable when `SELECT 1` answers within `timeout`. A full disk on the database server is not seen here
    /// (its writes answer `storage_full`); watching the database server's disk is its operator's part.
    public func health(within timeout: Duration) async -> StoreHealth {
        let reachable = try? await database.within(timeout).query("SELECT 1", logger: logger)
        return reachable == nil ? .unreachable : .ok
    }

    /// The pool's settings from a `postgres://` (or `postgresql://`) URL. `sslmode=disable` turns TLS off,
    /// `require` (or `verify-full`) requires it; otherwise it is used when the server offers it.
    package static func configuration(_ url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
              let host = components.host, !host.isEmpty
        else {
            throw StorageError("the PostgreSQL URL must look like postgres://user:password@host:5432/database")
        }
        let mode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        default: throw StorageError("sslmode=\(mode) is not one of disable, prefer, require, verify-full")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.maximumConnections = 20
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// Runs `body` in a transaction; an error it throws comes out as itself (a ``StoreError`` stays one).
    package func transaction<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await transaction(on: database, body)
    }

    /// Runs `body` in a transaction that leases jobs for `lease` seconds (an outbox's), so that a slow database
    /// delays a lease and never leaves its jobs held by nobody:
    /// - it may take half the lease (at least the query limit), since its caller is a sender's loop, not a request;
    /// - it commits only while its caller still waits. A caller answered at the bound, or cut by the stop, leaves the
    ///   transaction going on in the pool's task (``BoundedPostgres``), which cancels it: committed then, its jobs
    ///   would wait out their lease unsent. It rolls back instead (unless the cut comes during the commit itself).
    package func leasing<Result: Sendable>(
        for lease: TimeInterval, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await transaction(on: database.within(max(database.limit, .seconds(lease / 2)))) { connection in
            let result = try await body(connection)
            try Task.checkCancellation()
            return result
        }
    }

    private func transaction<Result: Sendable>(
        on database: BoundedPostgres, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await database.withTransaction(logger: logger, body)
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error.commitError ?? error.beginError ?? error
        }
    }

    /// Runs `body` in a transaction that appends entries: it holds the sequence's counter (so every other node's
    /// entries wait), gets the last seq, and returns its entries (numbered from the next one) and a result. The
    /// counter moves past them, the log is told before the commit which seqs are being committed, and the other nodes
    /// are notified at the commit; the caller resumes once the entries were handed on.
    package func appending<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection, Int64) async throws -> (entries: [IncomingMessage], result: T)
    ) async throws -> T {
        let (outcome, reserved) = try await commits.appending { reservation in
            try await transaction { connection in
                let counter = try await connection.query(
                    "SELECT seq FROM message_seq WHERE id = 1 FOR UPDATE", logger: self.logger).collect()
                let last = try counter.first.map { try $0.decode(Int64.self) } ?? 0
                let outcome = try await body(connection, last)
                let seqs = outcome.entries.compactMap(\.message.seq)
                if let first = seqs.min(), let end = seqs.max() {
                    try await connection.query("UPDATE message_seq SET seq = \(end) WHERE id = 1", logger: self.logger)
                    // Delivered at commit, to every node listening (the payload is the last seq, never the entry).
                    try await connection.query("SELECT pg_notify('herald_entries', \(String(end)))", logger: self.logger)
                    try reservation.reserve(first...end)
                }
                return outcome
            }
        }
        guard let seqs = reserved else { return outcome.result }
        // Resumed once the log delivered `seqs`: it holds them back only behind a reservation still open (which ends
        // with its bounded transaction, see ``CommitSink/appending(_:)``) or a read of the database (tried again
        // until it answers); see ``GroupCommitQueue/add(_:schedule:)``.
        await withCheckedContinuation { continuation in
            commits.committed(seqs, entries: outcome.entries, waiters: [(seqs.upperBound, { @Sendable in continuation.resume() })])
        }
        return outcome.result
    }
}

/// An erasure as the nodes tell it on `herald_entries`: `erased:<seq>:<user id>` (a seq alone is a commit).
package struct Erasure: Hashable, Sendable {
    package var seq: Int64
    package var userID: String

    package var payload: String { "erased:\(seq):\(userID)" }

    package init(seq: Int64, userID: String) {
        self.seq = seq
        self.userID = userID
    }

    package init?(payload: String) {
        let parts = payload.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "erased", let seq = Int64(parts[1]) else { return nil }
        self.init(seq: seq, userID: String(parts[2]))
    }
}

