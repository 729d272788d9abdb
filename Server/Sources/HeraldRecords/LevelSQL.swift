import Foundation
import HeraldCore

/// The notification levels in SQL, for both stores: the level in force for a member row `me` (beside its user's
/// settings row `ns`, joined with `LEFT JOIN notification_settings ns ON ns.user_id = me.user_id`), as
/// ``NotificationPolicy/interruption(for:in:to:level:settings:)`` reads it.
package enum LevelSQL {
    /// The join of the member's settings.
    package static let joinSettings = "LEFT JOIN notification_settings ns ON ns.user_id = me.user_id"

    /// The level in force at `now` (a bind or a literal): the member's own while it holds, else their default.
    package static func level(at now: String) -> String {
        """
        (CASE WHEN me.level IS NOT NULL AND (me.level_until IS NULL OR me.level_until > \(now)) THEN me.level \
        ELSE coalesce(ns.default_level, 'all') END)
        """
    }

    /// Whether the member's unread messages in the conversation count towards their badge at `now`: unless it is at
    /// `nothing` and they did not ask for muted conversations to count. `countsMuted` is the store's truth test of
    /// `ns.badge_counts_muted`.
    package static func countsTowardsBadge(at now: String, countsMuted: String) -> String {
        "(\(countsMuted) OR \(level(at: now)) <> 'nothing')"
    }

    /// The member's own level from the row's `level` and `level_until` columns; nil when they follow the default.
    package static func choice(_ row: some StoredRow) throws -> LevelChoice? {
        guard let name = try row.optionalText("level"), let level = NotificationLevel(rawValue: name) else { return nil }
        return LevelChoice(level: level, until: try row.optionalDouble("level_until").map(Date.init(timeIntervalSince1970:)))
    }

    /// Settings kept as JSON in `body`; the defaults for NULL (a user who set nothing).
    package static func settings(_ body: String?) -> NotificationSettings {
        body.flatMap { try? decoder.decode(NotificationSettings.self, from: Data($0.utf8)) } ?? NotificationSettings()
    }

    /// Settings as the `body` column keeps them.
    package static func body(_ settings: NotificationSettings) throws -> String {
        String(decoding: try encoder.encode(settings), as: UTF8.self)
    }

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }()

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
}
