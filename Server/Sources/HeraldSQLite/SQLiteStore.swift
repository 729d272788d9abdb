import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The embedded store: one SQLite file in WAL mode, migrated at start.
///
/// All work goes through one ``SerialDatabase``, so sequence numbers and transactions happen strictly in order, and
/// each job that commits entries hands them to the ``EventLog`` before the next job runs. `synchronous = NORMAL` in
/// WAL mode keeps every committed entry across a crash of the server process; `HERALD_SQLITE_SYNC=full` also keeps
/// it across a power cut.
///
/// Its concerns are in files of their own: users (`+Users`), conversations and members (`+Conversations`), the
/// event log (`+Entries`, with the group commit), read markers, levels and settings (`+ReadState`), devices (`+Devices`) and
/// the push outbox (`+Push`).
public final class SQLiteStore: Store {
    package let database: SerialDatabase
    /// The folder holding the database file, whose free space ``health(within:)`` reads; nil in memory.
    package let folder: String?
    /// Who has a registered device, for the push decider.
    package let deviceOwners: DeviceOwners
    /// Posts waiting for the next group commit (see SQLiteStore+Entries.swift).
    package let posts = GroupCommitQueue()
    /// Where committed entries go: the node's log, once attached.
    package let commits = CommitTarget()
    /// The wall clock entries are stamped with.
    public let clock: WallClock
    /// Whether the delivery trail is kept.
    public let trailSwitch = TrailSwitch()
    /// Whether every commit waits for the disk (`HERALD_SQLITE_SYNC=full`): then no commit runs on an event loop.
    package let syncsEachCommit: Bool
    /// Under load, how long after a commit began the next waits for, with every post that comes meanwhile (nil: it
    /// does not wait). See SQLiteStore+Entries.swift.
    package let commitWindow: TimeAmount?
    /// When the last group commit began, and whose post it was when it held one (nil before the first).
    package let lastCommit = NIOLockedValueBox<CommitMark?>(nil)

    /// Opens (creating if needed) the database at `path` (`:memory:` for a private in-memory one), checks it and
    /// migrates it. Under load, a stream's posts less than `commitWindow` after a commit began wait for the window's
    /// end, to be committed together (zero: a post is committed as soon as the database is free).
    ///
    /// A file database is refused, with a ``StorageError`` that says why and what to do, when another server holds
    /// it (its `<path>-lock`), when `PRAGMA quick_check` finds it damaged, or when the server that last used it
    /// stopped without closing it and its write-ahead log (`<path>-wal`) is gone: then the messages committed
    /// since the last checkpoint are lost, and serving the file would give their `seq` numbers again.
    public static func open(
        path: String, fullSync: Bool = false, commitWindow: Duration = .zero, clock: WallClock = WallClock(), logger: Logger
    ) async throws -> SQLiteStore {
        guard path != ":memory:" else {
            let database = try await SerialDatabase.open(path: path, lock: nil, logger: logger)
            let owners: DeviceOwners
            do {
                owners = try await database.perform { connection in
                    try configure(connection, fullSync: fullSync)
                    try SQLiteMigrations.migrate(connection, logger: logger)
                    return try DeviceOwners.read(on: connection)
                }
            } catch {
                try? await database.close(markingClean: false)
                throw error
            }
            return SQLiteStore(
                database: database, deviceOwners: owners, folder: nil, clock: clock, syncsEachCommit: fullSync,
                commitWindow: commitWindow)
        }
        let lock = try await DatabaseLock.acquire(databasePath: path)
        let walExisted = FileManager.default.fileExists(atPath: path + "-wal")
        guard createOwnerOnly(path) else {
            let reason = String(cString: strerror(errno))
            lock.release()
            throw StorageError("cannot create the database \(path): \(reason)")
        }
        let database: SerialDatabase
        do {
            database = try await SerialDatabase.open(path: path, lock: lock, logger: logger)
        } catch {
            throw StorageError("cannot open the database \(path): \(Self.reason(error))")
        }
        let owners: DeviceOwners
        do {
            owners = try await database.perform { connection in
                try configure(connection, fullSync: fullSync)
                try checkIntegrity(connection, path: path)
                try SQLiteMigrations.migrate(connection, logger: logger)
                try markInUse(connection, path: path, walExisted: walExisted)
                return try DeviceOwners.read(on: connection)
            }
        } catch {
            try? await database.close(markingClean: false)
            throw error as? StorageError ?? StorageError("cannot use the database \(path): \(Self.reason(error))")
        }
        return SQLiteStore(
            database: database, deviceOwners: owners, folder: URL(fileURLWithPath: path).deletingLastPathComponent().path,
            clock: clock, syncsEachCommit: fullSync, commitWindow: commitWindow)
    }

    /// Opens the database at `path` to read only, beside the server that may be serving it (no lock taken, nothing
    /// migrated or written: WAL mode lets a reader in while the server writes): what `herald explain` reads.
    ///
    /// - Throws: ``StorageError`` when there is no such database, or it cannot be read.
    public static func openForReading(path: String, clock: WallClock = WallClock(), logger: Logger) async throws -> SQLiteStore {
        guard FileManager.default.fileExists(atPath: path) else { throw StorageError("there is no database at \(path)") }
        let database: SerialDatabase
        let owners: DeviceOwners
        do {
            database = try await SerialDatabase.open(path: path, readOnly: true, lock: nil, logger: logger)
            owners = try await database.perform { connection in
                try connection.query("PRAGMA busy_timeout = 5000", keep: false)
                _ = try connection.query("SELECT count(*) FROM delivery_trail", keep: false)
                return try DeviceOwners.read(on: connection)
            }
        } catch {
            throw StorageError("cannot read the database \(path): \(Self.reason(error)) (a database from before Herald 0.32 has no delivery trail yet: start the server once)")
        }
        return SQLiteStore(database: database, deviceOwners: owners, folder: nil, clock: clock)
    }

    /// Creates the database file at `path`, empty and readable by its owner only (0600), when there is none yet:
    /// SQLite would make it 0644, and it gives the `-wal` and `-shm` beside it the database's mode. An existing file
    /// keeps the mode it has. False (with `errno` set) when it could not be created.
    private static func createOwnerOnly(_ path: String) -> Bool {
        let descriptor = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return errno == EEXIST }
        close(descriptor)
        return true
    }

    private static func configure(_ connection: SQLiteHandle, fullSync: Bool) throws {
        // `secure_delete`: what is deleted (retention, an erasure) is overwritten with zeros, not left in free pages.
        for pragma in ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = \(fullSync ? "FULL" : "NORMAL")",
                       "PRAGMA foreign_keys = ON", "PRAGMA busy_timeout = 5000", "PRAGMA secure_delete = ON"] {
            try connection.query(pragma, keep: false)
        }
    }

    /// `PRAGMA quick_check`: every page and index entry readable and consistent (in time proportional to the size).
    private static func checkIntegrity(_ connection: SQLiteHandle, path: String) throws {
        let rows = try connection.query("PRAGMA quick_check(5)", keep: false)
        let findings = rows.compactMap { $0.column("quick_check")?.string }
            .flatMap { $0.split(whereSeparator: \.isNewline) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("***") }
        guard findings == ["ok"] else {
            throw StorageError(
                "the database \(path) is damaged (\(findings.joined(separator: "; "))); "
                    + "restore it from a backup, or move it away to start afresh")
        }
    }

    /// Refuses a file whose last server did not close it and whose log is gone; then marks it in use, checkpointed
    /// into the main file so that the mark survives the loss of the log.
    private static func markInUse(_ connection: SQLiteHandle, path: String, walExisted: Bool) throws {
        let running = try connection.query("SELECT running FROM server_state WHERE id = 1", keep: false)
            .first?.column("running")?.integer ?? 0
        if running == 1, !walExisted {
            throw StorageError(
                "the database \(path) was not closed cleanly and its write-ahead log (\(path)-wal) is missing: "
                    + "messages committed since its last checkpoint are lost, and serving it would number new messages "
                    + "with seq numbers clients have already seen. Restore the file together with its -wal from a "
                    + "backup; to serve it anyway, run: sqlite3 \(path) 'UPDATE server_state SET running = 0'")
        }
        try connection.query("UPDATE server_state SET running = 1 WHERE id = 1", keep: false)
        try connection.query("PRAGMA wal_checkpoint(TRUNCATE)", keep: false)
    }

    /// Runs `work` in a transaction on the database's thread; once it committed, the entries it returns go to the log
    /// (still on that thread, so in the order they were committed), and the caller resumes once they were handed
    /// on. Rolled back if `work` throws.
    package func appending<T: Sendable>(
        _ work: @escaping @Sendable (SQLiteHandle) throws -> (entries: [IncomingMessage], result: T)
    ) async throws -> T {
        let commits = commits
        let outcome = try await database.transaction(work) { outcome in
            let seqs = outcome.entries.compactMap(\.message.seq)
            guard let first = seqs.min(), let last = seqs.max() else { return }
            commits.committed(first...last, entries: outcome.entries, waiters: [])
        }
        // Handed to the log once committed, on the database's thread: the log delivers it unless its consumers wait
        // for a read of the database (see ``GroupCommitQueue/add(_:schedule:)``).
        if let last = outcome.entries.compactMap(\.message.seq).max() { await commits.delivery(of: last) }
        return outcome.result
    }

    public func attach(_ sink: any CommitSink) {
        commits.attach(sink)
    }

    package static func reason(_ error: any Error) -> String {
        (error as? SQLiteFailure)?.message ?? String(describing: error)
    }

    private init(
        database: SerialDatabase, deviceOwners: DeviceOwners, folder: String?, clock: WallClock, syncsEachCommit: Bool = false,
        commitWindow: Duration = .zero
    ) {
        self.database = database
        self.commitWindow = commitWindow > .zero ? TimeAmount(commitWindow) : nil
        self.deviceOwners = deviceOwners
        self.syncsEachCommit = syncsEachCommit
        self.clock = clock
        self.folder = folder
    }

    /// How much free space below which the disk counts as full: a group of posts needs room to be written.
    package static let headroom = 1 << 20

    /// The embedded database is reachable while it is open (a job on it answers). It is full while its disk has less
    /// than ``headroom`` free, or while a write found it full and none has succeeded since (tried here once there
    /// is room again: the row of `server_state`, rewritten as it is).
    public func health(within timeout: Duration) async -> StoreHealth {
        if let folder, let free = Self.freeBytes(at: folder), free < Self.headroom { return .full }
        let answer = try? await database.perform { connection -> StoreHealth in
            guard connection.diskFull else { return .ok }
            _ = try? connection.query("UPDATE server_state SET running = running WHERE id = 1")
            return connection.diskFull ? .full : .ok
        }
        return answer ?? .unreachable
    }

    /// The bytes an unprivileged writer may still use on the file system holding `path`.
    package static func freeBytes(at path: String) -> Int? {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return nil }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }
}

/// When a group commit began, and the sender of its post when it held only one: what the commit window is judged by.
package struct CommitMark: Sendable {
    var began: NIODeadline
    /// The sender of the commit's only post; nil when it held several.
    var soleSender: String?
}
