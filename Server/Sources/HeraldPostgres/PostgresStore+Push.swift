import Foundation
import HeraldCore
import HeraldRecords
import Logging
import PostgresNIO

/// The push outbox on PostgreSQL, shared by every node: a job is leased by one node at a time (`FOR UPDATE SKIP
/// LOCKED`, so nodes leasing together take different jobs) until `leased_until`; a node that died holds its jobs
/// only until then, and another sends them.
extension PostgresStore {
    public func pushTargets(_ queries: [PushTargetQuery]) async throws -> [[PushTarget]] {
        guard queries.contains(where: { !$0.candidates.isEmpty }) else { return queries.map { _ in [] } }
        let now = clock.now().timeIntervalSince1970
        return try await database.withConnection { connection in
            var answers: [[PushTarget]] = []
            for query in queries {
                answers.append(try await Self.pushTargets(query, at: now, on: connection, logger: self.logger))
            }
            return answers
        }
    }

    private static func pushTargets(
        _ query: PushTargetQuery, at now: Double, on connection: PostgresConnection, logger: Logger
    ) async throws -> [PushTarget] {
        guard !query.candidates.isEmpty else { return [] }
        // The members' devices, each with its owner's badge, level and settings (the policy decides on levels). A
        // badge is counted only for a member with a device: one without has nothing to push.
        let rows = try await connection.query(
            """
            WITH targets AS (
                SELECT me.user_id, me.level, me.level_until, me.read_seq, ns.body AS settings FROM members me \(unescaped: LevelSQL.joinSettings)
                WHERE me.conversation_id = \(query.conversationID) AND me.read_seq < \(query.seq)
                  AND me.removed_seq IS NULL AND me.user_id = ANY(\(Array(query.candidates))::text[])
                  AND EXISTS (SELECT 1 FROM devices d WHERE d.user_id = me.user_id)),
            badges AS (
                SELECT me.user_id, sum(CASE WHEN \(unescaped: Self.countsTowardsBadge(at: now)) THEN (SELECT count(*) FROM (SELECT 1 FROM messages x
                    WHERE x.conversation_id = me.conversation_id AND x.seq > me.read_seq AND x.sender_id <> me.user_id
                      AND x.event IS NULL AND NOT x.deleted
                    LIMIT \(ConversationSummary.unreadLimit)) AS u) ELSE 0 END) AS badge
                FROM members me \(unescaped: LevelSQL.joinSettings)
                WHERE me.user_id IN (SELECT user_id FROM targets) AND me.removed_seq IS NULL
                GROUP BY me.user_id)
            SELECT d.user_id, d.id, d.platform, d.token, b.badge::bigint AS badge, t.level, t.level_until, t.settings,
                t.read_seq
            FROM targets t JOIN devices d ON d.user_id = t.user_id JOIN badges b ON b.user_id = t.user_id
            ORDER BY d.user_id, d.id
            """, logger: logger)
        var targets: [PushTarget] = []
        var settings: [String: NotificationSettings] = [:]
        for try await row in rows {
            let columns = row.makeRandomAccess()
            let userID = try columns.text("user_id")
            guard let platform = DeviceRegistration.Platform(rawValue: try columns.text("platform")) else { continue }
            let body = try columns.optionalText("settings")
            let owner = settings[userID] ?? LevelSQL.settings(body)
            settings[userID] = owner
            targets.append(PushTarget(
                device: DeviceRegistration(id: try columns.text("id"), userID: userID, platform: platform,
                                           token: try columns.text("token")),
                badge: Int(try columns.optionalInteger("badge") ?? 0), level: try LevelSQL.choice(columns), settings: owner,
                readMarker: try columns.optionalInteger("read_seq") ?? 0))
        }
        return targets
    }

    /// Whether a member row counts towards its user's badge at `now` (a literal: a number is no injection).
    package static func countsTowardsBadge(at now: Double) -> String {
        LevelSQL.countsTowardsBadge(at: "\(now)::double precision", countsMuted: "coalesce(ns.badge_counts_muted, false)")
    }

    /// `userID`'s unread messages over all their conversations, each counted up to the list's limit (conversations
    /// at `nothing` at `now` only when they asked for them).
    package static func badge(of userID: String, at now: Date, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        let rows = try await connection.query(
            """
            SELECT coalesce(sum(CASE WHEN \(unescaped: countsTowardsBadge(at: now.timeIntervalSince1970)) THEN (SELECT count(*) FROM (SELECT 1 FROM messages x
                WHERE x.conversation_id = me.conversation_id AND x.seq > me.read_seq AND x.sender_id <> \(userID)
                  AND x.event IS NULL AND NOT x.deleted
                LIMIT \(ConversationSummary.unreadLimit)) AS u) ELSE 0 END), 0)::bigint
            FROM members me \(unescaped: LevelSQL.joinSettings) WHERE me.user_id = \(userID) AND me.removed_seq IS NULL
            """, logger: logger).collect()
        return Int(try rows.first.map { try $0.decode(Int64.self) } ?? 0)
    }

    @discardableResult
    public func queuePushJobs(_ jobs: [NewPushJob]) async throws -> Int {
        guard !jobs.isEmpty else { return 0 }
        return try await transaction { connection in
            try await Self.queue(jobs, on: connection, logger: self.logger)
        }
    }

    /// Inserts `jobs`, one statement per kind (rows read from JSON); a newer clear of a conversation replaces the
    /// one waiting, anything else already queued is left as it is. With `membersOnly`, an alert for someone no longer a member of its conversation, or who has
    /// read it up to its message, is left out, and the member rows it was checked against are locked (`FOR SHARE`)
    /// until the transaction ends: a removal or a read either committed before (the alert is left out) or waits for
    /// this one (and then drops what it queued). With `devicesOnly`, a job for a device no longer registered is left
    /// out, its device row locked the same way: one removed while the push it follows from was in flight.
    package static func queue(
        _ jobs: [NewPushJob], on connection: PostgresConnection, membersOnly: Bool = false, devicesOnly: Bool = false,
        collecting queued: QueuedAlerts? = nil, logger: Logger
    ) async throws -> Int {
        let now = Date().timeIntervalSince1970
        let encoder = JSONEncoder()
        var encoded: [PushContent: String] = [:]
        var added = 0
        for kind in [PushJob.Kind.alert, .clear, .receipt, .follow] {
            let rows = try jobs.filter { $0.kind == kind }.map { job -> JobRow in
                let content: String
                if let known = encoded[job.content] {
                    content = known
                } else {
                    content = String(decoding: try encoder.encode(job.content), as: UTF8.self)
                    encoded[job.content] = content
                }
                return JobRow(
                    kind: job.kind.rawValue, job_key: job.key, user_id: job.userID, device_id: job.deviceID,
                    conversation_id: job.content.conversationID, seq: job.content.seq, content: content,
                    ticket: job.ticket, created_at: now, due_at: job.due.timeIntervalSince1970,
                    covered_by: job.coveredBy?.rawValue)
            }
            guard !rows.isEmpty else { continue }
            let json = String(decoding: try encoder.encode(rows), as: UTF8.self)
            let onConflict = kind == .clear || kind == .follow
                ? "DO UPDATE SET content = excluded.content, seq = excluded.seq, due_at = excluded.due_at, created_at = excluded.created_at, attempts = 0"
                : "DO NOTHING"
            let written = try await connection.query(
                """
                INSERT INTO push_jobs (kind, job_key, user_id, device_id, conversation_id, seq, content, ticket, created_at, due_at, covered_by)
                SELECT kind, job_key, user_id, device_id, conversation_id, seq, content, ticket, created_at, due_at, covered_by
                FROM jsonb_to_recordset(\(json)::jsonb) AS j(kind text, job_key text, user_id text, device_id text,
                    conversation_id text, seq bigint, content text, ticket text, created_at double precision,
                    due_at double precision, covered_by text)
                WHERE (j.covered_by IS NULL OR NOT EXISTS (SELECT 1 FROM push_receipts r
                    WHERE r.user_id = j.user_id AND (j.covered_by = 'member' OR r.device = j.device_id)
                      AND r.through >= j.seq))
                \(unescaped: devicesOnly ? """
                AND EXISTS (SELECT 1 FROM devices d WHERE d.user_id = j.user_id AND d.id = j.device_id FOR SHARE)
                """ : "")
                \(unescaped: kind == .alert && membersOnly ? """
                AND EXISTS (SELECT 1 FROM members m WHERE m.conversation_id = j.conversation_id
                    AND m.user_id = j.user_id AND m.removed_seq IS NULL AND m.read_seq < j.seq FOR SHARE)
                """ : "")
                ON CONFLICT (kind, job_key, user_id, device_id) \(unescaped: onConflict) RETURNING user_id, device_id, seq
                """, logger: logger).collect()
            added += written.count
            if let queued, kind == .alert {
                for row in written {
                    let (user, device, seq) = try row.decode((String, String, Int64).self)
                    queued.add(.init(userID: user, deviceID: device, seq: seq))
                }
            }
        }
        return added
    }

    public func leasePushJobs(
        now: Date, platform: DeviceRegistration.Platform, limit: Int
    ) async throws -> (jobs: [PushJob], nextDue: Date?) {
        let nowSeconds = now.timeIntervalSince1970
        return try await leasing(for: leaseDuration) { connection in
            // Due jobs nobody holds (or whose holder's lease ran out); rows another node is leasing are skipped.
            let rows = try await connection.query(
                """
                UPDATE push_jobs SET leased_until = \(nowSeconds + self.leaseDuration)
                WHERE id IN (
                    SELECT j.id FROM push_jobs j JOIN devices d ON d.user_id = j.user_id AND d.id = j.device_id
                    WHERE (j.leased_until IS NULL OR j.leased_until < \(nowSeconds)) AND j.due_at <= \(nowSeconds)
                      AND d.platform = \(platform.rawValue) AND \(unescaped: PushOutboxSQL.notBehindItsAlert)
                    ORDER BY j.due_at, j.id LIMIT \(limit)
                    FOR UPDATE OF j SKIP LOCKED)
                RETURNING id, kind, user_id, device_id, content, ticket, created_at, attempts, due_at, covered_by,
                    covered_by IS NOT NULL AND EXISTS (SELECT 1 FROM push_receipts r
                        WHERE r.user_id = push_jobs.user_id AND (push_jobs.covered_by = 'member' OR r.device = push_jobs.device_id)
                          AND r.through >= push_jobs.seq) AS covered
                """, logger: self.logger).collect()
            // The tokens, read with the jobs' devices (the update cannot join them into its result).
            let rowsRead = rows.map { $0.makeRandomAccess() }
            let tokens = try await Self.tokens(
                of: try rowsRead.map { DeviceKey(userID: try $0.text("user_id"), id: try $0.text("device_id")) },
                on: connection, logger: self.logger)
            let lease = OutboxRules.lease(try rowsRead.map { row in
                let key = DeviceKey(userID: try row.text("user_id"), id: try row.text("device_id"))
                let device = tokens[key].map {
                    DeviceRegistration(id: key.id, userID: key.userID, platform: platform, token: $0.token, keys: $0.keys)
                }
                return try LeaseCandidate(row, device: device)
            }, now: now)
            if !lease.dropped.isEmpty {
                try await connection.query("DELETE FROM push_jobs WHERE id = ANY(\(lease.dropped)::bigint[])", logger: self.logger)
            }
            try await Self.insertTrail(lease.steps, on: connection, when: self.trailSwitch.isOn, logger: self.logger)
            for shown in lease.shown {
                try await connection.query(
                    """
                    INSERT INTO push_shown (user_id, device_id, conversation_id, seq)
                    VALUES (\(shown.userID), \(shown.deviceID), \(shown.conversationID), \(shown.seq))
                    ON CONFLICT (user_id, conversation_id, device_id) DO UPDATE SET seq = greatest(push_shown.seq, excluded.seq)
                    """, logger: self.logger)
            }
            for grant in lease.grants {
                try await connection.query(
                    """
                    INSERT INTO push_grants (user_id, device_id, seq, granted_at, shown_as)
                    VALUES (\(grant.userID), \(grant.deviceID), \(grant.seq), \(grant.grantedAt.timeIntervalSince1970), \(grant.shownAs))
                    ON CONFLICT (user_id, device_id, seq) DO UPDATE SET granted_at = excluded.granted_at, shown_as = excluded.shown_as
                    """, logger: self.logger)
            }
            // The next time a job may be taken: when it falls due, or when the lease on it runs out (a node that died
            // leaves its jobs to be taken then).
            let next = try await connection.query(
                """
                SELECT min(greatest(j.due_at, coalesce(j.leased_until, 0))) FROM push_jobs j
                JOIN devices d ON d.user_id = j.user_id AND d.id = j.device_id
                WHERE d.platform = \(platform.rawValue) AND \(unescaped: PushOutboxSQL.notBehindItsAlert)
                """, logger: self.logger).collect()
            let due = try next.first.flatMap { try $0.decode(Double?.self) }
            return (lease.jobs, due.map(Date.init(timeIntervalSince1970:)))
        }
    }

    /// The tokens of `devices`, by owner and id.
    private static func tokens(
        of devices: [DeviceKey], on connection: PostgresConnection, logger: Logger
    ) async throws -> [DeviceKey: (token: String, keys: PushEncryptionKeys?)] {
        guard !devices.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT d.user_id, d.id, d.token, d.push_keys FROM devices d
            JOIN unnest(\(devices.map(\.userID))::text[], \(devices.map(\.id))::text[]) AS k(user_id, id)
              ON d.user_id = k.user_id AND d.id = k.id
            """, logger: logger)
        var tokens: [DeviceKey: (token: String, keys: PushEncryptionKeys?)] = [:]
        for try await (userID, id, token, keys) in rows.decode((String, String, String, String?).self) {
            tokens[DeviceKey(userID: userID, id: id)] = (token, keys.flatMap(PushEncryptionKeys.init(stored:)))
        }
        return tokens
    }

    public func finishPushJobs(_ finished: [FinishedPush]) async throws {
        guard !finished.isEmpty else { return }
        try await transaction { connection in
            // A newer clear or follow-up that replaced a job while it was in flight (``queue``: a new `created_at`)
            // keeps its row, and goes next; deleting it would lose it.
            let (ids, created) = (finished.map(\.job.id), finished.map(\.job.createdAt.timeIntervalSince1970))
            try await connection.query(
                """
                DELETE FROM push_jobs j USING unnest(\(ids)::bigint[], \(created)::double precision[]) AS f(id, created_at)
                WHERE j.id = f.id AND j.created_at = f.created_at
                """, logger: self.logger)
            try await connection.query(
                """
                UPDATE push_jobs j SET leased_until = NULL
                FROM unnest(\(ids)::bigint[], \(created)::double precision[]) AS f(id, created_at)
                WHERE j.id = f.id AND j.created_at <> f.created_at
                """, logger: self.logger)
            let alerts = OutboxRules.remembered(finished)
            if !alerts.isEmpty {
                let (users, devices, seqs) = (alerts.map(\.device.userID), alerts.map(\.device.id), alerts.map(\.content.seq))
                try await connection.query(
                    """
                    INSERT INTO push_sent (user_id, device_id, seq, sent_at)
                    SELECT a.user_id, a.device_id, a.seq, \(Date().timeIntervalSince1970)
                    FROM unnest(\(users)::text[], \(devices)::text[], \(seqs)::bigint[]) AS a(user_id, device_id, seq)
                    WHERE EXISTS (SELECT 1 FROM push_receipts r WHERE r.user_id = a.user_id AND r.device = a.device_id)
                    ON CONFLICT DO NOTHING
                    """, logger: self.logger)
            }
            try await Self.insertTrail(
                finished.compactMap(\.step), on: connection, when: self.trailSwitch.isOn, logger: self.logger)
            let followUps = finished.compactMap(\.followUp)
            // A device removed while its push was in flight takes no receipt to check.
            if !followUps.isEmpty { _ = try await Self.queue(followUps, on: connection, devicesOnly: true, logger: self.logger) }
        }
    }

    @discardableResult
    public func recordConfirmations(_ confirmations: [PushConfirmation]) async throws -> Int {
        guard !confirmations.isEmpty else { return 0 }
        let (users, devices, throughs) = (confirmations.map(\.userID), confirmations.map(\.device), confirmations.map(\.through))
        let now = clock.now()
        return try await transaction { connection in
            // One row a device (the furthest, if a batch has two), so the upsert never meets a row twice.
            try await connection.query(
                """
                INSERT INTO push_receipts (user_id, device, through)
                SELECT r.user_id, \(unescaped: PushOutboxSQL.receiptDevice) AS kept, max(r.through)
                FROM unnest(\(users)::text[], \(devices)::text[], \(throughs)::bigint[]) AS r(user_id, device, through)
                WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = r.user_id AND u.erased)
                GROUP BY r.user_id, kept
                ON CONFLICT (user_id, device) DO UPDATE SET through = greatest(push_receipts.through, excluded.through)
                """, logger: self.logger)
            let held = try await connection.query(
                """
                DELETE FROM push_jobs j USING unnest(\(users)::text[], \(devices)::text[], \(throughs)::bigint[]) AS r(user_id, device, through)
                WHERE j.user_id = r.user_id AND j.kind = 'alert' AND j.leased_until IS NULL AND j.seq <= r.through
                  AND (j.covered_by = 'member' OR (j.covered_by = 'device' AND j.device_id = r.device))
                RETURNING j.user_id, j.device_id, j.conversation_id, j.seq
                """, logger: self.logger).collect()
            let dropped = held.count
            if self.trailSwitch.isOn {
                try await Self.insertTrail(
                    try Self.heldBack(held, kind: .confirmed, at: now), on: connection, when: true, logger: self.logger)
            }
            try await connection.query(
                """
                DELETE FROM push_sent s USING unnest(\(users)::text[], \(devices)::text[], \(throughs)::bigint[]) AS r(user_id, device, through)
                WHERE s.user_id = r.user_id AND s.device_id = r.device AND s.seq <= r.through
                """, logger: self.logger)
            return dropped
        }
    }

    public func pushedSeqs(userID: String, device: String, after: Int64, through: Int64) async throws -> Set<Int64> {
        let rows = try await database.query(
            """
            SELECT seq FROM push_sent WHERE user_id = \(userID) AND device_id = \(device) AND seq > \(after) AND seq <= \(through)
            """, logger: logger)
        return Set(try rows.map { try $0.decode(Int64.self) })
    }

    public func retryPushJob(id: Int64, at due: Date) async throws {
        try await database.query(
            "UPDATE push_jobs SET leased_until = NULL, attempts = attempts + 1, due_at = \(due.timeIntervalSince1970) WHERE id = \(id)",
            logger: logger)
    }

    public func pushedDevices(of conversationID: String, messageID: String) async throws -> [PushedDevice] {
        let now = clock.now()
        return try await transaction { connection in
            let rows = try await connection.query(
                """
                SELECT g.user_id, g.device_id AS id, d.platform, d.token, g.shown_as, g.seq,
                    EXISTS (SELECT 1 FROM members me JOIN conversations c ON c.id = me.conversation_id
                        WHERE me.conversation_id = m.conversation_id AND me.user_id = g.user_id
                          AND me.removed_seq IS NULL AND c.deleted = FALSE AND me.visible_from <= m.seq) AS readable,
                    (SELECT e.seq FROM push_grants e JOIN messages em ON em.seq = e.seq
                        WHERE e.user_id = g.user_id AND e.device_id = g.device_id AND e.shown_as = g.shown_as
                          AND e.seq < g.seq AND em.deleted = FALSE
                          AND EXISTS (SELECT 1 FROM members mr WHERE mr.conversation_id = m.conversation_id
                              AND mr.user_id = g.user_id AND mr.removed_seq IS NULL AND mr.visible_from <= e.seq)
                        ORDER BY e.seq DESC LIMIT 1) AS earlier
                FROM messages m
                JOIN push_grants g ON g.seq = m.seq
                JOIN devices d ON d.user_id = g.user_id AND d.id = g.device_id
                WHERE m.conversation_id = \(conversationID) AND m.id = \(messageID) AND g.shown_as IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM push_grants later JOIN messages lm ON lm.seq = later.seq
                      WHERE later.user_id = g.user_id AND later.device_id = g.device_id AND later.seq > g.seq
                        AND later.shown_as = g.shown_as AND lm.deleted = FALSE)
                  AND EXISTS (SELECT 1 FROM push_shown s WHERE s.user_id = g.user_id AND s.device_id = g.device_id
                      AND s.conversation_id = m.conversation_id AND s.seq >= g.seq)
                ORDER BY g.user_id, g.device_id
                """, logger: self.logger).collect()
            var devices: [PushedDevice] = []
            var badges: [String: Int] = [:]
            for row in rows {
                let columns = row.makeRandomAccess()
                guard let device = try Rows.device(columns), let shownAs = try columns.optionalText("shown_as") else { continue }
                let badge: Int
                if let known = badges[device.userID] {
                    badge = known
                } else {
                    badge = try await Self.badge(of: device.userID, at: now, on: connection, logger: self.logger)
                }
                badges[device.userID] = badge
                var shown = PushedDevice(device: device, shownAs: shownAs, seq: try columns.integer("seq"), badge: badge)
                shown.readable = try columns.bool("readable")
                if let earlier = try columns.optionalInteger("earlier") {
                    shown.earlier = try await connection.query(
                        """
                        SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at, m.event, m.silent,
                               m.mentions, m.edits, m.deleted, c.kind, c.title, u.name AS sender_name,
                               u.picture AS sender_picture
                        FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN users u ON u.id = m.sender_id
                        WHERE m.seq = \(earlier)
                        """, logger: self.logger
                    ).collect().first.map { try Rows.incoming($0.makeRandomAccess()) }
                }
                devices.append(shown)
            }
            return devices
        }
    }

    @discardableResult
    public func forgetPushGrants(before date: Date) async throws -> Int {
        try await database.query(
            "DELETE FROM push_grants WHERE granted_at < \(date.timeIntervalSince1970) RETURNING seq", logger: logger).count
    }

    /// Releases the leases that ran out. Several nodes share the outbox, so a starting node cannot tell a lease of a
    /// node that died from one of a node at work: those of the dead are taken over when they run out, never sooner.
    @discardableResult
    public func releasePushLeases() async throws -> Int {
        let forgotten = Date().addingTimeInterval(-Self.pushSentKept).timeIntervalSince1970
        try await database.query("DELETE FROM push_sent WHERE sent_at < \(forgotten)", logger: logger)
        return try await database.query(
            """
            UPDATE push_jobs SET leased_until = NULL
            WHERE leased_until IS NOT NULL AND leased_until < \(Date().timeIntervalSince1970) RETURNING id
            """, logger: logger).count
    }

    public func releasePushJobs(ids: [Int64], now: Date) async throws {
        guard !ids.isEmpty else { return }
        try await database.query(
            """
            UPDATE push_jobs SET leased_until = NULL
            WHERE id = ANY(\(ids)::bigint[]) AND leased_until > \(now.timeIntervalSince1970)
            """, logger: logger)
    }

    /// After `userID` read `conversationID` (up to their read marker) on `device`: carries out
    /// ``OutboxRules/afterRead(readSeq:on:due:)``. Returns the clears queued.
    package static func clearsAfterRead(
        of userID: String, in conversationID: String, except device: String?, due: Date, at now: Date, trail: Bool,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        let marker = try await connection.query(
            "SELECT read_seq FROM members WHERE conversation_id = \(conversationID) AND user_id = \(userID)",
            logger: logger).collect()
        guard let readSeq = try marker.first.map({ try $0.decode(Int64.self) }) else { return 0 }
        return try await carryOut(
            OutboxRules.afterRead(readSeq: readSeq, on: device, due: due), of: userID, in: conversationID, at: now,
            trail: trail, on: connection, logger: logger)
    }

    /// `userID` left `conversationID` at `seq` (removed, left, or it was deleted): carries out
    /// ``OutboxRules/afterLeaving(at:due:)``. Returns the clears queued.
    package static func forgetPushes(
        of userID: String, in conversationID: String, at seq: Int64, now: Date, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Int {
        try await carryOut(
            OutboxRules.afterLeaving(at: seq, due: Date()), of: userID, in: conversationID, at: now, on: connection,
            logger: logger)
    }

    /// Drops `userID`'s waiting alerts of `conversationID` and queues the clears `clearing` says, with the badge as
    /// it is `now`; with `trail`, the alerts dropped are the trail's `read` steps. Returns the clears queued.
    private static func carryOut(
        _ clearing: OutboxRules.Clearing, of userID: String, in conversationID: String, at now: Date, trail: Bool = false,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        let held = try await connection.query(
            """
            DELETE FROM push_jobs WHERE kind = 'alert' AND leased_until IS NULL AND user_id = \(userID)
                AND conversation_id = \(conversationID) AND seq <= \(clearing.dropAlertsThrough)
            RETURNING user_id, device_id, conversation_id, seq
            """, logger: logger).collect()
        if trail {
            try await insertTrail(try heldBack(held, kind: .read, at: now), on: connection, when: true, logger: logger)
        }
        let shown = try await connection.query(
            """
            DELETE FROM push_shown WHERE user_id = \(userID) AND conversation_id = \(conversationID)
                AND seq <= \(clearing.shownThrough) AND device_id <> \(clearing.except ?? "")
            RETURNING device_id
            """, logger: logger)
        var devices: [String] = []
        for try await deviceID in shown.decode(String.self) { devices.append(deviceID) }
        guard !devices.isEmpty else { return 0 }
        let badge = try await Self.badge(of: userID, at: now, on: connection, logger: logger)
        return try await Self.queue(
            clearing.clears(of: conversationID, for: userID, on: devices, badge: badge), on: connection, logger: logger)
    }

    public func badge(of userID: String) async throws -> Int {
        let now = clock.now()
        return try await transaction { connection in
            try await Self.badge(of: userID, at: now, on: connection, logger: self.logger)
        }
    }

    public func pushJobCount() async throws -> Int {
        let rows = try await database.query("SELECT count(*) FROM push_jobs", logger: logger)
        return Int(try rows.first.map { try $0.decode(Int64.self) } ?? 0)
    }
}

/// A push job's row, as the insert reads it from JSON.
private struct JobRow: Encodable {
    var kind: String
    var job_key: String
    var user_id: String
    var device_id: String
    var conversation_id: String
    var seq: Int64
    var content: String
    var ticket: String?
    var created_at: Double
    var due_at: Double
    var covered_by: String?
}
