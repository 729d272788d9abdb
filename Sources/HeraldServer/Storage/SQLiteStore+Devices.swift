import Foundation

/// The devices on SQLite.
extension SQLiteStore {
    public func registerDevice(_ device: DeviceRegistration, limit: Int) async throws {
        try await database.transaction { connection in
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
            for row in previous {
                try Self.forgetPushes(userID: row.column("user_id")?.string ?? "", deviceID: row.column("id")?.string ?? "", on: connection)
            }
            try connection.query(
                """
                INSERT INTO devices (user_id, id, platform, token, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
                ON CONFLICT(user_id, id) DO UPDATE SET platform = excluded.platform, token = excluded.token,
                    updated_at = excluded.updated_at
                """,
                [.text(device.userID), .text(device.id), .text(device.platform.rawValue), .text(device.token),
                 .float(Date().timeIntervalSince1970)]
            )
        }
    }

    public func removeDevice(id: String, userID: String, webhook: Bool) async throws -> Bool {
        try await database.transaction { connection in
            let rows = try connection.query(
                "DELETE FROM devices WHERE user_id = ?1 AND id = ?2 RETURNING platform", [.text(userID), .text(id)])
            try Self.forgetPushes(userID: userID, deviceID: id, on: connection)
            if webhook, let platform = rows.first?.column("platform")?.string.flatMap(DeviceRegistration.Platform.init) {
                _ = try Self.insertWebhooks(
                    [NewWebhookEvent.deviceRemoved(userID: userID, deviceID: id, platform: platform)], on: connection)
            }
            return !rows.isEmpty
        }
    }

    /// A removed device's pushes go with it.
    private static func forgetPushes(userID: String, deviceID: String, on connection: SQLiteHandle) throws {
        try connection.query("DELETE FROM push_jobs WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
        try connection.query("DELETE FROM push_shown WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
        try connection.query("DELETE FROM push_sent WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
    }

    public func devices(of userID: String) async throws -> [DeviceRegistration] {
        try await database.perform { connection in
            let rows = try connection.query(
                "SELECT id, platform, token FROM devices WHERE user_id = ?1 ORDER BY id", [.text(userID)])
            return rows.compactMap { row in
                guard let id = row.column("id")?.string, let token = row.column("token")?.string,
                      let platform = row.column("platform")?.string.flatMap(DeviceRegistration.Platform.init)
                else { return nil }
                return DeviceRegistration(id: id, userID: userID, platform: platform, token: token)
            }
        }
    }
}
