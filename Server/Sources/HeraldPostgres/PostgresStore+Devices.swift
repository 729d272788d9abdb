import Foundation
import HeraldProtocol
import HeraldRecords
import PostgresNIO

/// The devices on PostgreSQL.
extension PostgresStore {
    public func registerDevice(_ device: DeviceRegistration, limit: Int, keyDigest: String?) async throws {
        let now = Date().timeIntervalSince1970
        try await transaction { connection in
            // One registration of a user at a time, so two new devices at once cannot both pass the limit.
            try await connection.query(
                "SELECT 1 FROM users WHERE id = \(device.userID) FOR UPDATE", logger: self.logger)
            let existing = try await connection.query(
                "SELECT 1 FROM devices WHERE user_id = \(device.userID) AND id = \(device.id)", logger: self.logger).collect()
            if existing.isEmpty {
                let count = try await connection.query(
                    "SELECT count(*) FROM devices WHERE user_id = \(device.userID)", logger: self.logger).collect()
                if try count.first.map({ try $0.decode(Int64.self) }) ?? 0 >= limit {
                    throw StoreError.deviceLimit(limit)
                }
            }
            // The token moves to this device, from whichever user or device held it before.
            let previous = try await connection.query(
                """
                DELETE FROM devices WHERE platform = \(device.platform.rawValue) AND token = \(device.token)
                    AND NOT (user_id = \(device.userID) AND id = \(device.id))
                RETURNING user_id, id
                """, logger: self.logger)
            var moved: [(String, String)] = []
            for try await (userID, id) in previous.decode((String, String).self) { moved.append((userID, id)) }
            for (userID, id) in moved {
                try await Self.forgetPushes(userID: userID, deviceID: id, on: connection, logger: self.logger)
            }
            try await connection.query(
                """
                INSERT INTO devices (user_id, id, platform, token, updated_at, key_digest, seen_at, push_keys)
                VALUES (\(device.userID), \(device.id), \(device.platform.rawValue), \(device.token), \(now), \(keyDigest), \(now),
                    \(device.keys?.stored))
                ON CONFLICT (user_id, id) DO UPDATE SET platform = excluded.platform, token = excluded.token,
                    updated_at = excluded.updated_at, key_digest = excluded.key_digest, seen_at = excluded.seen_at,
                    push_keys = excluded.push_keys
                """, logger: self.logger)
        }
    }

    public func removeDevice(id: String, userID: String, webhook: Bool) async throws -> Bool {
        try await transaction { connection in
            // Its jobs first, then the device, then its jobs again: a send finishing meanwhile holds its job's row and
            // then takes the device's (`FOR SHARE`, to queue Expo's receipt only for a device still there), so taking
            // them in the other order deadlocks. A receipt it queued before the device went is the second pass's.
            try await Self.forgetPushes(userID: userID, deviceID: id, on: connection, logger: self.logger)
            let rows = try await connection.query(
                "DELETE FROM devices WHERE user_id = \(userID) AND id = \(id) RETURNING platform", logger: self.logger).collect()
            try await Self.forgetPushes(userID: userID, deviceID: id, on: connection, logger: self.logger)
            if webhook, let platform = try rows.first.map({ try $0.decode(String.self) }).flatMap(DeviceRegistration.Platform.init) {
                _ = try await Self.insertWebhooks(
                    [NewWebhookEvent.deviceRemoved(userID: userID, deviceID: id, platform: platform)],
                    on: connection, logger: self.logger)
            }
            return !rows.isEmpty
        }
    }

    /// A removed device's pushes go with it.
    private static func forgetPushes(userID: String, deviceID: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("DELETE FROM push_jobs WHERE user_id = \(userID) AND device_id = \(deviceID)", logger: logger)
        try await connection.query("DELETE FROM push_shown WHERE user_id = \(userID) AND device_id = \(deviceID)", logger: logger)
        try await connection.query("DELETE FROM push_sent WHERE user_id = \(userID) AND device_id = \(deviceID)", logger: logger)
        try await connection.query("DELETE FROM push_grants WHERE user_id = \(userID) AND device_id = \(deviceID)", logger: logger)
        try await connection.query("DELETE FROM push_receipts WHERE user_id = \(userID) AND device = \(deviceID)", logger: logger)
    }

    public func pushedMessage(
        keyDigest: String, conversationID: String, messageID: String, since: Date
    ) async throws -> PushGrantLookup {
        let rows = try await database.query(
            """
            SELECT d.user_id, d.id, (
                SELECT m.seq FROM messages m
                JOIN push_grants g ON g.user_id = d.user_id AND g.device_id = d.id AND g.seq = m.seq
                    AND g.granted_at >= \(since.timeIntervalSince1970)
                JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = d.user_id AND me.removed_seq IS NULL
                JOIN conversations c ON c.id = m.conversation_id AND NOT c.deleted
                WHERE m.conversation_id = \(conversationID) AND m.id = \(messageID)
            )
            FROM devices d WHERE d.key_digest = \(keyDigest)
            """, logger: logger)
        guard let row = rows.first else { return .unknownKey }
        let (userID, deviceID, seq) = try row.decode((String, String, Int64?).self)
        guard let seq else { return .notGranted }
        return .granted(PushGrant(userID: userID, deviceID: deviceID, seq: seq))
    }

    public func setPermission(_ permission: DevicePermission, deviceID: String, userID: String) async throws -> Bool {
        !(try await database.query(
            """
            UPDATE devices SET permission = \(permission.rawValue), seen_at = \(Date().timeIntervalSince1970)
            WHERE user_id = \(userID) AND id = \(deviceID) RETURNING id
            """, logger: logger).isEmpty)
    }

    public func reportedDevices(of userID: String) async throws -> [ReportedDevice] {
        let rows = try await database.query(
            "SELECT user_id, id, platform, token, permission, seen_at, push_keys FROM devices WHERE user_id = \(userID) ORDER BY id",
            logger: logger)
        return try rows.compactMap { try Rows.reportedDevice($0.makeRandomAccess()) }
    }

    public func devices(of userID: String) async throws -> [DeviceRegistration] {
        let rows = try await database.query(
            "SELECT user_id, id, platform, token, push_keys FROM devices WHERE user_id = \(userID) ORDER BY id", logger: logger)
        return try rows.compactMap { try Rows.device($0.makeRandomAccess()) }
    }
}
