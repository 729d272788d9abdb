import Foundation
import HeraldProtocol
import HeraldRecords
import Logging
import PostgresNIO

/// The webhook outbox on PostgreSQL, shared by every node.
extension PostgresStore {
    /// Inserts `events`; one without a seq takes the log's last.
    package static func insertWebhooks(_ events: [NewWebhookEvent], on connection: PostgresConnection, logger: Logger) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        var latest: Int64 = 0
        if events.contains(where: { $0.seq == nil }) {
            let rows = try await connection.query("SELECT seq FROM message_seq WHERE id = 1", logger: logger).collect()
            latest = try rows.first.map { try $0.decode(Int64.self) } ?? 0
        }
        for event in events {
            let time = event.time.timeIntervalSince1970
            try await connection.query(
                """
                INSERT INTO webhook_jobs (type, ordering_key, conversation_id, seq, rank, data, created_at, due_at)
                VALUES (\(event.type.rawValue), \(event.orderingKey), \(event.conversationID), \(event.seq ?? latest),
                        \(event.rank), \(event.dataJSON), \(time), \(time))
                """, logger: logger)
        }
        return events.count
    }

    public func leaseWebhooks(now: Date, limit: Int, lease: Duration) async throws -> (jobs: [WebhookJob], nextDue: Date?) {
        let now = now.timeIntervalSince1970
        return try await leasing(for: lease.seconds) { connection in
            // The first waiting event of each conversation or user, once due, not held by a node, and within what
            // the feed has queued; the rows held by another node's lease in progress are skipped.
            let rows = try await connection.query(
                """
                SELECT j.id, j.type, j.seq, j.conversation_id, j.data, j.created_at, j.attempts FROM webhook_jobs j
                WHERE j.due_at <= \(now) AND j.leased_until <= \(now)
                  AND j.seq <= (SELECT seq FROM log_cursors WHERE name = 'webhook')
                  AND NOT EXISTS (SELECT 1 FROM webhook_jobs k WHERE k.ordering_key = j.ordering_key
                                  AND (k.seq, k.rank, k.id) < (j.seq, j.rank, j.id))
                ORDER BY j.id LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
                """, logger: self.logger).collect()
            let jobs = try rows.map { try Rows.webhookJob($0.makeRandomAccess()) }
            if !jobs.isEmpty {
                try await connection.query(
                    "UPDATE webhook_jobs SET leased_until = \(now + lease.seconds) WHERE id = ANY(\(jobs.map(\.id))::bigint[])",
                    logger: self.logger)
            }
            // When the next one can go: the earliest due among the first events of their conversation or user (one
            // queued behind a failing one waits for it, however long ago it was due), within the feed's place.
            let next = try await connection.query(
                """
                SELECT min(j.due_at) FROM webhook_jobs j
                WHERE j.leased_until <= \(now) AND j.seq <= (SELECT seq FROM log_cursors WHERE name = 'webhook')
                  AND NOT EXISTS (SELECT 1 FROM webhook_jobs k WHERE k.ordering_key = j.ordering_key
                                  AND (k.seq, k.rank, k.id) < (j.seq, j.rank, j.id))
                """, logger: self.logger).collect()
            let due = try next.first.flatMap { try $0.decode(Double?.self) }
            return (jobs, due.map { Date(timeIntervalSince1970: $0) })
        }
    }

    public func finishWebhook(id: Int64) async throws {
        try await database.query("DELETE FROM webhook_jobs WHERE id = \(id)", logger: logger)
    }

    public func retryWebhook(id: Int64, at due: Date) async throws {
        try await database.query(
            "UPDATE webhook_jobs SET attempts = attempts + 1, due_at = \(due.timeIntervalSince1970), leased_until = 0 WHERE id = \(id)",
            logger: logger)
    }

    /// With several nodes a lease is left to expire: another node may be sending the event now.
    public func releaseWebhookLeases() async throws {}

    public func releaseWebhooks(ids: [Int64], now: Date) async throws {
        guard !ids.isEmpty else { return }
        try await database.query(
            """
            UPDATE webhook_jobs SET leased_until = 0
            WHERE id = ANY(\(ids)::bigint[]) AND leased_until > \(now.timeIntervalSince1970)
            """, logger: logger)
    }

    public func fireReminders(now: Date, limit: Int) async throws -> Int {
        try await transaction { connection in
            try await connection.query("SELECT seq FROM message_seq WHERE id = 1 FOR SHARE", logger: self.logger)
            let due = try await connection.query(
                """
                DELETE FROM unread_reminders WHERE (user_id, conversation_id) IN (
                    SELECT user_id, conversation_id FROM unread_reminders WHERE due_at <= \(now.timeIntervalSince1970)
                    ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING user_id, conversation_id, seq
                """, logger: self.logger).collect()
            var events: [NewWebhookEvent] = []
            for reminder in due {
                let (userID, conversationID, seq) = try reminder.decode((String, String, Int64).self)
                // Still a member not at `nothing` now, and still not read up to it: how many from others they have not read.
                let state = try await connection.query(
                    """
                    SELECT c.id, c.kind, c.title, (SELECT count(*) FROM (SELECT 1 FROM messages m
                        WHERE m.conversation_id = me.conversation_id AND m.seq > me.read_seq AND m.sender_id <> me.user_id
                          AND m.event IS NULL AND NOT m.deleted LIMIT \(ConversationSummary.unreadLimit)) AS u) AS unread
                    FROM members me JOIN conversations c ON c.id = me.conversation_id \(unescaped: LevelSQL.joinSettings)
                    WHERE me.conversation_id = \(conversationID) AND me.user_id = \(userID) AND me.removed_seq IS NULL
                      AND me.read_seq < \(seq) AND NOT c.deleted
                      AND \(unescaped: LevelSQL.level(at: "\(now.timeIntervalSince1970)::double precision")) <> 'nothing'
                    """, logger: self.logger).collect()
                guard let row = state.first?.makeRandomAccess() else { continue }
                if let event = try Rows.unreadReminder(row, userID: userID, seq: seq, at: now) { events.append(event) }
            }
            return try await Self.insertWebhooks(events, on: connection, logger: self.logger)
        }
    }

    public func cancelReminders(of userID: String) async throws {
        try await database.query("DELETE FROM unread_reminders WHERE user_id = \(userID)", logger: logger)
    }

    public func webhookCount() async throws -> Int {
        let rows = try await database.query("SELECT count(*) FROM webhook_jobs", logger: logger)
        return Int(try rows.first.map { try $0.decode(Int64.self) } ?? 0)
    }
}
