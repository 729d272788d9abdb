import Foundation
import HeraldRecords

/// An exclusive lock on a database file, held for as long as a server uses it, so a second server started on the
/// same file refuses to start instead of interleaving its sequence numbers with the first's.
///
/// It is an advisory `flock` on `<database>-lock`, a file of its own (a lock on the database file itself could be
/// lost when SQLite closes one of its descriptors). The lock goes with the process, even on SIGKILL; the file stays
/// and holds the last owner's process id.
package final class DatabaseLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Takes the lock of the database at `path`.
    ///
    /// When the lock's recorded owner is this very process, it was just let go here (a store closed and another
    /// opened, as tests do): a process this one is spawning at that moment may still hold the lock's file until it
    /// starts its program, so it is asked again for up to 2 s before giving up.
    ///
    /// - Throws: ``StorageError`` when another process holds it, or the lock file cannot be opened.
    package static func acquire(databasePath path: String) async throws -> DatabaseLock {
        let deadline = ContinuousClock.now + .seconds(2)
        while true {
            do {
                return try attempt(databasePath: path)
            } catch let held as HeldByThisProcess {
                guard ContinuousClock.now < deadline else { throw held.error }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// The lock was held, and its recorded owner is this process.
    private struct HeldByThisProcess: Error {
        var error: StorageError
    }

    private static func attempt(databasePath path: String) throws -> DatabaseLock {
        let lockPath = path + "-lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError("cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            var owner = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &owner, owner.count, 0)
            close(descriptor)
            guard reason == EWOULDBLOCK else {
                throw StorageError("cannot lock \(lockPath): \(String(cString: strerror(reason)))")
            }
            let pid = String(decoding: owner.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let error = StorageError(
                "another Herald server\(pid.isEmpty ? "" : " (process \(pid))") is using \(path); "
                    + "stop it first, or give this one another --database")
            throw pid == String(getpid()) ? HeldByThisProcess(error: error) : error
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        return DatabaseLock(descriptor: descriptor)
    }

    /// Lets the lock go (closing the file).
    func release() {
        close(descriptor)
    }
}
