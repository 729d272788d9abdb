import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords

extension SQLiteStore {
    public func pushTargets(_ queries: [PushTargetQuery]) async throws -> [[PushTarget]] {
        // Most members of a busy chat have no device: only those with one are asked about (``DeviceOwners``), and
        // a round where none has one asks the database nothing.
        let narrowed = queries.map { query in
            var query = query
            query.candidates = deviceOwners.among(query.candidates)
            return query
        }
        guard narrowed.contains(where: { !$0.candidates.isEmpty }) else { return queries.map { _ in [] } }
        // The devices, badges and choices of those who have a device, on the database's thread: a badge counts over
        // every conversation of its owner.
        let now = clock.now()
        return try await database.perform { connection in
            try narrowed.map { try Self.pushTargets($0, at: now, on: connection) }
        }
    }

    private static func pushTargets(_ query: PushTargetQuery, at now: Date, on connection: SQLiteHandle) throws -> [PushTarget] {
        guard !query.candidates.isEmpty else { return [] }
        // The members' devices, each with its owner's badge, level and settings, in one statement (the policy
        // decides on levels). A badge is counted only for a member with a device: one without has nothing to push.
        let rows = try connection.query(
            """
            WITH targets AS (
                SELECT me.user_id, me.level, me.level_until, me.read_seq, ns.body AS settings FROM members me \(LevelSQL.joinSettings)
                WHERE me.conversation_id = ?1 AND me.read_seq < ?3 AND me.removed_seq IS NULL
                  AND EXISTS (SELECT 1 FROM devices d WHERE d.user_id = me.user_id)),
            badges AS (
                SELECT me.user_id, sum(CASE WHEN \(Self.countsTowardsBadge) THEN (SELECT count(*) FROM (SELECT 1 FROM messages x
                    WHERE x.conversation_id = me.conversation_id AND x.seq > me.read_seq AND x.sender_id <> me.user_id
                      AND x.event IS NULL AND NOT x.deleted
                    LIMIT ?2)) ELSE 0 END) AS badge
                FROM members me \(LevelSQL.joinSettings)
                WHERE me.user_id IN (SELECT user_id FROM targets) AND me.removed_seq IS NULL GROUP BY me.user_id)
            SELECT d.user_id, d.id, d.platform, d.token, b.badge, t.level, t.level_until, t.settings, t.read_seq
            FROM targets t JOIN devices d ON d.user_id = t.user_id JOIN badges b ON b.user_id = t.user_id
            ORDER BY d.user_id, d.id
            """,
            [.text(query.conversationID), .integer(ConversationSummary.unreadLimit), .integer(Int(query.seq)),
             .float(now.timeIntervalSince1970)]
        )
        var settings: [String: NotificationSettings] = [:]
        return rows.compactMap { row in
            guard let device = try? Rows.device(row), query.candidates.contains(device.userID) else { return nil }
            let owner = settings[device.userID] ?? LevelSQL.settings(row.column("settings")?.string)
            settings[device.userID] = owner
            return PushTarget(
                device: device, badge: row.column("badge")?.integer ?? 0, level: try? LevelSQL.choice(row), settings: owner,
                readMarker: Int64(row.column("read_seq")?.integer ?? 0))
        }
    }

    /// Whether a member row counts towards its user's badge, with `now` bound at `?4`.
    package static let countsTowardsBadge = LevelSQL.countsTowardsBadge(at: "?4", countsMuted: "coalesce(ns.badge_counts_muted, 0) = 1")

    /// `userID`'s unread messages over all their conversations, each conversation counted up to
    /// ``ConversationSummary/unreadLimit`` as in their list.
    package static func badge(of userID: String, at now: Date, on connection: SQLiteHandle) throws -> Int {
        let rows = try connection.query(
            """
            SELECT coalesce(sum(CASE WHEN \(Self.countsTowardsBadge) THEN (SELECT count(*) FROM (SELECT 1 FROM messages x
                WHERE x.conversation_id = me.conversation_id AND x.seq > me.read_seq AND x.sender_id <> ?1
                  AND x.event IS NULL AND NOT x.deleted LIMIT ?2)) ELSE 0 END), 0)
                AS badge
            FROM members me \(LevelSQL.joinSettings) WHERE me.user_id = ?1 AND me.removed_seq IS NULL AND ?3 = ?3
            """,
            [.text(userID), .integer(ConversationSummary.unreadLimit), .integer(0), .float(now.timeIntervalSince1970)]
        )
        return Int(rows.first?.column("badge")?.integer ?? 0)
    }

    @discardableResult
    public func queuePushJobs(_ jobs: [NewPushJob]) async throws -> Int {
        guard !jobs.isEmpty else { return 0 }
        return try await database.transaction { connection in
            try Self.queue(jobs, on: connection)
        }
    }

    /// Inserts `jobs` a few hundred rows a statement (padded, so a few statements serve every size); the content
    /// most jobs of one message share is encoded once. With `membersOnly`, an alert for someone no longer a member of its conversation, or who has
    /// read it up to its message, is left out: a removal or a read committed while its round was deciding (which
    /// dropped the alerts waiting then, not this one). With `devicesOnly`, a job for a device no longer registered
    /// is left out: one removed while the push it follows from was in flight (nothing would ever lease it).
    package static func queue(
        _ jobs: [NewPushJob], on connection: SQLiteHandle, membersOnly: Bool = false, devicesOnly: Bool = false,
        collecting queued: QueuedAlerts? = nil
    ) throws -> Int {
        let now = Date().timeIntervalSince1970
        let encoder = JSONEncoder()
        var encoded: [PushContent: String] = [:]
        var added = 0
        for kind in [PushJob.Kind.alert, .clear, .receipt, .follow] {
            let ofKind = jobs.filter { $0.kind == kind }
            // A newer clear of a conversation (or follow-up of a message) replaces the one waiting, or the one in
            // flight, which then goes again once its send ends (``finishPushJobs(_:)``); anything else queued is left
            // as it is.
            let onConflict = kind == .clear || kind == .follow
                ? "DO UPDATE SET content = excluded.content, seq = excluded.seq, due_at = excluded.due_at, created_at = excluded.created_at, attempts = 0"
                : "DO NOTHING"
            var start = 0
            while start < ofKind.count {
                let chunk = ofKind[start..<min(start + 256, ofKind.count)]
                start += chunk.count
                let rows = try chunk.map { job -> [SQLiteValue] in
                    let content: String
                    if let known = encoded[job.content] {
                        content = known
                    } else {
                        content = String(decoding: try encoder.encode(job.content), as: UTF8.self)
                        encoded[job.content] = content
                    }
                    return [.text(job.kind.rawValue), .text(job.key), .text(job.userID), .text(job.deviceID),
                            .text(job.content.conversationID), .integer(Int(job.content.seq)), .text(content),
                            job.ticket.map { .text($0) } ?? .null, .float(now), .float(job.due.timeIntervalSince1970),
                            job.coveredBy.map { .text($0.rawValue) } ?? .null]
                }
                let values = SQLiteHandle.padded(rows, width: 11)
                let written = try connection.query(
                    """
                    INSERT INTO push_jobs (kind, job_key, user_id, device_id, conversation_id, seq, content, ticket, created_at, due_at, covered_by)
                    SELECT * FROM (VALUES \(values.placeholders)) AS job WHERE job.column1 IS NOT NULL\(devicesOnly ? """

                        AND EXISTS (SELECT 1 FROM devices d WHERE d.user_id = job.column3 AND d.id = job.column4)
                    """ : "")\(kind == .alert && membersOnly ? """

                        AND EXISTS (SELECT 1 FROM members m WHERE m.conversation_id = job.column5
                            AND m.user_id = job.column3 AND m.removed_seq IS NULL AND m.read_seq < job.column6)
                    """ : "")\(kind == .alert ? """

                        AND (job.column11 IS NULL OR NOT EXISTS (SELECT 1 FROM push_receipts r
                            WHERE r.user_id = job.column3 AND (job.column11 = 'member' OR r.device = job.column4)
                              AND r.through >= job.column6))
                    """ : "")
                    ON CONFLICT (kind, job_key, user_id, device_id) \(onConflict) RETURNING user_id, device_id, seq
                    """,
                    values.binds
                )
                added += written.count
                if let queued, kind == .alert {
                    for row in written {
                        guard let user = row.column("user_id")?.string, let device = row.column("device_id")?.string,
                              let seq = row.column("seq")?.integer else { continue }
                        queued.add(.init(userID: user, deviceID: device, seq: Int64(seq)))
                    }
                }
            }
        }
        return added
    }

    public func leasePushJobs(
        now: Date, platform: DeviceRegistration.Platform, limit: Int
    ) async throws -> (jobs: [PushJob], nextDue: Date?) {
        try await database.transaction { connection in
            let rows = try connection.query(
                """
                SELECT j.id, j.kind, j.user_id, j.device_id, j.content, j.ticket, j.created_at, j.attempts, j.due_at,
                       j.covered_by,
                       j.covered_by IS NOT NULL AND EXISTS (SELECT 1 FROM push_receipts r
                           WHERE r.user_id = j.user_id AND (j.covered_by = 'member' OR r.device = j.device_id)
                             AND r.through >= j.seq) AS covered,
                       d.token, d.push_keys
                FROM push_jobs j JOIN devices d ON d.user_id = j.user_id AND d.id = j.device_id
                WHERE j.leased = 0 AND j.due_at <= ?1 AND d.platform = ?3 AND \(PushOutboxSQL.notBehindItsAlert)
                ORDER BY j.due_at, j.id LIMIT ?2
                """,
                [.float(now.timeIntervalSince1970), .integer(limit), .text(platform.rawValue)]
            )
            let lease = OutboxRules.lease(try rows.map { row in
                let device = try row.optionalText("token").map {
                    DeviceRegistration(
                        id: try row.text("device_id"), userID: try row.text("user_id"), platform: platform, token: $0,
                        keys: try row.optionalText("push_keys").flatMap(PushEncryptionKeys.init(stored:)))
                }
                return try LeaseCandidate(row, device: device)
            }, now: now)
            for id in lease.dropped {
                try connection.query("DELETE FROM push_jobs WHERE id = ?1", [.integer(Int(id))])
            }
            try Self.insertTrail(lease.steps, on: connection, when: self.trailSwitch.isOn)
            for job in lease.jobs {
                try connection.query("UPDATE push_jobs SET leased = 1 WHERE id = ?1", [.integer(Int(job.id))])
            }
            for shown in lease.shown {
                try connection.query(
                    """
                    INSERT INTO push_shown (user_id, device_id, conversation_id, seq) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT (user_id, conversation_id, device_id) DO UPDATE SET seq = max(seq, excluded.seq)
                    """,
                    [.text(shown.userID), .text(shown.deviceID), .text(shown.conversationID), .integer(Int(shown.seq))]
                )
            }
            if !lease.grants.isEmpty {
                let values = SQLiteHandle.padded(lease.grants.map {
                    [.text($0.userID), .text($0.deviceID), .integer(Int($0.seq)), .float($0.grantedAt.timeIntervalSince1970),
                     .optionalText($0.shownAs)]
                }, width: 5)
                try connection.query(
                    """
                    INSERT INTO push_grants (user_id, device_id, seq, granted_at, shown_as)
                    SELECT * FROM (VALUES \(values.placeholders)) AS g WHERE g.column1 IS NOT NULL
                    ON CONFLICT DO UPDATE SET granted_at = excluded.granted_at, shown_as = excluded.shown_as
                    """,
                    values.binds)
            }
            let next = try connection.query(
                """
                SELECT min(j.due_at) AS due FROM push_jobs j JOIN devices d ON d.user_id = j.user_id AND d.id = j.device_id
                WHERE j.leased = 0 AND d.platform = ?1 AND \(PushOutboxSQL.notBehindItsAlert)
                """,
                [.text(platform.rawValue)])
            return (lease.jobs, next.first?.column("due")?.double.map(Date.init(timeIntervalSince1970:)))
        }
    }

    public func finishPushJobs(_ finished: [FinishedPush]) async throws {
        guard !finished.isEmpty else { return }
        try await database.transaction { connection in
            let now = Date().timeIntervalSince1970
            for done in finished {
                // A newer clear or follow-up that replaced the job while it was in flight (``queue``: a new
                // `created_at`) keeps the row, and goes next; deleting it would lose it.
                let replaced = try connection.query(
                    "DELETE FROM push_jobs WHERE id = ?1 AND created_at = ?2 RETURNING id",
                    [.integer(Int(done.job.id)), .float(done.job.createdAt.timeIntervalSince1970)]).isEmpty
                if replaced {
                    try connection.query(
                        "UPDATE push_jobs SET leased = 0 WHERE id = ?1 AND created_at <> ?2",
                        [.integer(Int(done.job.id)), .float(done.job.createdAt.timeIntervalSince1970)])
                }
            }
            for job in OutboxRules.remembered(finished) {
                try connection.query(
                    """
                    INSERT INTO push_sent (user_id, device_id, seq, sent_at) SELECT ?1, ?2, ?3, ?4
                    WHERE EXISTS (SELECT 1 FROM push_receipts WHERE user_id = ?1 AND device = ?2)
                    ON CONFLICT DO NOTHING
                    """,
                    [.text(job.device.userID), .text(job.device.id), .integer(Int(job.content.seq)), .float(now)])
            }
            try Self.insertTrail(finished.compactMap(\.step), on: connection, when: self.trailSwitch.isOn)
            let followUps = finished.compactMap(\.followUp)
            // A device removed while its push was in flight takes no receipt to check.
            if !followUps.isEmpty { _ = try Self.queue(followUps, on: connection, devicesOnly: true) }
        }
    }

    public func retryPushJob(id: Int64, at due: Date) async throws {
        try await database.perform { connection in
            _ = try connection.query(
                "UPDATE push_jobs SET leased = 0, attempts = attempts + 1, due_at = ?2 WHERE id = ?1",
                [.integer(Int(id)), .float(due.timeIntervalSince1970)])
        }
    }

    public func pushedDevices(of conversationID: String, messageID: String) async throws -> [PushedDevice] {
        let now = clock.now()
        return try await database.perform { connection in
            let rows = try connection.query(
                """
                SELECT g.user_id, g.device_id AS id, d.platform, d.token, g.shown_as, g.seq,
                    EXISTS (SELECT 1 FROM members me JOIN conversations c ON c.id = me.conversation_id
                        WHERE me.conversation_id = m.conversation_id AND me.user_id = g.user_id
                          AND me.removed_seq IS NULL AND c.deleted = 0 AND me.visible_from <= m.seq) AS readable,
                    (SELECT e.seq FROM push_grants e JOIN messages em ON em.seq = e.seq
                        WHERE e.user_id = g.user_id AND e.device_id = g.device_id AND e.shown_as = g.shown_as
                          AND e.seq < g.seq AND em.deleted = 0
                          AND EXISTS (SELECT 1 FROM members mr WHERE mr.conversation_id = m.conversation_id
                              AND mr.user_id = g.user_id AND mr.removed_seq IS NULL AND mr.visible_from <= e.seq)
                        ORDER BY e.seq DESC LIMIT 1) AS earlier
                FROM messages m
                JOIN push_grants g ON g.seq = m.seq
                JOIN devices d ON d.user_id = g.user_id AND d.id = g.device_id
                WHERE m.conversation_id = ?1 AND m.id = ?2 AND g.shown_as IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM push_grants later JOIN messages lm ON lm.seq = later.seq
                      WHERE later.user_id = g.user_id AND later.device_id = g.device_id AND later.seq > g.seq
                        AND later.shown_as = g.shown_as AND lm.deleted = 0)
                  AND EXISTS (SELECT 1 FROM push_shown s WHERE s.user_id = g.user_id AND s.device_id = g.device_id
                      AND s.conversation_id = m.conversation_id AND s.seq >= g.seq)
                ORDER BY g.user_id, g.device_id
                """,
                [.text(conversationID), .text(messageID)])
            var badges: [String: Int] = [:]
            return try rows.compactMap { row -> PushedDevice? in
                guard let device = try Rows.device(row), let shownAs = row.column("shown_as")?.string,
                      let seq = row.column("seq")?.integer
                else { return nil }
                let badge = try badges[device.userID] ?? Self.badge(of: device.userID, at: now, on: connection)
                badges[device.userID] = badge
                var shown = PushedDevice(device: device, shownAs: shownAs, seq: Int64(seq), badge: badge)
                shown.readable = try row.bool("readable")
                if let earlier = try row.optionalInteger("earlier") {
                    shown.earlier = try connection.query(
                        """
                        SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent,
                               m.mentions, m.edits, m.deleted, c.kind, c.title, u.name AS sender_name,
                               u.picture AS sender_picture
                        FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN users u ON u.id = m.sender_id
                        WHERE m.seq = ?1
                        """, [.integer(Int(earlier))]
                    ).first.map { try Rows.incoming($0) }
                }
                return shown
            }
        }
    }

    @discardableResult
    public func forgetPushGrants(before date: Date) async throws -> Int {
        try await database.perform { connection in
            try connection.query(
                "DELETE FROM push_grants WHERE granted_at < ?1 RETURNING seq", [.float(date.timeIntervalSince1970)]).count
        }
    }

    @discardableResult
    public func releasePushLeases() async throws -> Int {
        let forgotten = Date().addingTimeInterval(-Self.pushSentKept).timeIntervalSince1970
        return try await database.perform { connection in
            try connection.query("DELETE FROM push_sent WHERE sent_at < ?1", [.float(forgotten)])
            return try connection.query("UPDATE push_jobs SET leased = 0 WHERE leased = 1 RETURNING id").count
        }
    }

    public func releasePushJobs(ids: [Int64], now: Date) async throws {
        guard !ids.isEmpty else { return }
        try await database.transaction { connection in
            for id in ids {
                try connection.query("UPDATE push_jobs SET leased = 0 WHERE id = ?1 AND leased = 1", [.integer(Int(id))])
            }
        }
    }

    @discardableResult
    public func recordConfirmations(_ confirmations: [PushConfirmation]) async throws -> Int {
        guard !confirmations.isEmpty else { return 0 }
        let now = clock.now()
        // Three statements a batch of up to 512 devices (not three a device): a flood of confirmations from
        // thousands of streams is a few statements a second on the writer, beside the posts. The padding rows of
        // NULLs match nothing.
        return try await database.transaction { connection in
            var dropped = 0
            for start in stride(from: 0, to: confirmations.count, by: 512) {
                let rows = confirmations[start..<min(start + 512, confirmations.count)].map {
                    [SQLiteValue.text($0.userID), .text($0.device), .integer(Int($0.through))]
                }
                let values = SQLiteHandle.padded(rows, width: 3)
                let confirmed = "WITH r(user_id, device, through) AS (VALUES \(values.placeholders))"
                try connection.query(
                    """
                    \(confirmed)
                    INSERT INTO push_receipts (user_id, device, through)
                    SELECT r.user_id, \(PushOutboxSQL.receiptDevice) AS kept, max(r.through) FROM r
                    WHERE r.user_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = r.user_id AND u.erased)
                    GROUP BY r.user_id, kept
                    ON CONFLICT (user_id, device) DO UPDATE SET through = max(through, excluded.through)
                    """, values.binds)
                let held = try connection.query(
                    """
                    \(confirmed)
                    DELETE FROM push_jobs WHERE kind = 'alert' AND leased = 0 AND id IN (
                        SELECT j.id FROM push_jobs j JOIN r ON j.user_id = r.user_id
                        WHERE j.seq <= r.through AND (j.covered_by = 'member' OR (j.covered_by = 'device' AND j.device_id = r.device)))
                    RETURNING user_id, device_id, conversation_id, seq
                    """, values.binds)
                dropped += held.count
                if self.trailSwitch.isOn {
                    try Self.insertTrail(Self.heldBack(held, kind: .confirmed, at: now), on: connection, when: true)
                }
                try connection.query(
                    """
                    \(confirmed)
                    DELETE FROM push_sent WHERE rowid IN (
                        SELECT s.rowid FROM push_sent s JOIN r ON s.user_id = r.user_id AND s.device_id = r.device
                        WHERE s.seq <= r.through)
                    """, values.binds)
            }
            return dropped
        }
    }

    public func pushedSeqs(userID: String, device: String, after: Int64, through: Int64) async throws -> Set<Int64> {
        try await database.perform { connection in
            Set(try connection.query(
                "SELECT seq FROM push_sent WHERE user_id = ?1 AND device_id = ?2 AND seq > ?3 AND seq <= ?4",
                [.text(userID), .text(device), .integer(Int(after)), .integer(Int(through))]
            ).compactMap { $0.column("seq")?.integer.map(Int64.init) })
        }
    }

    /// After `userID` read `conversationID` (up to their read marker) on `device`: carries out
    /// ``OutboxRules/afterRead(readSeq:on:due:)``. Returns the clears queued.
    package static func clearsAfterRead(
        of userID: String, in conversationID: String, except device: String?, due: Date, at now: Date, trail: Bool,
        on connection: SQLiteHandle
    ) throws -> Int {
        let marker = try connection.query(
            "SELECT read_seq FROM members WHERE conversation_id = ?1 AND user_id = ?2",
            [.text(conversationID), .text(userID)])
        guard let readSeq = marker.first?.column("read_seq")?.integer else { return 0 }
        return try carryOut(
            OutboxRules.afterRead(readSeq: Int64(readSeq), on: device, due: due), of: userID, in: conversationID, at: now,
            trail: trail, on: connection)
    }

    /// `userID` left `conversationID` at `seq` (removed, left, or it was deleted): carries out
    /// ``OutboxRules/afterLeaving(at:due:)``. Returns the clears queued.
    package static func forgetPushes(
        of userID: String, in conversationID: String, at seq: Int64, now: Date, on connection: SQLiteHandle
    ) throws -> Int {
        try carryOut(OutboxRules.afterLeaving(at: seq, due: Date()), of: userID, in: conversationID, at: now, on: connection)
    }

    /// Drops `userID`'s waiting alerts of `conversationID` and queues the clears `clearing` says, with the badge as
    /// it is `now`; with `trail`, the alerts dropped are the trail's `read` steps. Returns the clears queued.
    private static func carryOut(
        _ clearing: OutboxRules.Clearing, of userID: String, in conversationID: String, at now: Date, trail: Bool = false,
        on connection: SQLiteHandle
    ) throws -> Int {
        let held = try connection.query(
            """
            DELETE FROM push_jobs WHERE kind = 'alert' AND leased = 0 AND user_id = ?1 AND conversation_id = ?2 AND seq <= ?3
            RETURNING user_id, device_id, conversation_id, seq
            """,
            [.text(userID), .text(conversationID), .integer(Int(clearing.dropAlertsThrough))])
        try insertTrail(heldBack(held, kind: .read, at: now), on: connection, when: trail)
        let shown = try connection.query(
            """
            DELETE FROM push_shown WHERE user_id = ?1 AND conversation_id = ?2 AND seq <= ?3 AND device_id <> ?4
            RETURNING device_id
            """,
            [.text(userID), .text(conversationID), .integer(Int(clearing.shownThrough)), .text(clearing.except ?? "")])
        let devices = shown.compactMap { $0.column("device_id")?.string }
        guard !devices.isEmpty else { return 0 }
        return try Self.queue(
            clearing.clears(of: conversationID, for: userID, on: devices, badge: try Self.badge(of: userID, at: now, on: connection)),
            on: connection)
    }

    public func badge(of userID: String) async throws -> Int {
        let now = clock.now()
        return try await database.perform { connection in try Self.badge(of: userID, at: now, on: connection) }
    }

    public func pushJobCount() async throws -> Int {
        try await database.perform { connection in
            try connection.query("SELECT count(*) AS n FROM push_jobs").first?.column("n")?.integer ?? 0
        }
    }
}
