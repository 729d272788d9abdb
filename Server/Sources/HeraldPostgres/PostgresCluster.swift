import Foundation
import HeraldRecords
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle

/// Nodes on one PostgreSQL database telling each other what they must know (``Cluster``), on the channel
/// `herald_entries`: each commit's last seq (which this node's log reads from the table, ``CommitSink``), each
/// erasure (`erased:<seq>:<user id>`, which every node acknowledges), each alert pushed to a connected device
/// (`pushed:<JSON>`); presence through the `presence` and `nodes` tables (``PostgresPresence``); the shared settings
/// in `herald_settings`.
///
/// A service: it listens and beats the node's heart from the start until the graceful shutdown, then tells the
/// others this node's connections are gone. It stops before the store it uses.
package final class PostgresCluster: Cluster, Service {
    /// The store whose pool it uses and whose log it tells of the other nodes' commits.
    private let store: PostgresStore
    private var logger: Logger { store.logger }
    /// What this node does when a user is erased on any node.
    private let erasureHandler = NIOLockedValueBox<Callback<String>?>(nil)
    /// What this node does when a node pushed an alert to a connected device.
    private let pushedHandler = NIOLockedValueBox<Callback<PushedNotice>?>(nil)

    /// The cluster of the nodes on `store`'s database.
    package init(store: PostgresStore) {
        self.store = store
    }

    package func othersPresence(of users: Set<String>) async throws -> [String: RemotePresence] {
        try await store.presence.othersPresence(of: users)
    }

    package func record(_ change: PresenceChange) {
        store.presence.record(change)
    }

    package func listen(erased: @escaping @Sendable (String) -> Void, pushed: @escaping @Sendable (PushedNotice) -> Void) {
        erasureHandler.withLockedValue { $0 = Callback(erased) }
        pushedHandler.withLockedValue { $0 = Callback(pushed) }
    }

    /// Notifies every node whose connections include the device (this one too).
    package func announce(_ notice: PushedNotice) async {
        do {
            try await store.database.query(
                """
                SELECT pg_notify('herald_entries', \(notice.payload))
                WHERE EXISTS (SELECT 1 FROM presence p WHERE p.user_id = \(notice.user) AND p.device_id = \(notice.device))
                """, logger: logger)
        } catch {
            logger.warning("a push could not be told to the other nodes", metadata: ["error": "\(PostgresStore.describe(error))"])
        }
    }

    /// Kept in the database's `herald_settings`, so that every node signs alike.
    package func sharedSetting(_ name: SharedSetting, make: () -> String) async throws -> String {
        let candidate = make()
        try await store.database.query(
            "INSERT INTO herald_settings (name, value) VALUES (\(name.rawValue), \(candidate)) ON CONFLICT (name) DO NOTHING",
            logger: logger)
        let rows = try await store.database.query(
            "SELECT value FROM herald_settings WHERE name = \(name.rawValue)", logger: logger)
        return try rows.first.map { try $0.decode(String.self) } ?? candidate
    }

    /// Listens for the other nodes' messages and beats this node's heart until the graceful shutdown; then the
    /// other nodes stop counting this one's connections.
    package func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.listen() }
            group.addTask { await self.store.presence.run() }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        // In this task, which a graceful stop does not cancel.
        await store.presence.leave(within: .seconds(2))
    }

    /// `LISTEN herald_entries` on a connection of its own, handing each notified seq to the store's log; when the
    /// connection drops, listens again (back-off 1 s doubling to 30 s) and catches up from the table.
    private func listen() async {
        var wait = Duration.seconds(1)
        while !Task.isCancelled {
            do {
                // The pool itself, not its bounded face: this connection listens for as long as the node runs.
                try await store.client.withConnection { connection in
                    try await connection.listen(on: "herald_entries") { notifications in
                        // Listening: what committed before is read from the table (on another connection; this one
                        // only listens), and the erasures this node has not taken.
                        self.store.commits.notified(through: try await self.store.latestSeq())
                        await self.takeErasures()
                        wait = .seconds(1)
                        for try await notification in notifications {
                            if let seq = Int64(notification.payload) {
                                self.store.commits.notified(through: seq)
                            } else if let erasure = Erasure(payload: notification.payload) {
                                await self.take(erasure)
                            } else if let pushed = PushedNotice(payload: notification.payload) {
                                self.pushedHandler.withLockedValue { $0 }?.call(pushed)
                            }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("listening for other nodes' entries failed; listening again", metadata: [
                    "error": "\(PostgresStore.describe(error))", "retry_in": "\(wait)"])
            }
            try? await Task.sleep(for: wait)
            wait = min(wait * 2, .seconds(30))
        }
    }

    /// An erasure told by a node: dropped here, then this node says it has (the erasing node waits for that).
    private func take(_ erasure: Erasure) async {
        erasureHandler.withLockedValue { $0 }?.call(erasure.userID)
        do {
            try await store.database.query(
                """
                UPDATE nodes SET erasures_through = greatest(erasures_through, \(erasure.seq)) WHERE id = \(store.presence.nodeID)
                """, logger: logger)
        } catch {
            logger.warning("an erasure could not be acknowledged", metadata: ["error": "\(PostgresStore.describe(error))"])
        }
    }

    /// The erasures made while this node was not listening, each taken.
    private func takeErasures() async {
        do {
            let rows = try await store.database.query(
                """
                SELECT e.seq, e.user_id FROM erasures e, nodes n
                WHERE n.id = \(store.presence.nodeID) AND e.seq > n.erasures_through ORDER BY e.seq
                """, logger: logger)
            for row in rows {
                let (seq, userID) = try row.decode((Int64, String).self)
                await take(Erasure(seq: seq, userID: userID))
            }
        } catch {
            logger.warning("the erasures made meanwhile could not be read", metadata: ["error": "\(PostgresStore.describe(error))"])
        }
    }
}
