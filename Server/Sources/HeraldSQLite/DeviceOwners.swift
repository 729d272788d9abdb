import NIOConcurrencyHelpers

/// The users with a registered device, kept in memory so that the push decider narrows a round's candidates to them
/// without asking the database: in a busy chat most members have no device (they use the web page, or the app's
/// stream while it is open), and a round whose members have none costs no query at all.
///
/// A server is its file's only writer (``DatabaseLock``), and every change to `devices` goes through the store: a
/// registration adds its owner before it commits, and a removal takes out an owner it left without a device only
/// once it has committed, in the same job on the connection, so that no other write comes between (an erasure, once
/// it committed: no device can be added to an erased user). The set therefore always holds everyone with a device,
/// and may for a moment hold someone who just lost their last one: that costs the round one query (which finds no
/// device), never a push. Ids are compared byte for byte, as the database compares them.
package final class DeviceOwners: Sendable {
    private let owners: NIOLockedValueBox<Set<ExactText>>

    private init(_ owners: Set<ExactText>) {
        self.owners = NIOLockedValueBox(owners)
    }

    /// The owners of the devices in the database on `connection`: read at open, before any other job runs.
    static func read(on connection: SQLiteHandle) throws -> DeviceOwners {
        let rows = try connection.query("SELECT DISTINCT user_id FROM devices", keep: false)
        return DeviceOwners(Set(rows.compactMap { $0.column("user_id")?.string.map(ExactText.init) }))
    }

    /// `userID` has (or is about to commit) a device.
    func gained(_ userID: String) {
        owners.withLockedValue { _ = $0.insert(ExactText(userID)) }
    }

    /// `userIDs` have no device left, as of a commit that just ended.
    func lost(_ userIDs: some Sequence<String>) {
        owners.withLockedValue { owners in
            for userID in userIDs { owners.remove(ExactText(userID)) }
        }
    }

    /// Those of `candidates` who have a device (or just lost their last one).
    package func among(_ candidates: Set<String>) -> Set<String> {
        owners.withLockedValue { owners in candidates.filter { owners.contains(ExactText($0)) } }
    }

    /// Everyone the set holds.
    package var all: Set<String> {
        owners.withLockedValue { Set($0.map(\.text)) }
    }

    /// Whether `userID` has no device left, in the transaction on `connection` (after its removals).
    static func hasNone(_ userID: String, on connection: SQLiteHandle) throws -> Bool {
        try connection.query("SELECT 1 FROM devices WHERE user_id = ?1 LIMIT 1", [.text(userID)]).isEmpty
    }
}
