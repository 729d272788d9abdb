import Foundation
import Logging
import PostgresNIO

/// What the push decision knows of one user's connections on the other nodes.
public struct RemotePresence: Hashable, Sendable {
    /// Whether any of them is in the foreground.
    public var foreground: Bool
    /// The devices they said they are (the stream's `device`).
    public var devices: Set<String>
}

/// The connections of the other nodes, for the push decision (docs/behaviour.md, "Who gets told"): a member in the foreground on
/// node A gets no push for a message posted on node B.
public protocol ClusterPresence: Sendable {
    /// For each of `users` with a connection on another live node, what those connections say.
    func othersPresence(of users: Set<String>) async throws -> [String: RemotePresence]
}

/// Presence across nodes on PostgreSQL: each node writes its connections' presence (`presence`, one row a
/// connection) as it changes, and beats its heart (`nodes.seen_at`) every third of the expiry; a node whose heart
/// has not beaten for the expiry (default 30 s) no longer counts, and its rows are removed after ten times that.
/// Times are the database's (`now()`), so the nodes' clocks need not agree.
final class PostgresPresence: ClusterPresence {
    /// This node's id, new at every start.
    let nodeID = UUID().uuidString.lowercased()
    private let client: PostgresClient
    private let logger: Logger
    /// How long a node counts after its last heartbeat.
    let expiry: Duration
    private let changes: AsyncStream<PresenceChange>
    private let input: AsyncStream<PresenceChange>.Continuation

    init(client: PostgresClient, expiry: Duration, logger: Logger) {
        self.client = client
        self.expiry = expiry
        self.logger = logger
        (changes, input) = AsyncStream.makeStream(of: PresenceChange.self)
    }

    private var expirySeconds: Double {
        Double(expiry.components.seconds) + Double(expiry.components.attoseconds) / 1e18
    }

    /// Takes a change of this node's presence, to be written in order. Never waits.
    func record(_ change: PresenceChange) {
        input.yield(change)
    }

    /// Adds this node (at start).
    func join() async throws {
        try await client.query("INSERT INTO nodes (id, seen_at) VALUES (\(nodeID), now())", logger: logger)
    }

    /// Writes the changes and beats the heart until cancelled; then removes this node and its connections.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.beat() }
            group.addTask { await self.write() }
            await group.next()
            group.cancelAll()
        }
        input.finish()
        do {
            try await client.query("DELETE FROM nodes WHERE id = \(nodeID)", logger: logger)
        } catch {
            logger.warning("this node's presence could not be removed; it expires by itself",
                           metadata: ["error": "\(PostgresStore.describe(error))"])
        }
    }

    private func beat() async {
        while !Task.isCancelled {
            do {
                try await client.query(
                    """
                    INSERT INTO nodes (id, seen_at) VALUES (\(nodeID), now()) ON CONFLICT (id) DO UPDATE SET seen_at = now()
                    """, logger: logger)
                try await client.query(
                    "DELETE FROM nodes WHERE seen_at < now() - make_interval(secs => \(expirySeconds * 10))", logger: logger)
            } catch {
                logger.warning("this node's heartbeat could not be written", metadata: ["error": "\(PostgresStore.describe(error))"])
            }
            try? await Task.sleep(for: expiry / 3)
        }
    }

    private func write() async {
        for await change in changes {
            if Task.isCancelled { return }
            do {
                if let presence = change.presence {
                    try await client.query(
                        """
                        INSERT INTO presence (node_id, connection, user_id, device_id, foreground)
                        VALUES (\(nodeID), \(change.connection), \(change.userID), \(presence.device), \(presence.appState == .foreground))
                        ON CONFLICT (node_id, connection) DO UPDATE SET device_id = excluded.device_id, foreground = excluded.foreground
                        """, logger: logger)
                } else {
                    try await client.query(
                        "DELETE FROM presence WHERE node_id = \(nodeID) AND connection = \(change.connection)", logger: logger)
                }
            } catch {
                logger.warning("a connection's presence could not be written", metadata: [
                    "user": "\(change.userID)", "error": "\(PostgresStore.describe(error))"])
            }
        }
    }

    func othersPresence(of users: Set<String>) async throws -> [String: RemotePresence] {
        guard !users.isEmpty else { return [:] }
        let rows = try await client.query(
            """
            SELECT p.user_id, bool_or(p.foreground),
                   coalesce(array_agg(p.device_id) FILTER (WHERE p.device_id IS NOT NULL), '{}')
            FROM presence p JOIN nodes n ON n.id = p.node_id
            WHERE p.node_id <> \(nodeID) AND p.user_id = ANY(\(Array(users))::text[])
              AND n.seen_at > now() - make_interval(secs => \(expirySeconds))
            GROUP BY p.user_id
            """, logger: logger)
        var presence: [String: RemotePresence] = [:]
        for try await (userID, foreground, devices) in rows.decode((String, Bool, [String]).self) {
            presence[userID] = RemotePresence(foreground: foreground, devices: Set(devices))
        }
        return presence
    }
}
