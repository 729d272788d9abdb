import Foundation
import HeraldProtocol
import HeraldRecords

/// The devices on SQLite.
extension SQLiteStore {
    public func registerDevice(_ device: DeviceRegistration, limit: Int, keyDigest: String?) async throws {
        let owners = deviceOwners
        _ = try await database.transaction { connection -> Set<String> in
            let existing = try connection.query(
                "SELECT 1 FROM devices WHERE user_id = ?1 AND id = ?2", [.text(device.userID), .text(device.id)])
            if existing.isEmpty {
                let count = try connection.query(
                    "SELECT count(*) AS n FROM devices WHERE user_id = ?1", [.text(device.userID)])
                if (count.first?.column("n")?.integer ?? 0) >= limit {
                    throw StoreError.deviceLimit(limit)
                }
            }
            // The token moves to this device, from whichever user or device held it before.
            let previous = try connection.query(
                "DELETE FROM devices WHERE platform = ?1 AND token = ?2 AND NOT (user_id = ?3 AND id = ?4) RETURNING user_id, id",
                [.text(device.platform.rawValue), .text(device.token), .text(device.userID), .text(device.id)]
            )
            var formerOwners = Set<String>()
            for row in previous {
                let userID = row.column("user_id")?.string ?? ""
                try Self.forgetPushes(userID: userID, deviceID: row.column("id")?.string ?? "", on: connection)
                if userID != device.userID { formerOwners.insert(userID) }
            }
            try connection.query(
                """
                INSERT INTO devices (user_id, id, platform, token, updated_at, key_digest, seen_at, push_keys)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5, ?7)
                ON CONFLICT(user_id, id) DO UPDATE SET platform = excluded.platform, token = excluded.token,
                    updated_at = excluded.updated_at, key_digest = excluded.key_digest, seen_at = excluded.seen_at,
                    push_keys = excluded.push_keys
                """,
                [.text(device.userID), .text(device.id), .text(device.platform.rawValue), .text(device.token),
                 .float(Date().timeIntervalSince1970), keyDigest.map { .text($0) } ?? .null,
                 .optionalText(device.keys?.stored)]
            )
            owners.gained(device.userID)
            return try formerOwners.filter { try DeviceOwners.hasNone($0, on: connection) }
        } committed: { leftWithout in
            owners.lost(leftWithout)
        }
    }

    public func removeDevice(id: String, userID: String, webhook: Bool) async throws -> Bool {
        let owners = deviceOwners
        return try await database.transaction { connection -> (removed: Bool, lastOne: Bool) in
            let rows = try connection.query(
                "DELETE FROM devices WHERE user_id = ?1 AND id = ?2 RETURNING platform", [.text(userID), .text(id)])
            try Self.forgetPushes(userID: userID, deviceID: id, on: connection)
            if webhook, let platform = rows.first?.column("platform")?.string.flatMap(DeviceRegistration.Platform.init) {
                _ = try Self.insertWebhooks(
                    [NewWebhookEvent.deviceRemoved(userID: userID, deviceID: id, platform: platform)], on: connection)
            }
            return (!rows.isEmpty, try DeviceOwners.hasNone(userID, on: connection))
        } committed: { outcome in
            if outcome.lastOne { owners.lost([userID]) }
        }.removed
    }

    /// A removed device's pushes go with it.
    private static func forgetPushes(userID: String, deviceID: String, on connection: SQLiteHandle) throws {
        try connection.query("DELETE FROM push_jobs WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
        try connection.query("DELETE FROM push_shown WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
        try connection.query("DELETE FROM push_sent WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
        try connection.query("DELETE FROM push_grants WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
        try connection.query("DELETE FROM push_receipts WHERE user_id = ?1 AND device = ?2", [.text(userID), .text(deviceID)])
    }

    public func pushedMessage(
        keyDigest: String, conversationID: String, messageID: String, since: Date
    ) async throws -> PushGrantLookup {
        try await database.perform { connection in
            let rows = try connection.query(
                """
                SELECT d.user_id, d.id, (
                    SELECT m.seq FROM messages m
                    JOIN push_grants g ON g.user_id = d.user_id AND g.device_id = d.id AND g.seq = m.seq AND g.granted_at >= ?4
                    JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = d.user_id
                        AND me.removed_seq IS NULL
                    JOIN conversations c ON c.id = m.conversation_id AND c.deleted = 0
                    WHERE m.conversation_id = ?2 AND m.id = ?3
                ) AS seq
                FROM devices d WHERE d.key_digest = ?1
                """,
                [.text(keyDigest), .text(conversationID), .text(messageID), .float(since.timeIntervalSince1970)])
            guard let row = rows.first, let userID = row.column("user_id")?.string, let deviceID = row.column("id")?.string
            else { return .unknownKey }
            guard let seq = row.column("seq")?.integer else { return .notGranted }
            return .granted(PushGrant(userID: userID, deviceID: deviceID, seq: Int64(seq)))
        }
    }

    public func setPermission(_ permission: DevicePermission, deviceID: String, userID: String) async throws -> Bool {
        try await database.perform { connection in
            !(try connection.query(
                "UPDATE devices SET permission = ?3, seen_at = ?4 WHERE user_id = ?1 AND id = ?2 RETURNING id",
                [.text(userID), .text(deviceID), .text(permission.rawValue), .float(Date().timeIntervalSince1970)]
            ).isEmpty)
        }
    }

    public func reportedDevices(of userID: String) async throws -> [ReportedDevice] {
        try await database.perform { connection in
            try connection.query(
                "SELECT user_id, id, platform, token, permission, seen_at, push_keys FROM devices WHERE user_id = ?1 ORDER BY id",
                [.text(userID)]
            ).compactMap(Rows.reportedDevice)
        }
    }

    public func devices(of userID: String) async throws -> [DeviceRegistration] {
        try await database.perform { connection in
            try connection.query(
                "SELECT user_id, id, platform, token, push_keys FROM devices WHERE user_id = ?1 ORDER BY id", [.text(userID)]
            ).compactMap(Rows.device)
        }
    }
}
