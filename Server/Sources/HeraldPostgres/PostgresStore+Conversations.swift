import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import Logging
import PostgresNIO

/// Conversations and their members on PostgreSQL: creating, reading, listing, and the changes to groups.
extension PostgresStore {
    public func createConversation(_ new: NewConversation) async throws -> (record: ConversationRecord, created: Bool) {
        let members = HeraldID.sorted(Set(new.memberIDs))
        let owners = new.kind == .group ? HeraldID.sorted(Set(new.ownerIDs)) : []
        let directKey: String? = new.kind == .direct ? Rows.directKey(members) : nil
        let id = new.id ?? UUID().uuidString.lowercased()
        let now = clock.now().timeIntervalSince1970
        return try await transaction { connection in
            try await connection.query(
                "INSERT INTO users (id) SELECT unnest(\(members)::text[]) ON CONFLICT DO NOTHING", logger: self.logger)
            // A direct chat that two nodes create at once is created once: the second finds the first's. So is a
            // conversation with the app's own id.
            let inserted = try await connection.query(
                """
                INSERT INTO conversations (id, kind, title, direct_key, created_at)
                VALUES (\(id), \(new.kind.rawValue), \(new.title), \(directKey), \(now))
                ON CONFLICT DO NOTHING RETURNING id
                """, logger: self.logger).collect()
            if inserted.isEmpty {
                if let given = new.id {
                    // A retry of the same creation finds what it made; any other use of the id is a conflict.
                    let existing = try await connection.query(
                        "SELECT kind, deleted FROM conversations WHERE id = \(given)", logger: self.logger).collect()
                    guard let row = existing.first?.makeRandomAccess() else {
                        // Not the id: the pair's direct conversation, under another id.
                        let pair = try await connection.query(
                            "SELECT id FROM conversations WHERE direct_key = \(directKey)", logger: self.logger).collect()
                        throw StoreError.conversationExists(try pair.first.map { try $0.decode(String.self) } ?? given)
                    }
                    guard try row.text("kind") == new.kind.rawValue, !(try row.bool("deleted")),
                          let record = try await Self.conversation(id: given, on: connection, logger: self.logger)
                    else { throw StoreError.conversationExists(given) }
                    return (record, false)
                }
                let existing = try await connection.query(
                    "SELECT id FROM conversations WHERE direct_key = \(directKey)", logger: self.logger).collect()
                let existingID = try existing.first.map { try $0.decode(String.self) } ?? ""
                guard let record = try await Self.conversation(id: existingID, on: connection, logger: self.logger) else {
                    throw StoreError.damaged("a direct conversation vanished")
                }
                return (record, false)
            }
            // A new conversation stands in its members' lists where the newest entry of the server stands, and its
            // members receive what comes after it.
            try await connection.query(
                """
                INSERT INTO members (conversation_id, user_id, activity, added_seq, owner)
                SELECT \(id), m, s.seq, s.seq, m = ANY(\(owners)::text[])
                FROM unnest(\(members)::text[]) AS m, (SELECT seq FROM message_seq WHERE id = 1) AS s
                """, logger: self.logger)
            guard let record = try await Self.conversation(id: id, on: connection, logger: self.logger) else {
                throw StoreError.damaged("a new conversation vanished")
            }
            return (record, true)
        }
    }

    public func conversation(id: String) async throws -> ConversationRecord? {
        try await database.withConnection { connection in
            try await Self.conversation(id: id, on: connection, logger: self.logger)
        }
    }

    /// The conversation with its current members and owners; nil when there is none, or it was deleted.
    package static func conversation(id: String, on connection: PostgresConnection, logger: Logger) async throws -> ConversationRecord? {
        let rows = try await connection.query(
            "SELECT id, kind, title FROM conversations WHERE id = \(id) AND NOT deleted", logger: logger).collect()
        guard let row = rows.first else { return nil }
        let members = try await Self.members(of: [id], on: connection, logger: logger)[id]
        return ConversationRecord(
            conversation: try Rows.conversation(row.makeRandomAccess()), memberIDs: members.ids, people: members.people,
            ownerIDs: members.owners)
    }

    /// The current members of each of `conversationIDs` (ids in byte order, the people among them who have a name,
    /// and the owners).
    package static func members(of conversationIDs: [String], on connection: PostgresConnection, logger: Logger) async throws -> MemberRows {
        var members = MemberRows()
        guard !conversationIDs.isEmpty else { return members }
        let rows = try await connection.query(
            """
            SELECT m.conversation_id, u.id, u.name, u.picture, u.known, m.owner FROM members m JOIN users u ON u.id = m.user_id
            WHERE m.conversation_id = ANY(\(conversationIDs)::text[]) AND m.removed_seq IS NULL
            ORDER BY m.conversation_id, u.id
            """, logger: logger).collect()
        for row in rows { try members.add(row.makeRandomAccess()) }
        return members
    }

    public func memberView(of conversationID: String) async throws -> MemberView? {
        try await database.withConnection { connection in
            let rows = try await connection.query(
                "SELECT id, kind, title, title_seq, deleted FROM conversations WHERE id = \(conversationID)",
                logger: self.logger).collect()
            guard let row = rows.first?.makeRandomAccess() else { return nil }
            let members = try await connection.query(
                "SELECT user_id, added_seq, removed_seq FROM members WHERE conversation_id = \(conversationID)",
                logger: self.logger).collect()
            var spans: [String: MemberSpan] = [:]
            for member in members {
                let (userID, span) = try Rows.span(member.makeRandomAccess())
                spans[userID] = span
            }
            // A deleted group's members all end at the deletion.
            let deleted = try row.bool("deleted") ? spans.values.compactMap(\.removed).max() : nil
            return MemberView(
                conversation: try Rows.conversation(row), titleSeq: try row.integer("title_seq"), spans: spans,
                deleted: deleted)
        }
    }

    /// The list's rows for `userID`: newest activity first after `cursor`, those `filter` keeps, only `only` when
    /// given; at most `limit`. Levels as in force at `now`.
    private static func summaryRows(
        of userID: String, after cursor: ConversationCursor?, filter: ConversationFilter, only: String?, limit: Int,
        at now: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> [ConversationSummary] {
        // The page first (``ListPlan``): a member's place is the later of their conversation's activity and their
        // own (when they joined). Then only the page's rows are filled in: the last entry is the one whose seq is the
        // activity; the unread count (messages only, not events) stops at its limit.
        var plan = ListPlan.scan
        if only == nil, filter == .all {
            // The planner's estimate of the conversations, or their count when the table was never analysed.
            let estimate = try await connection.query(
                """
                SELECT CASE WHEN reltuples > 0 THEN reltuples::bigint ELSE (SELECT count(*) FROM conversations) END
                FROM pg_class WHERE oid = 'conversations'::regclass
                """, logger: logger).collect().first
            let conversations = try estimate?.decode(Int.self) ?? 0
            let count = try await connection.query(
                """
                SELECT count(*) FROM (SELECT 1 FROM members WHERE user_id = \(userID)
                LIMIT \(ListPlan.countLimit(conversations: conversations, limit: limit))) AS m
                """, logger: logger).collect().first
            let memberships = try count?.decode(Int.self) ?? 0
            plan = ListPlan(memberships: memberships, conversations: conversations, limit: limit, filtered: false)
        }
        let place = "greatest(me.activity, c.activity)"
        let kept = """
            me.removed_seq IS NULL AND NOT c.deleted AND \(filter.sql(at: now)) AND (\(place), c.id) < ($2, $3)
              AND ($5::text IS NULL OR me.conversation_id = $5)
            """
        let page = switch plan {
        case .scan:
            """
            SELECT c.id AS id, \(place) AS activity
            FROM members me JOIN conversations c ON c.id = me.conversation_id
            WHERE me.user_id = $1 AND \(kept)
            ORDER BY 2 DESC, 1 DESC LIMIT $4
            """
        case .walk:
            """
            SELECT id, activity FROM (
                (SELECT c.id AS id, \(place) AS activity
                 FROM conversations c JOIN members me ON me.conversation_id = c.id AND me.user_id = $1
                 WHERE (c.activity, c.id) < ($2, $3) AND \(kept)
                 ORDER BY c.activity DESC, c.id DESC LIMIT $4)
                UNION
                (SELECT c.id AS id, \(place) AS activity
                 FROM members me JOIN conversations c ON c.id = me.conversation_id
                 WHERE me.user_id = $1 AND (me.activity, me.conversation_id) < ($2, $3) AND \(kept)
                 ORDER BY me.activity DESC, me.conversation_id DESC LIMIT $4)) AS walks
            ORDER BY activity DESC, id DESC LIMIT $4
            """
        }
        var binds = PostgresBindings()
        binds.append(userID)
        binds.append(cursor?.activity ?? Int64.max)
        binds.append(cursor?.conversationID ?? "")
        binds.append(limit)
        binds.append(only)
        let rows = try await connection.query(PostgresQuery(
            unsafeSQL: """
            WITH page AS (\(page))
            SELECT c.id, c.kind, c.title, me.level, me.level_until, me.read_seq, page.activity AS activity,
                   (SELECT default_level FROM notification_settings WHERE user_id = $1) AS default_level,
                   (SELECT count(*) FROM (SELECT 1 FROM messages m
                      WHERE m.conversation_id = c.id AND m.seq > me.read_seq AND m.sender_id <> $1 AND m.event IS NULL AND NOT m.deleted
                      LIMIT \(ConversationSummary.unreadLimit)) AS u) AS unread,
                   last.seq, last.id AS message_id, last.sender_id, last.text, last.image_url, last.created_at, last.event,
                   last.mentions, last.edits, last.deleted
            FROM page
            JOIN members me ON me.conversation_id = page.id AND me.user_id = $1
            JOIN conversations c ON c.id = page.id
            LEFT JOIN messages last ON last.seq = page.activity AND last.conversation_id = page.id
            ORDER BY page.activity DESC, page.id DESC
            """, binds: binds), logger: logger).collect()
        let members = try await Self.members(
            of: try rows.map { try $0.makeRandomAccess().text("id") }, on: connection, logger: logger)
        return try rows.map { row in
            let columns = row.makeRandomAccess()
            return try Rows.summary(columns, members: members[try columns.text("id")], at: now)
        }
    }

    public func conversations(
        of userID: String, after cursor: ConversationCursor?, limit: Int, filter: ConversationFilter
    ) async throws -> ConversationPage {
        let now = clock.now()
        return try await database.withConnection { connection in
            let summaries = try await Self.summaryRows(
                of: userID, after: cursor, filter: filter, only: nil, limit: limit, at: now, on: connection,
                logger: self.logger)
            let next = summaries.count == limit ? summaries.last.map(ConversationCursor.init(after:)) : nil
            return ConversationPage(summaries: summaries, next: next)
        }
    }

    public func summary(of conversationID: String, for userID: String) async throws -> ConversationSummary? {
        let now = clock.now()
        return try await database.withConnection { connection in
            try await Self.summaryRows(
                of: userID, after: nil, filter: .all, only: conversationID, limit: 1, at: now, on: connection,
                logger: self.logger
            ).first
        }
    }

    public func change(
        _ change: ConversationChange, in conversationID: String, by actor: ChangeActor, memberLimit: Int
    ) async throws -> ChangeOutcome {
        try await appending { connection, last in
            var group = PostgresGroupChange(
                conversationID: conversationID, authority: GroupChangeAuthority(actor), connection: connection,
                lastSeq: last, at: self.clock.now(), logger: self.logger)
            return try await group.apply(change, memberLimit: memberLimit)
        }
    }
}

/// One change to a group, inside its transaction on PostgreSQL (holding the sequence's counter): the group read, the
/// steps ``GroupRules`` decides carried out (the events appended with the next seqs, the rows written, the pushes
/// dropped and cleared).
package struct PostgresGroupChange {
    package let conversationID: String
    package let authority: GroupChangeAuthority
    package let actorID: String
    package let connection: PostgresConnection
    package var lastSeq: Int64
    package let logger: Logger
    package let now: TimeInterval
    package var entries: [IncomingMessage] = []
    package var clears = 0

    package init(
        conversationID: String, authority: GroupChangeAuthority, connection: PostgresConnection, lastSeq: Int64,
        at now: Date, logger: Logger
    ) {
        self.now = now.timeIntervalSince1970
        self.conversationID = conversationID
        self.authority = authority
        actorID = authority.senderID
        self.connection = connection
        self.lastSeq = lastSeq
        self.logger = logger
    }

    package mutating func apply(_ change: ConversationChange, memberLimit: Int) async throws -> (entries: [IncomingMessage], result: ChangeOutcome) {
        let group = try await snapshot()
        let steps = try GroupRules.steps(for: change, by: authority, in: group, memberLimit: memberLimit)
        let actor = try await person(actorID)
        for step in steps { try await carryOut(step, in: group.conversation, by: actor) }
        let record = try await PostgresStore.conversation(id: conversationID, on: connection, logger: logger)
        return (entries, ChangeOutcome(entries: entries, record: record, clears: clears))
    }

    /// The group as it is (its row locked until the change commits): not deleted, its members longest-standing
    /// first.
    private func snapshot() async throws -> GroupSnapshot {
        let rows = try await connection.query(
            "SELECT id, kind, title FROM conversations WHERE id = \(conversationID) AND NOT deleted FOR UPDATE",
            logger: logger).collect()
        guard let row = rows.first else { throw StoreError.conversationNotFound }
        let members = try await connection.query(
            """
            SELECT user_id, owner FROM members WHERE conversation_id = \(conversationID) AND removed_seq IS NULL
            ORDER BY added_seq, user_id
            """, logger: logger)
        var current: [GroupSnapshot.Member] = []
        for try await (id, owner) in members.decode((String, Bool).self) {
            current.append(GroupSnapshot.Member(id: id, owner: owner))
        }
        return GroupSnapshot(conversation: try Rows.conversation(row.makeRandomAccess()), members: current)
    }

    /// Appends the step's event, then writes what it does at the event's seq.
    private mutating func carryOut(_ step: GroupStep, in conversation: Conversation, by actor: Person) async throws {
        var people: [Person] = []
        for id in step.people { people.append(try await person(id)) }
        let event = ConversationEvent(kind: step.kind, members: people, title: step.title)
        let seq = try await append(event, conversation, actor).message.seq ?? 0
        for effect in step.effects {
            switch effect {
            case .add(let new, let history):
                try await connection.query(
                    "INSERT INTO users (id) SELECT unnest(\(new)::text[]) ON CONFLICT DO NOTHING", logger: logger)
                // Added: they receive from this event on, see the past if `history` says so, have read nothing after
                // joining, and find the group at the top of their list. One removed before starts afresh.
                try await connection.query(
                    """
                    INSERT INTO members (conversation_id, user_id, added_seq, removed_seq, visible_from, read_seq, activity, owner, level)
                    SELECT \(conversationID), unnest(\(new)::text[]), \(seq), NULL, \(history == .none ? seq : 0), \(seq - 1), \(seq),
                           false, NULL
                    ON CONFLICT (conversation_id, user_id) DO UPDATE SET added_seq = excluded.added_seq, removed_seq = NULL,
                        visible_from = excluded.visible_from, read_seq = excluded.read_seq, activity = excluded.activity,
                        owner = false, level = NULL, level_until = NULL
                    """, logger: logger)
            case .end(let id):
                try await connection.query(
                    "UPDATE members SET removed_seq = \(seq), owner = false WHERE conversation_id = \(conversationID) AND user_id = \(id)",
                    logger: logger)
                clears += try await PostgresStore.forgetPushes(
                    of: id, in: conversationID, at: seq, now: Date(timeIntervalSince1970: now), on: connection, logger: logger)
            case .setOwner(let id, let owner):
                try await connection.query(
                    "UPDATE members SET owner = \(owner) WHERE conversation_id = \(conversationID) AND user_id = \(id)",
                    logger: logger)
            case .retitle(let title):
                try await connection.query(
                    "UPDATE conversations SET title = \(title), title_seq = \(seq) WHERE id = \(conversationID)", logger: logger)
            case .delete:
                // Its messages go; the deletion stays, so that every member's devices learn of it, also on resume.
                try await connection.query(
                    "DELETE FROM messages WHERE conversation_id = \(conversationID) AND seq < \(seq)", logger: logger)
                try await connection.query(
                    "DELETE FROM delivery_trail WHERE conversation_id = \(conversationID)", logger: logger)
                try await connection.query(
                    "UPDATE conversations SET deleted = true WHERE id = \(conversationID)", logger: logger)
            }
        }
    }

    private func person(_ id: String) async throws -> Person {
        let rows = try await connection.query("SELECT id, name, picture, known FROM users WHERE id = \(id)", logger: logger).collect()
        return try rows.first.flatMap { try Rows.person($0.makeRandomAccess()) } ?? Person(id: id, displayName: "")
    }

    /// Appends an event by `actor`, with the next seq.
    private mutating func append(_ event: ConversationEvent, _ conversation: Conversation, _ actor: Person) async throws -> IncomingMessage {
        lastSeq += 1
        let id = UUID().uuidString.lowercased()
        try await connection.query(
            """
            INSERT INTO messages (seq, id, conversation_id, sender_id, created_at, event)
            VALUES (\(lastSeq), \(id), \(conversationID), \(actor.id), \(now), \(Rows.eventColumn(event)))
            """, logger: logger)
        var conversation = conversation
        if event.kind == .renamed { conversation.title = event.title }
        let entry = IncomingMessage(
            message: Message(id: id, conversationID: conversationID, senderID: actor.id, sentAt: Rows.date(now), seq: lastSeq, event: event),
            conversation: conversation, sender: actor)
        entries.append(entry)
        return entry
    }
}
