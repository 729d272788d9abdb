import Foundation
import HeraldCore
import HeraldRecords

/// Read markers, levels and notification settings on SQLite.
extension SQLiteStore {
    public func markRead(_ read: ReadMark) async throws -> ReadOutcome {
        let (userID, conversationID, seq) = (read.userID, read.conversationID, read.upTo)
        let now = clock.now()
        let move: @Sendable (SQLiteHandle) throws -> ReadOutcome = { connection in
            var outcome = ReadOutcome()
            let moved = try connection.query(
                """
                UPDATE members SET read_seq = max(read_seq,
                    min(?3, coalesce((SELECT max(seq) FROM messages WHERE conversation_id = ?1), 0)))
                WHERE conversation_id = ?1 AND user_id = ?2 AND removed_seq IS NULL
                  AND read_seq < min(?3, coalesce((SELECT max(seq) FROM messages WHERE conversation_id = ?1), 0))
                RETURNING read_seq
                """,
                [.text(conversationID), .text(userID), .integer(Int(seq))]
            )
            if read.webhook, let marker = moved.first?.column("read_seq")?.integer {
                outcome.events = try Self.insertWebhooks([NewWebhookEvent.read(
                    conversationID: conversationID, userID: userID, upTo: Int64(marker))], on: connection)
            }
            if let due = read.clearsDue {
                outcome.clears = try Self.clearsAfterRead(
                    of: userID, in: conversationID, except: read.device, due: due, at: now, trail: self.trailSwitch.isOn,
                    on: connection)
            }
            return outcome
        }
        // One statement is a transaction of its own; with an event or clears, they join it in one.
        if read.webhook || read.clearsDue != nil {
            return try await database.transaction(move)
        } else {
            return try await database.perform(move)
        }
    }

    public func setLevel(_ choice: LevelChoice?, userID: String, conversationID: String) async throws {
        let until: SQLiteValue = choice?.until.map { .float($0.timeIntervalSince1970) } ?? .null
        try await database.perform { connection in
            _ = try connection.query(
                """
                UPDATE members SET level = ?3, level_until = ?4
                WHERE conversation_id = ?1 AND user_id = ?2 AND removed_seq IS NULL
                """,
                [.text(conversationID), .text(userID), .optionalText(choice?.level.rawValue), until]
            )
        }
    }

    public func notificationSettings(of userID: String) async throws -> NotificationSettings {
        try await database.perform { connection in
            let rows = try connection.query("SELECT body FROM notification_settings WHERE user_id = ?1", [.text(userID)])
            return LevelSQL.settings(rows.first?.column("body")?.string)
        }
    }

    public func setNotificationSettings(_ settings: NotificationSettings, of userID: String) async throws {
        let body = try LevelSQL.body(settings)
        try await database.perform { connection in
            _ = try connection.query(
                """
                INSERT INTO notification_settings (user_id, default_level, badge_counts_muted, body) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT (user_id) DO UPDATE SET default_level = excluded.default_level,
                    badge_counts_muted = excluded.badge_counts_muted, body = excluded.body
                """,
                [.text(userID), .text(settings.defaultLevel.rawValue), .integer(settings.badgeCountsMuted ? 1 : 0),
                 .text(body)]
            )
        }
    }
}
