import Foundation
import HeraldRecords
import PostgresNIO

/// The durable consumers' places on PostgreSQL: a row every node shares, moved by compare-and-set, so that with
/// several nodes each entry is decided once (a node whose round lost the race makes it again from the new place)
/// and no transaction is held open while a consumer decides.
extension PostgresStore {
    public func place(of consumer: DurableConsumerName) async throws -> Int64 {
        let rows = try await database.query(
            "SELECT seq FROM log_cursors WHERE name = \(consumer.rawValue)", logger: logger)
        return try rows.first.map { try $0.decode(Int64.self) } ?? 0
    }

    public func advance(
        _ consumer: DurableConsumerName, from place: Int64, to through: Int64, writing output: ConsumerOutput
    ) async throws -> Int? {
        try await transaction { connection -> Int? in
            let moved = try await connection.query(
                "UPDATE log_cursors SET seq = \(through) WHERE name = \(consumer.rawValue) AND seq = \(place) RETURNING seq",
                logger: self.logger).collect()
            guard !moved.isEmpty else { return nil }
            let now = Date().timeIntervalSince1970
            for reminder in output.reminders {
                // The first reminder of each member and conversation stays: a later message does not move it.
                try await connection.query(
                    """
                    INSERT INTO unread_reminders (user_id, conversation_id, seq, created_at, due_at)
                    VALUES (\(reminder.userID), \(reminder.conversationID), \(reminder.seq), \(now), \(reminder.due.timeIntervalSince1970))
                    ON CONFLICT DO NOTHING
                    """, logger: self.logger)
            }
            let queued = self.trailSwitch.isOn && !output.trail.isEmpty ? QueuedAlerts() : nil
            let jobs = try await Self.queue(
                output.pushJobs, on: connection, membersOnly: true, collecting: queued, logger: self.logger)
            if let queued {
                try await Self.insertTrail(
                    output.trail.reconciled(with: queued), on: connection, when: true, logger: self.logger)
            }
            return try await jobs + Self.insertWebhooks(output.webhookEvents, on: connection, logger: self.logger)
        }
    }
}
