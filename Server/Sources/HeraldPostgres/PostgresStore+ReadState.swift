import Foundation
import HeraldCore
import HeraldRecords
import PostgresNIO

/// Read markers, levels and notification settings on PostgreSQL.
extension PostgresStore {
    public func markRead(_ read: ReadMark) async throws -> ReadOutcome {
        let (userID, conversationID, seq) = (read.userID, read.conversationID, read.upTo)
        let move: PostgresQuery = """
            UPDATE members SET read_seq = target.seq
            FROM (SELECT least(\(seq), coalesce((SELECT max(seq) FROM messages WHERE conversation_id = \(conversationID)), 0)) AS seq) AS target
            WHERE conversation_id = \(conversationID) AND user_id = \(userID) AND removed_seq IS NULL
              AND read_seq < target.seq
            RETURNING read_seq
            """
        guard read.webhook || read.clearsDue != nil else {
            try await database.query(move, logger: logger)
            return ReadOutcome()
        }
        return try await transaction { connection in
            var outcome = ReadOutcome()
            // The log's counter is shared: appends in flight commit first, and those after wait, so the event follows
            // exactly the entries committed before it.
            if read.webhook {
                try await connection.query("SELECT seq FROM message_seq WHERE id = 1 FOR SHARE", logger: self.logger)
            }
            let moved = try await connection.query(move, logger: self.logger).collect()
            if read.webhook, let marker = try moved.first.map({ try $0.decode(Int64.self) }) {
                outcome.events = try await Self.insertWebhooks(
                    [NewWebhookEvent.read(conversationID: conversationID, userID: userID, upTo: marker)],
                    on: connection, logger: self.logger)
            }
            if let due = read.clearsDue {
                outcome.clears = try await Self.clearsAfterRead(
                    of: userID, in: conversationID, except: read.device, due: due, at: self.clock.now(),
                    trail: self.trailSwitch.isOn, on: connection, logger: self.logger)
            }
            return outcome
        }
    }

    public func setLevel(_ choice: LevelChoice?, userID: String, conversationID: String) async throws {
        try await database.query(
            """
            UPDATE members SET level = \(choice?.level.rawValue), level_until = \(choice?.until?.timeIntervalSince1970)
            WHERE conversation_id = \(conversationID) AND user_id = \(userID) AND removed_seq IS NULL
            """,
            logger: logger)
    }

    public func notificationSettings(of userID: String) async throws -> NotificationSettings {
        let rows = try await database.query(
            "SELECT body FROM notification_settings WHERE user_id = \(userID)", logger: logger)
        return LevelSQL.settings(try rows.first.map { try $0.decode(String.self) })
    }

    public func setNotificationSettings(_ settings: NotificationSettings, of userID: String) async throws {
        try await database.query(
            """
            INSERT INTO notification_settings (user_id, default_level, badge_counts_muted, body)
            VALUES (\(userID), \(settings.defaultLevel.rawValue), \(settings.badgeCountsMuted), \(try LevelSQL.body(settings)))
            ON CONFLICT (user_id) DO UPDATE SET default_level = excluded.default_level,
                badge_counts_muted = excluded.badge_counts_muted, body = excluded.body
            """,
            logger: logger)
    }
}
