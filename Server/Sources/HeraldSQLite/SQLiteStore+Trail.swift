import Foundation
import HeraldCore
import HeraldRecords

extension SQLiteStore {
    public func recordTrail(_ steps: [TrailStep]) async throws {
        guard trailSwitch.isOn, !steps.isEmpty else { return }
        try await database.transaction { connection in
            try Self.insertTrail(steps, on: connection, when: true)
        }
    }

    /// Inserts `steps`, a few hundred a statement, when the trail is on (`isOn`).
    package static func insertTrail(_ steps: [TrailStep], on connection: SQLiteHandle, when isOn: Bool) throws {
        guard isOn, !steps.isEmpty else { return }
        for start in stride(from: 0, to: steps.count, by: 256) {
            let rows = steps[start..<min(start + 256, steps.count)].map { step -> [SQLiteValue] in
                [.float(step.at.timeIntervalSince1970), .text(step.conversationID), .integer(Int(step.seq)),
                 .text(step.userID), .text(step.deviceID), .text(step.kind.rawValue), .optionalText(step.storedReasons),
                 .optionalText(step.detail)]
            }
            let values = SQLiteHandle.padded(rows, width: 8)
            try connection.query(
                """
                INSERT INTO delivery_trail (at, conversation_id, seq, user_id, device_id, step, reasons, detail)
                SELECT * FROM (VALUES \(values.placeholders)) AS t WHERE t.column1 IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.column4 AND u.erased)
                """,
                values.binds)
        }
    }

    /// The steps of the alerts a statement deleted (rows of `user_id`, `device_id`, `conversation_id`, `seq`), all
    /// of `kind`, at `now`.
    package static func heldBack(_ rows: [SQLiteValues], kind: TrailStep.Kind, at now: Date) -> [TrailStep] {
        rows.compactMap { row in
            guard let userID = row.column("user_id")?.string, let deviceID = row.column("device_id")?.string,
                  let conversationID = row.column("conversation_id")?.string, let seq = row.column("seq")?.integer
            else { return nil }
            return TrailStep(
                conversationID: conversationID, seq: Int64(seq), userID: userID, deviceID: deviceID, at: now, kind: kind)
        }
    }

    public func trail(of conversationID: String, seq: Int64, userID: String?) async throws -> [TrailStep] {
        try await database.perform { connection in
            try connection.query(
                """
                SELECT at, conversation_id, seq, user_id, device_id, step, reasons, detail FROM delivery_trail
                WHERE seq = ?1 AND conversation_id = ?2 AND (?3 IS NULL OR user_id = ?3) ORDER BY at, id
                """,
                [.integer(Int(seq)), .text(conversationID), .optionalText(userID)]
            ).compactMap(Rows.trailStep)
        }
    }

    public func recentTrail(of userID: String, limit: Int) async throws -> [TrailStep] {
        try await database.perform { connection in
            try connection.query(
                """
                SELECT t.at, t.conversation_id, t.seq, t.user_id, t.device_id, t.step, t.reasons, t.detail,
                       m.id AS message_id
                FROM (SELECT *, row_number() OVER (PARTITION BY device_id ORDER BY at DESC, id DESC) AS n
                      FROM delivery_trail WHERE user_id = ?1 AND device_id <> ''
                    AND step NOT IN ('queued', 'skipped')) t
                LEFT JOIN messages m ON m.seq = t.seq AND m.conversation_id = t.conversation_id
                WHERE t.n <= ?2 ORDER BY t.at DESC, t.id DESC
                """,
                [.text(userID), .integer(limit)]
            ).compactMap(Rows.trailStep)
        }
    }

    public func confirmations(of userID: String) async throws -> [String: Int64] {
        try await database.perform { connection in
            var confirmed: [String: Int64] = [:]
            for row in try connection.query("SELECT device, through FROM push_receipts WHERE user_id = ?1", [.text(userID)]) {
                if let device = row.column("device")?.string, let through = row.column("through")?.integer {
                    confirmed[device] = Int64(through)
                }
            }
            return confirmed
        }
    }

    public func trailSubject(conversationID: String, messageID: String) async throws -> TrailSubject? {
        try await database.perform { connection in
            guard let message = try connection.query(
                """
                SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent,
                       m.mentions, m.edits, m.deleted, c.kind, c.title, u.name AS sender_name,
                       u.picture AS sender_picture
                FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN users u ON u.id = m.sender_id
                WHERE m.conversation_id = ?1 AND m.id = ?2
                """, [.text(conversationID), .text(messageID)]
            ).first.map({ try Rows.incoming($0) }), let seq = message.message.seq else { return nil }
            let members = try connection.query(
                "SELECT user_id, read_seq, added_seq, removed_seq FROM members WHERE conversation_id = ?1",
                [.text(conversationID)]
            ).compactMap { row -> (user: String, read: Int64, added: Int64, removed: Int64?)? in
                guard let user = row.column("user_id")?.string else { return nil }
                return (user, Int64(row.column("read_seq")?.integer ?? 0), Int64(row.column("added_seq")?.integer ?? 0),
                        row.column("removed_seq")?.integer.map(Int64.init))
            }
            return TrailSubject(message: message, readMarkers: TrailSubject.reached(members, seq: seq))
        }
    }

    @discardableResult
    public func forgetTrail(before date: Date) async throws -> Int {
        // In batches: the writer is not held long by a purge, however much is old.
        var total = 0
        while true {
            let deleted = try await database.perform { connection in
                try connection.query(
                    """
                    DELETE FROM delivery_trail WHERE id IN (
                        SELECT id FROM delivery_trail WHERE at < ?1 ORDER BY at LIMIT \(Self.trailPurgeBatch))
                    RETURNING id
                    """, [.float(date.timeIntervalSince1970)]).count
            }
            total += deleted
            if deleted < Self.trailPurgeBatch { return total }
        }
    }

    /// The most steps one purge statement deletes.
    package static var trailPurgeBatch: Int { 5_000 }
}
