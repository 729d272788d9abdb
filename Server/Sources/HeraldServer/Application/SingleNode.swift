import Foundation
import HeraldRecords
import NIOConcurrencyHelpers

/// A node alone: no other node to tell or hear, its shared settings in files beside its database (readable by its
/// owner only; made on first start), fresh ones for a database in memory.
public final class SingleNode: Cluster {
    /// The database the settings' files sit beside.
    let databasePath: String
    /// Where this node's pushes are told: its own streams.
    private let pushed = NIOLockedValueBox<Callback<PushedNotice>?>(nil)

    /// The node of the database at `databasePath` (`:memory:` for none on disk).
    public init(databasePath: String) {
        self.databasePath = databasePath
    }

    public func othersPresence(of users: Set<String>) async throws -> [String: RemotePresence] { [:] }

    public func record(_ change: PresenceChange) {}

    public func listen(erased: @escaping @Sendable (String) -> Void, pushed: @escaping @Sendable (PushedNotice) -> Void) {
        self.pushed.withLockedValue { $0 = Callback(pushed) }
    }

    public func announce(_ notice: PushedNotice) async {
        pushed.withLockedValue { $0 }?.call(notice)
    }

    /// The file's content, or `make()`'s written to it.
    ///
    /// - Throws: ``ConfigurationError`` when the file cannot be written.
    public func sharedSetting(_ name: SharedSetting, make: () -> String) async throws -> String {
        if databasePath == ":memory:" { return make() }
        let path = databasePath + name.fileSuffix
        if let data = FileManager.default.contents(atPath: path) { return String(decoding: data, as: UTF8.self) }
        let value = make()
        guard FileManager.default.createFile(atPath: path, contents: Data(value.utf8), attributes: [.posixPermissions: 0o600])
        else { throw ConfigurationError("cannot write \(path)") }
        return value
    }
}
