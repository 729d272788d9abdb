import Foundation
import HeraldProtocol
import HeraldRecords

/// The webhook outbox on SQLite.
extension SQLiteStore {
    /// Inserts `events`; one without a seq takes the log's last.
    package static func insertWebhooks(_ events: [NewWebhookEvent], on connection: SQLiteHandle) throws -> Int {
        guard !events.isEmpty else { return 0 }
        let latest = events.contains { $0.seq == nil } ? try latestSeq(on: connection) : 0
        for event in events {
            let time = event.time.timeIntervalSince1970
            try connection.query(
                """
                INSERT INTO webhook_jobs (type, ordering_key, conversation_id, seq, rank, data, created_at, due_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
                """,
                [.text(event.type.rawValue), .text(event.orderingKey), .optionalText(event.conversationID),
                 .integer(Int(event.seq ?? latest)), .integer(event.rank), .text(event.dataJSON), .float(time)])
        }
        return events.count
    }

    /// Keeps the first reminder of each member and conversation: a later message does not move it.
    package static func remind(_ reminders: [NewUnreadReminder], on connection: SQLiteHandle) throws {
        let now = Date().timeIntervalSince1970
        for reminder in reminders {
            try connection.query(
                """
                INSERT OR IGNORE INTO unread_reminders (user_id, conversation_id, seq, created_at, due_at)
                VALUES (?1, ?2, ?3, ?4, ?5)
                """,
                [.text(reminder.userID), .text(reminder.conversationID), .integer(Int(reminder.seq)), .float(now),
                 .float(reminder.due.timeIntervalSince1970)])
        }
    }

    public func leaseWebhooks(now: Date, limit: Int, lease: Duration) async throws -> (jobs: [WebhookJob], nextDue: Date?) {
        let now = now.timeIntervalSince1970
        return try await database.transaction { connection in
            let rows = try connection.query(
                """
                SELECT j.id, j.type, j.seq, j.conversation_id, j.data, j.created_at, j.attempts FROM webhook_jobs j
                WHERE j.due_at <= ?1 AND j.leased_until <= ?1
                  AND j.seq <= (SELECT seq FROM log_cursors WHERE name = 'webhook')
                  AND NOT EXISTS (SELECT 1 FROM webhook_jobs k WHERE k.ordering_key = j.ordering_key
                                  AND (k.seq, k.rank, k.id) < (j.seq, j.rank, j.id))
                ORDER BY j.id LIMIT ?2
                """,
                [.float(now), .integer(limit)])
            let jobs = try rows.map(Rows.webhookJob)
            for job in jobs {
                try connection.query(
                    "UPDATE webhook_jobs SET leased_until = ?2 WHERE id = ?1",
                    [.integer(Int(job.id)), .float(now + lease.seconds)])
            }
            // When the next one can go: the earliest due among the first events of their conversation or user (one
            // queued behind a failing one waits for it, however long ago it was due), within the feed's place.
            let next = try connection.query(
                """
                SELECT min(j.due_at) AS due FROM webhook_jobs j
                WHERE j.leased_until <= ?1 AND j.seq <= (SELECT seq FROM log_cursors WHERE name = 'webhook')
                  AND NOT EXISTS (SELECT 1 FROM webhook_jobs k WHERE k.ordering_key = j.ordering_key
                                  AND (k.seq, k.rank, k.id) < (j.seq, j.rank, j.id))
                """,
                [.float(now)])
            return (jobs, next.first?.column("due")?.double.map { Date(timeIntervalSince1970: $0) })
        }
    }

    public func finishWebhook(id: Int64) async throws {
        try await database.perform { connection in
            _ = try connection.query("DELETE FROM webhook_jobs WHERE id = ?1", [.integer(Int(id))])
        }
    }

    public func retryWebhook(id: Int64, at due: Date) async throws {
        try await database.perform { connection in
            _ = try connection.query(
                "UPDATE webhook_jobs SET attempts = attempts + 1, due_at = ?2, leased_until = 0 WHERE id = ?1",
                [.integer(Int(id)), .float(due.timeIntervalSince1970)])
        }
    }

    public func releaseWebhookLeases() async throws {
        try await database.perform { connection in
            _ = try connection.query("UPDATE webhook_jobs SET leased_until = 0 WHERE leased_until > 0")
        }
    }

    public func releaseWebhooks(ids: [Int64], now: Date) async throws {
        guard !ids.isEmpty else { return }
        try await database.transaction { connection in
            for id in ids {
                try connection.query(
                    "UPDATE webhook_jobs SET leased_until = 0 WHERE id = ?1 AND leased_until > ?2",
                    [.integer(Int(id)), .float(now.timeIntervalSince1970)])
            }
        }
    }

    public func fireReminders(now: Date, limit: Int) async throws -> Int {
        try await database.transaction { connection in
            let due = try connection.query(
                """
                DELETE FROM unread_reminders WHERE rowid IN (
                    SELECT rowid FROM unread_reminders WHERE due_at <= ?1 ORDER BY due_at LIMIT ?2)
                RETURNING user_id, conversation_id, seq, created_at
                """,
                [.float(now.timeIntervalSince1970), .integer(limit)])
            var events: [NewWebhookEvent] = []
            for reminder in due {
                let userID = try reminder.text("user_id")
                let conversationID = try reminder.text("conversation_id")
                let seq = try reminder.integer("seq")
                // Still a member not at `nothing` now, and still not read up to it: how many from others they have not read.
                let state = try connection.query(
                    """
                    SELECT c.id, c.kind, c.title, (SELECT count(*) FROM (SELECT 1 FROM messages m
                        WHERE m.conversation_id = me.conversation_id AND m.seq > me.read_seq AND m.sender_id <> me.user_id
                          AND m.event IS NULL AND NOT m.deleted LIMIT ?3)) AS unread
                    FROM members me JOIN conversations c ON c.id = me.conversation_id \(LevelSQL.joinSettings)
                    WHERE me.conversation_id = ?1 AND me.user_id = ?2 AND me.removed_seq IS NULL AND me.read_seq < ?4
                      AND \(LevelSQL.level(at: "?5")) <> 'nothing'
                      AND c.deleted = 0
                    """,
                    [.text(conversationID), .text(userID), .integer(ConversationSummary.unreadLimit), .integer(Int(seq)),
                     .float(now.timeIntervalSince1970)])
                guard let row = state.first else { continue }
                if let event = try Rows.unreadReminder(row, userID: userID, seq: seq, at: now) { events.append(event) }
            }
            return try Self.insertWebhooks(events, on: connection)
        }
    }

    public func cancelReminders(of userID: String) async throws {
        try await database.perform { connection in
            _ = try connection.query("DELETE FROM unread_reminders WHERE user_id = ?1", [.text(userID)])
        }
    }

    public func webhookCount() async throws -> Int {
        try await database.perform { connection in
            try connection.query("SELECT count(*) AS n FROM webhook_jobs").first?.column("n")?.integer ?? 0
        }
    }
}
