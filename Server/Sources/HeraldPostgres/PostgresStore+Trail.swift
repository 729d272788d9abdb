import Foundation
import HeraldCore
import HeraldRecords
import Logging
import PostgresNIO

extension PostgresStore {
    public func recordTrail(_ steps: [TrailStep]) async throws {
        guard trailSwitch.isOn, !steps.isEmpty else { return }
        try await transaction { connection in
            try await Self.insertTrail(steps, on: connection, when: true, logger: self.logger)
        }
    }

    /// A step as the insert's JSON carries it.
    private struct TrailRow: Encodable {
        var at: Double
        var conversation_id: String
        var seq: Int64
        var user_id: String
        var device_id: String
        var step: String
        var reasons: String?
        var detail: String?
    }

    /// Inserts `steps` in one statement, when the trail is on (`isOn`).
    package static func insertTrail(
        _ steps: [TrailStep], on connection: PostgresConnection, when isOn: Bool, logger: Logger
    ) async throws {
        guard isOn, !steps.isEmpty else { return }
        let rows = steps.map {
            TrailRow(
                at: $0.at.timeIntervalSince1970, conversation_id: $0.conversationID, seq: $0.seq, user_id: $0.userID,
                device_id: $0.deviceID, step: $0.kind.rawValue, reasons: $0.storedReasons, detail: $0.detail)
        }
        let json = String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO delivery_trail (at, conversation_id, seq, user_id, device_id, step, reasons, detail)
            SELECT at, conversation_id, seq, user_id, device_id, step, reasons, detail
            FROM jsonb_to_recordset(\(json)::jsonb) AS t(at double precision, conversation_id text, seq bigint,
                user_id text, device_id text, step text, reasons text, detail text)
            WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.user_id AND u.erased)
            """, logger: logger)
    }

    /// The steps of the alerts a statement deleted (rows of `user_id`, `device_id`, `conversation_id`, `seq`), all
    /// of `kind`, at `now`.
    package static func heldBack(_ rows: [PostgresRow], kind: TrailStep.Kind, at now: Date) throws -> [TrailStep] {
        try rows.map { row in
            let (userID, deviceID, conversationID, seq) = try row.decode((String, String, String, Int64).self)
            return TrailStep(
                conversationID: conversationID, seq: seq, userID: userID, deviceID: deviceID, at: now, kind: kind)
        }
    }

    public func trail(of conversationID: String, seq: Int64, userID: String?) async throws -> [TrailStep] {
        let rows = try await database.query(
            """
            SELECT at, conversation_id, seq, user_id, device_id, step, reasons, detail FROM delivery_trail
            WHERE seq = \(seq) AND conversation_id = \(conversationID)
              AND (\(userID)::text IS NULL OR user_id = \(userID)) ORDER BY at, id
            """, logger: logger)
        var steps: [TrailStep] = []
        for row in rows {
            if let step = try Rows.trailStep(row.makeRandomAccess()) { steps.append(step) }
        }
        return steps
    }

    public func recentTrail(of userID: String, limit: Int) async throws -> [TrailStep] {
        let rows = try await database.query(
            """
            SELECT t.at, t.conversation_id, t.seq, t.user_id, t.device_id, t.step, t.reasons, t.detail,
                   m.id AS message_id
            FROM (SELECT *, row_number() OVER (PARTITION BY device_id ORDER BY at DESC, id DESC) AS n
                  FROM delivery_trail WHERE user_id = \(userID) AND device_id <> ''
                    AND step NOT IN ('queued', 'skipped')) t
            LEFT JOIN messages m ON m.seq = t.seq AND m.conversation_id = t.conversation_id
            WHERE t.n <= \(limit) ORDER BY t.at DESC, t.id DESC
            """, logger: logger)
        var steps: [TrailStep] = []
        for row in rows {
            if let step = try Rows.trailStep(row.makeRandomAccess()) { steps.append(step) }
        }
        return steps
    }

    public func confirmations(of userID: String) async throws -> [String: Int64] {
        let rows = try await database.query(
            "SELECT device, through FROM push_receipts WHERE user_id = \(userID)", logger: logger)
        var confirmed: [String: Int64] = [:]
        for row in rows {
            let (device, through) = try row.decode((String, Int64).self)
            confirmed[device] = through
        }
        return confirmed
    }

    public func trailSubject(conversationID: String, messageID: String) async throws -> TrailSubject? {
        try await transaction { connection in
            guard let message = try await connection.query(
                """
                SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent,
                       m.mentions, m.edits, m.deleted, c.kind, c.title, u.name AS sender_name,
                       u.picture AS sender_picture
                FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN users u ON u.id = m.sender_id
                WHERE m.conversation_id = \(conversationID) AND m.id = \(messageID)
                """, logger: self.logger
            ).collect().first.map({ try Rows.incoming($0.makeRandomAccess()) }), let seq = message.message.seq
            else { return nil }
            var members: [(user: String, read: Int64, added: Int64, removed: Int64?)] = []
            for try await (user, read, added, removed) in try await connection.query(
                "SELECT user_id, read_seq, added_seq, removed_seq FROM members WHERE conversation_id = \(conversationID)",
                logger: self.logger
            ).decode((String, Int64, Int64, Int64?).self) {
                members.append((user, read, added, removed))
            }
            return TrailSubject(message: message, readMarkers: TrailSubject.reached(members, seq: seq))
        }
    }

    @discardableResult
    public func forgetTrail(before date: Date) async throws -> Int {
        // In batches: no purge holds its rows long, however much is old.
        var total = 0
        while true {
            let deleted = try await database.query(
                """
                DELETE FROM delivery_trail WHERE id IN (
                    SELECT id FROM delivery_trail WHERE at < \(date.timeIntervalSince1970) ORDER BY at LIMIT 5000)
                RETURNING id
                """, logger: logger
            ).count
            total += deleted
            if deleted < 5_000 { return total }
        }
    }
}
