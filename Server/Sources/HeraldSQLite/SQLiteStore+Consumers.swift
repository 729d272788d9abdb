import Foundation
import HeraldRecords

/// The durable consumers' places on SQLite.
///
/// Reading a place, and writing a round that made few rows, runs on the consumer's own thread when the database is
/// idle: a round every 20 ms under load would otherwise wake the database's thread, and then the consumer's, for each
/// of its trips. A round that made more rows than ``rowsOnCaller`` is written on the database's thread, so a large
/// one never holds a thread that serves connections.
extension SQLiteStore {
    /// The most rows a round may make and still be written on the consumer's own thread.
    static let rowsOnCaller = 32

    public func place(of consumer: DurableConsumerName) async throws -> Int64 {
        try await database.perform(onCallerIfIdle: true) { connection in
            let rows = try connection.query("SELECT seq FROM log_cursors WHERE name = ?1", [.text(consumer.rawValue)])
            return Int64(rows.first?.column("seq")?.integer ?? 0)
        }
    }

    public func advance(
        _ consumer: DurableConsumerName, from place: Int64, to through: Int64, writing output: ConsumerOutput
    ) async throws -> Int? {
        // Not on the caller when every commit waits for the disk.
        let rows = output.pushJobs.count + output.webhookEvents.count + output.reminders.count + output.trail.count
        return try await database.transaction(onCallerIfIdle: !syncsEachCommit && rows <= Self.rowsOnCaller) { connection -> Int? in
            let moved = try connection.query(
                "UPDATE log_cursors SET seq = ?3 WHERE name = ?1 AND seq = ?2 RETURNING seq",
                [.text(consumer.rawValue), .integer(Int(place)), .integer(Int(through))])
            guard !moved.isEmpty else { return nil }
            try Self.remind(output.reminders, on: connection)
            let queued = self.trailSwitch.isOn && !output.trail.isEmpty ? QueuedAlerts() : nil
            let jobs = try Self.queue(output.pushJobs, on: connection, membersOnly: true, collecting: queued)
            if let queued { try Self.insertTrail(output.trail.reconciled(with: queued), on: connection, when: true) }
            return jobs + (try Self.insertWebhooks(output.webhookEvents, on: connection))
        }
    }
}
