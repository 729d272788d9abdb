import HeraldRecords

/// What of a node's presence the database has, and what it still needs: the latest state of each connection,
/// never a queue of every change.
///
/// Only what the other nodes' push decisions read is kept (foreground or not, and the device): a `focus` change is
/// nothing to write. A connection that changes a thousand times while a write is under way is one row in the next
/// write, so the work and the memory are bounded by the connections, however fast their frames come. A value with
/// no I/O: ``PostgresPresence`` takes batches from it, writes them, and reports back.
package struct PresenceWrites: Sendable {
    /// One connection's row.
    package struct Row: Hashable, Sendable {
        package var userID: String
        package var device: String?
        package var foreground: Bool
    }

    /// A batch to write: rows to insert or update, and connections whose rows go.
    package struct Batch: Hashable, Sendable {
        package var upserts: [Int: Row] = [:]
        package var deletes: Set<Int> = []
        package var isEmpty: Bool { upserts.isEmpty && deletes.isEmpty }
    }

    /// The rows as the database has them (as far as this node knows).
    private(set) var written: [Int: Row] = [:]
    /// For each connection whose row must change, what it must become (nil: deleted).
    private var pending: [Int: Row?] = [:]
    /// What is being written now.
    private var inFlight: Batch?

    /// Takes a connection's new presence (nil once it closed). Returns whether there is now something to write.
    package mutating func record(connection: Int, row: Row?) -> Bool {
        let target = inFlight.map { batch -> Row? in
            if batch.deletes.contains(connection) { return nil }
            return batch.upserts[connection] ?? written[connection]
        } ?? written[connection]
        if row == target {
            pending.removeValue(forKey: connection)
        } else {
            pending[connection] = .some(row)
        }
        return !pending.isEmpty
    }

    /// How many connections wait for a write.
    package var waiting: Int { pending.count }

    /// The next batch to write (at most `limit` connections), now in flight; nil while one is, or when nothing
    /// waits.
    package mutating func nextBatch(limit: Int) -> Batch? {
        guard inFlight == nil, !pending.isEmpty else { return nil }
        var batch = Batch()
        for (connection, row) in pending.prefix(max(1, limit)) {
            if let row { batch.upserts[connection] = row } else { batch.deletes.insert(connection) }
        }
        for connection in batch.upserts.keys { pending.removeValue(forKey: connection) }
        for connection in batch.deletes { pending.removeValue(forKey: connection) }
        inFlight = batch
        return batch
    }

    /// The batch in flight was written.
    package mutating func batchWritten(_ succeeded: Bool) {
        guard let batch = inFlight else { return }
        inFlight = nil
        if succeeded {
            for (connection, row) in batch.upserts { written[connection] = row }
            for connection in batch.deletes { written.removeValue(forKey: connection) }
        } else {
            // Still to do, unless a newer state came meanwhile.
            for (connection, row) in batch.upserts where pending[connection] == nil { pending[connection] = .some(row) }
            for connection in batch.deletes where pending[connection] == nil { pending[connection] = .some(nil) }
        }
        // A change that came back to what is now written needs nothing.
        for (connection, row) in pending where row == written[connection] { pending.removeValue(forKey: connection) }
    }
}
