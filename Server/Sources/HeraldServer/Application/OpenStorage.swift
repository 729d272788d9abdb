import HeraldPostgres
import HeraldRecords
import HeraldSQLite
import Logging
import ServiceLifecycle

/// The database a configuration names, open, with the nodes it is shared by: the one place the server chooses a
/// driver. SQLite is a node alone (``SingleNode``); PostgreSQL is shared by every node on it (`PostgresCluster`).
struct OpenStorage: Sendable {
    /// Where everything is kept.
    let store: any Store
    /// What the nodes tell each other.
    let cluster: any Cluster
    /// What runs beside the server, first to start and last to stop: the store's (and the cluster's).
    let services: [any Service]
    /// Closes the database when the server cannot start after all.
    let close: @Sendable () async -> Void

    /// Opens SQLite, or PostgreSQL when ``ServerConfiguration/postgresURL`` is set (waiting, with back-off, for a
    /// database that cannot be reached yet), and migrates it.
    static func open(_ configuration: ServerConfiguration, logger: Logger) async throws -> OpenStorage {
        let storage = try await openDriver(configuration, logger: logger)
        storage.store.trailSwitch.hours = configuration.trailHours
        return storage
    }

    /// Opens the database a configuration names to read its delivery trail beside the server that serves it
    /// (`herald explain`): SQLite read-only and without its lock; PostgreSQL as a node does, without waiting long for
    /// one that cannot be reached. The answer's `close` closes it.
    static func openForReading(_ configuration: ServerConfiguration, logger: Logger) async throws -> OpenStorage {
        let storage = try await openDriverForReading(configuration, logger: logger)
        storage.store.trailSwitch.hours = configuration.trailHours
        return storage
    }

    private static func openDriverForReading(_ configuration: ServerConfiguration, logger: Logger) async throws -> OpenStorage {
        if let url = configuration.postgresURL {
            let store = try await PostgresStore.connect(
                url: url, retryFor: .seconds(10), clock: configuration.clock, queryLimit: configuration.databaseQueryLimit,
                asNode: false, logger: logger)
            return OpenStorage(store: store, cluster: PostgresCluster(store: store), services: [], close: { await store.close() })
        }
        let store = try await SQLiteStore.openForReading(path: configuration.databasePath, clock: configuration.clock, logger: logger)
        return OpenStorage(
            store: store, cluster: SingleNode(databasePath: configuration.databasePath), services: [],
            close: { try? await store.database.close(markingClean: false) })
    }

    private static func openDriver(_ configuration: ServerConfiguration, logger: Logger) async throws -> OpenStorage {
        if let url = configuration.postgresURL {
            let store = try await PostgresStore.connect(
                url: url, leaseDuration: configuration.push.lease.seconds, presenceExpiry: configuration.presenceExpiry,
                clock: configuration.clock, queryLimit: configuration.databaseQueryLimit, logger: logger)
            let cluster = PostgresCluster(store: store)
            return OpenStorage(store: store, cluster: cluster, services: [store, cluster], close: { await store.close() })
        }
        let store = try await SQLiteStore.open(
            path: configuration.databasePath, fullSync: configuration.fullSync, commitWindow: configuration.commitWindow,
            clock: configuration.clock, logger: logger)
        return OpenStorage(
            store: store, cluster: SingleNode(databasePath: configuration.databasePath), services: [store.database],
            close: { try? await store.database.close(markingClean: true) })
    }
}
