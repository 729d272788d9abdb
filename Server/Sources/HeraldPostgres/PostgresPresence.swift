import Foundation
import HeraldRecords
import Logging
import Metrics
import NIOConcurrencyHelpers
import PostgresNIO

/// Presence across nodes on PostgreSQL: each node writes its connections' presence (`presence`, one row a
/// connection) and beats its heart (`nodes.seen_at`) every third of the expiry; a node whose heart has not beaten for
/// the expiry (default 30 s) no longer counts, and its rows are removed after ten times that. Times are the
/// database's (`now()`), so the nodes' clocks need not agree.
///
/// Changes are coalesced (``PresenceWrites``): the writer writes the latest state of every connection that changed
/// since its last write, in one statement, so a flood of frames from one connection is at most one row a write and
/// never delays anyone else's presence.
package final class PostgresPresence: ClusterPresence {
    /// This node's id, new at every start.
    package let nodeID = UUID().uuidString.lowercased()
    /// Every use bounded, as the store's: a node whose database went away keeps trying, cheaply.
    private let database: BoundedPostgres
    private let logger: Logger
    /// How long a node counts after its last heartbeat.
    package let expiry: Duration
    private let writes = NIOLockedValueBox(PresenceWrites())
    /// Wakes the writer; holds at most one wake-up, however many changes come.
    private let wake = WakeSignal()

    /// Connections whose presence waits for the next write (`herald_presence_writes_waiting` in `/metrics`).
    package static let writesWaiting = Gauge(label: "herald_presence_writes_waiting")

    /// The most connections one write carries.
    package static let batchLimit = 2_000

    package init(database: BoundedPostgres, expiry: Duration, logger: Logger) {
        self.database = database
        self.expiry = expiry
        self.logger = logger
    }

    private var expirySeconds: Double {
        Double(expiry.components.seconds) + Double(expiry.components.attoseconds) / 1e18
    }

    /// Takes a change of this node's presence; the writer writes the latest state. Never waits.
    package func record(_ change: PresenceChange) {
        let row = change.presence.map {
            PresenceWrites.Row(userID: change.userID, device: $0.device, foreground: $0.appState == .foreground)
        }
        if writes.withLockedValue({ $0.record(connection: change.connection, row: row) }) {
            wake.notify()
        }
    }

    /// How many connections wait for their presence to be written (for tests).
    package var waitingWrites: Int { writes.withLockedValue { $0.waiting } }

    /// Adds this node (at start).
    package func join() async throws {
        // A new node holds no one's claims yet: every erasure so far is taken.
        try await database.query(
            """
            INSERT INTO nodes (id, seen_at, erasures_through) VALUES (\(nodeID), now(), (SELECT coalesce(max(seq), 0) FROM erasures))
            """, logger: logger)
    }

    /// Writes the changes and beats the heart until cancelled.
    package func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.beat() }
            group.addTask { await self.write() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Removes this node and its connections (at a graceful stop, once ``run()`` ended), waiting at most `limit`
    /// for the database: a node that cannot reach it leaves them to expire.
    package func leave(within limit: Duration) async {
        do {
            try await database.within(limit).query("DELETE FROM nodes WHERE id = \(nodeID)", logger: logger)
        } catch {
            logger.warning("this node's presence could not be removed; it expires by itself",
                           metadata: ["error": "\(PostgresStore.describe(error))"])
        }
    }

    private func beat() async {
        while !Task.isCancelled {
            do {
                try await database.query(
                    """
                    INSERT INTO nodes (id, seen_at) VALUES (\(nodeID), now()) ON CONFLICT (id) DO UPDATE SET seen_at = now()
                    """, logger: logger)
                try await database.query(
                    "DELETE FROM nodes WHERE seen_at < now() - make_interval(secs => \(expirySeconds * 10))", logger: logger)
            } catch {
                logger.warning("this node's heartbeat could not be written", metadata: ["error": "\(PostgresStore.describe(error))"])
            }
            try? await Task.sleep(for: expiry / 3)
        }
    }

    private func write() async {
        while !Task.isCancelled {
            await wake.wait(timeout: .seconds(60))
            while !Task.isCancelled, let batch = writes.withLockedValue({ $0.nextBatch(limit: Self.batchLimit) }) {
                let succeeded: Bool
                do {
                    try await write(batch)
                    succeeded = true
                } catch {
                    succeeded = false
                    logger.warning("connections' presence could not be written; trying again", metadata: [
                        "connections": "\(batch.upserts.count + batch.deletes.count)",
                        "error": "\(PostgresStore.describe(error))"])
                }
                let waiting = writes.withLockedValue { writes in
                    writes.batchWritten(succeeded)
                    return writes.waiting
                }
                PostgresPresence.writesWaiting.record(waiting)
                if !succeeded { try? await Task.sleep(for: .seconds(1)) }
            }
        }
    }

    private struct PresenceRow: Encodable {
        var connection: Int
        var user_id: String
        var device_id: String?
        var foreground: Bool
    }

    /// One batch: the rows that went, then the rows that are new or changed, each one statement.
    private func write(_ batch: PresenceWrites.Batch) async throws {
        if !batch.deletes.isEmpty {
            try await database.query(
                "DELETE FROM presence WHERE node_id = \(nodeID) AND connection = ANY(\(batch.deletes.sorted())::integer[])",
                logger: logger)
        }
        guard !batch.upserts.isEmpty else { return }
        let rows = batch.upserts.sorted { $0.key < $1.key }.map { connection, row in
            PresenceRow(connection: connection, user_id: row.userID, device_id: row.device, foreground: row.foreground)
        }
        let json = String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
        try await database.query(
            """
            INSERT INTO presence (node_id, connection, user_id, device_id, foreground)
            SELECT \(nodeID), connection, user_id, device_id, foreground
            FROM jsonb_to_recordset(\(json)::jsonb) AS p(connection integer, user_id text, device_id text, foreground boolean)
            ON CONFLICT (node_id, connection) DO UPDATE
                SET user_id = excluded.user_id, device_id = excluded.device_id, foreground = excluded.foreground
            """, logger: logger)
    }

    package func othersPresence(of users: Set<String>) async throws -> [String: RemotePresence] {
        guard !users.isEmpty else { return [:] }
        let rows = try await database.query(
            """
            SELECT p.user_id, bool_or(p.foreground),
                   coalesce(array_agg(p.device_id) FILTER (WHERE p.device_id IS NOT NULL), '{}')
            FROM presence p JOIN nodes n ON n.id = p.node_id
            WHERE p.node_id <> \(nodeID) AND p.user_id = ANY(\(Array(users))::text[])
              AND n.seen_at > now() - make_interval(secs => \(expirySeconds))
            GROUP BY p.user_id
            """, logger: logger)
        var presence: [String: RemotePresence] = [:]
        for row in rows {
            let (userID, foreground, devices) = try row.decode((String, Bool, [String]).self)
            presence[userID] = RemotePresence(foreground: foreground, devices: Set(devices))
        }
        return presence
    }
}
