import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords

/// Conversations and their members on SQLite: creating, reading, listing, and the changes to groups.
extension SQLiteStore {
    public func createConversation(_ new: NewConversation) async throws -> (record: ConversationRecord, created: Bool) {
        let members = HeraldID.sorted(Set(new.memberIDs))
        let owners = new.kind == .group ? Set(new.ownerIDs) : []
        let directKey: String? = new.kind == .direct ? Rows.directKey(members) : nil
        let id = new.id ?? UUID().uuidString.lowercased()
        return try await database.transaction { connection in
            if let given = new.id {
                let existing = try connection.query(
                    "SELECT kind, deleted FROM conversations WHERE id = ?1", [.text(given)])
                if let row = existing.first {
                    // A retry of the same creation finds what it made; any other use of the id is a conflict.
                    guard try row.text("kind") == new.kind.rawValue, !(try row.bool("deleted")),
                          let record = try Self.conversation(id: given, on: connection)
                    else { throw StoreError.conversationExists(given) }
                    return (record, false)
                }
            }
            if let directKey {
                let existing = try connection.query(
                    "SELECT id FROM conversations WHERE direct_key = ?1", [.text(directKey)])
                if let existingID = existing.first?.column("id")?.string {
                    // The app's own id names one conversation only: the pair's, under another id, is not it.
                    if new.id != nil { throw StoreError.conversationExists(existingID) }
                    return (try Self.conversation(id: existingID, on: connection)!, false)
                }
            }
            try connection.query(
                "INSERT INTO conversations (id, kind, title, direct_key, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                [.text(id), .text(new.kind.rawValue), .optionalText(new.title), .optionalText(directKey),
                 .float(self.clock.now().timeIntervalSince1970)]
            )
            // A new conversation stands in its members' lists where the newest entry of the server stands, and its
            // members receive what comes after it.
            let activity = try Self.latestSeq(on: connection)
            for member in members {
                try connection.query("INSERT OR IGNORE INTO users (id) VALUES (?1)", [.text(member)])
                try connection.query(
                    """
                    INSERT INTO members (conversation_id, user_id, activity, added_seq, owner)
                    VALUES (?1, ?2, ?3, ?3, ?4)
                    """,
                    [.text(id), .text(member), .integer(Int(activity)), .integer(owners.contains(member) ? 1 : 0)])
            }
            return (try Self.conversation(id: id, on: connection)!, true)
        }
    }

    public func conversation(id: String) async throws -> ConversationRecord? {
        try await database.perform { connection in
            try Self.conversation(id: id, on: connection)
        }
    }

    /// The conversation with its current members and owners; nil when there is none, or it was deleted.
    package static func conversation(id: String, on connection: SQLiteHandle) throws -> ConversationRecord? {
        let rows = try connection.query("SELECT id, kind, title FROM conversations WHERE id = ?1 AND deleted = 0", [.text(id)])
        guard let row = rows.first else { return nil }
        let members = try Self.members(of: [id], on: connection)[id]
        return ConversationRecord(
            conversation: try Rows.conversation(row), memberIDs: members.ids, people: members.people, ownerIDs: members.owners)
    }

    /// The current members of each of `conversationIDs` (ids in byte order, the people among them who have a
    /// name, and the owners), in one query.
    package static func members(of conversationIDs: [String], on connection: SQLiteHandle) throws -> MemberRows {
        var members = MemberRows()
        guard !conversationIDs.isEmpty else { return members }
        let list = SQLiteHandle.padded(conversationIDs.map { [.text($0)] })
        let rows = try connection.query(
            """
            SELECT m.conversation_id, u.id, u.name, u.picture, u.known, m.owner FROM members m JOIN users u ON u.id = m.user_id
            WHERE m.conversation_id IN (\(list.placeholders)) AND m.removed_seq IS NULL ORDER BY m.conversation_id, u.id
            """,
            list.binds
        )
        for row in rows { try members.add(row) }
        return members
    }

    public func memberView(of conversationID: String) async throws -> MemberView? {
        try await database.perform { connection in
            let rows = try connection.query(
                "SELECT id, kind, title, title_seq, deleted FROM conversations WHERE id = ?1", [.text(conversationID)])
            guard let row = rows.first else { return nil }
            let members = try connection.query(
                "SELECT user_id, added_seq, removed_seq FROM members WHERE conversation_id = ?1", [.text(conversationID)])
            var spans: [String: MemberSpan] = [:]
            for member in members {
                let (userID, span) = try Rows.span(member)
                spans[userID] = span
            }
            // A deleted group's members all end at the deletion.
            let deleted = try row.bool("deleted") ? spans.values.compactMap(\.removed).max() : nil
            return MemberView(
                conversation: try Rows.conversation(row), titleSeq: try row.integer("title_seq"), spans: spans,
                deleted: deleted)
        }
    }

    /// The list's query for `userID`: a page picked by `page` (see ``ListPlan``), filled in. Binds: `?1` the user,
    /// `?2`, `?3` the cursor, `?4` the limit, `?5` the unread count's limit, from `?6` on the filter's.
    private static func listQuery(page: String) -> String {
        // Only the page's rows are filled in (CROSS JOIN keeps the page outermost: SQLite would otherwise read all
        // the member's rows): the last entry is the one whose seq is the activity; the unread count (messages only,
        // not events) stops at its limit.
        """
        WITH page AS (\(page))
        SELECT c.id, c.kind, c.title, me.level, me.level_until, me.read_seq, page.activity AS activity,
               (SELECT default_level FROM notification_settings WHERE user_id = ?1) AS default_level,
               (SELECT count(*) FROM (SELECT 1 FROM messages m
                  WHERE m.conversation_id = c.id AND m.seq > me.read_seq AND m.sender_id <> ?1 AND m.event IS NULL AND NOT m.deleted
                  LIMIT ?5)) AS unread,
               last.seq, last.id AS message_id, last.sender_id, last.text, last.image_url, last.created_at, last.event, last.mentions, last.edits, last.deleted
        FROM page
        CROSS JOIN members me ON me.conversation_id = page.id AND me.user_id = ?1
        CROSS JOIN conversations c ON c.id = page.id
        LEFT JOIN messages last ON last.seq = page.activity AND last.conversation_id = page.id
        ORDER BY page.activity DESC, page.id DESC
        """
    }

    /// The page of `plan` after the cursor: `filter` holds on `me` and `c`. A member's place is the later of their
    /// conversation's activity and their own (when they joined).
    private static func page(_ plan: ListPlan, filter: String) -> String {
        let place = "max(me.activity, c.activity)"
        let kept = "me.removed_seq IS NULL AND c.deleted = 0 AND \(filter) AND (\(place), c.id) < (?2, ?3)"
        switch plan {
        case .scan:
            return """
                SELECT c.id AS id, \(place) AS activity
                FROM members me JOIN conversations c ON c.id = me.conversation_id
                WHERE me.user_id = ?1 AND \(kept)
                ORDER BY 2 DESC, 1 DESC LIMIT ?4
                """
        case .walk:
            return """
                SELECT id, activity FROM (
                    SELECT * FROM (
                        SELECT c.id AS id, \(place) AS activity
                        FROM conversations c INDEXED BY conversations_by_activity
                        CROSS JOIN members me ON me.conversation_id = c.id AND me.user_id = ?1
                        WHERE (c.activity, c.id) < (?2, ?3) AND \(kept)
                        ORDER BY c.activity DESC, c.id DESC LIMIT ?4)
                    UNION
                    SELECT * FROM (
                        SELECT c.id AS id, \(place) AS activity
                        FROM members me INDEXED BY members_by_activity
                        CROSS JOIN conversations c ON c.id = me.conversation_id
                        WHERE me.user_id = ?1 AND (me.activity, me.conversation_id) < (?2, ?3) AND \(kept)
                        ORDER BY me.activity DESC, me.conversation_id DESC LIMIT ?4))
                ORDER BY activity DESC, id DESC LIMIT ?4
                """
        }
    }

    public func conversations(
        of userID: String, after cursor: ConversationCursor?, limit: Int, filter: ConversationFilter
    ) async throws -> ConversationPage {
        let now = clock.now()
        return try await database.perform { connection in
            // Conversations are never deleted (a deleted group keeps its row): the last rowid counts them.
            let conversations = try connection.query(
                "SELECT coalesce(max(rowid), 0) AS n FROM conversations", []).first?.column("n")?.integer ?? 0
            let memberships = filter != .all ? 0 : try connection.query(
                "SELECT count(*) AS n FROM (SELECT 1 FROM members WHERE user_id = ?1 LIMIT ?2)",
                [.text(userID), .integer(ListPlan.countLimit(conversations: conversations, limit: limit))]
            ).first?.column("n")?.integer ?? 0
            let plan = ListPlan(memberships: memberships, conversations: conversations, limit: limit, filtered: filter != .all)
            let rows = try connection.query(
                Self.listQuery(page: Self.page(plan, filter: filter.sql(at: now))),
                // The first page starts "after" (Int64.max, ""): before everything, as no activity reaches it.
                [.text(userID), .integer(Int(cursor?.activity ?? Int64.max)), .text(cursor?.conversationID ?? ""),
                 .integer(limit), .integer(ConversationSummary.unreadLimit)]
            )
            let members = try Self.members(of: try rows.map { try $0.text("id") }, on: connection)
            let summaries = try rows.map { try Rows.summary($0, members: members[try $0.text("id")], at: now) }
            let next = summaries.count == limit ? summaries.last.map(ConversationCursor.init(after:)) : nil
            return ConversationPage(summaries: summaries, next: next)
        }
    }

    public func summary(of conversationID: String, for userID: String) async throws -> ConversationSummary? {
        let now = clock.now()
        return try await database.perform { connection in
            let rows = try connection.query(
                Self.listQuery(page: Self.page(.scan, filter: "me.conversation_id = ?6")),
                [.text(userID), .integer(Int(Int64.max)), .text(""), .integer(1), .integer(ConversationSummary.unreadLimit),
                 .text(conversationID)])
            guard let row = rows.first else { return nil }
            return try Rows.summary(
                row, members: try Self.members(of: [conversationID], on: connection)[conversationID], at: now)
        }
    }

    public func change(
        _ change: ConversationChange, in conversationID: String, by actor: ChangeActor, memberLimit: Int
    ) async throws -> ChangeOutcome {
        try await appending { connection in
            var group = GroupChange(conversationID: conversationID, actor: actor, at: self.clock.now(), on: connection)
            return try group.apply(change, memberLimit: memberLimit)
        }
    }
}

/// One change to a group, inside its transaction on SQLite: the group read, the steps ``GroupRules`` decides
/// carried out (the events appended, the rows written, the pushes dropped and cleared).
package struct GroupChange {
    package let conversationID: String
    package let authority: GroupChangeAuthority
    package let actorID: String
    package let connection: SQLiteHandle
    package let now: TimeInterval
    package var entries: [IncomingMessage] = []
    package var clears = 0

    package init(conversationID: String, actor: ChangeActor, at now: Date, on connection: SQLiteHandle) {
        self.init(conversationID: conversationID, authority: GroupChangeAuthority(actor), at: now, on: connection)
    }

    package init(conversationID: String, authority: GroupChangeAuthority, at now: Date, on connection: SQLiteHandle) {
        self.now = now.timeIntervalSince1970
        self.conversationID = conversationID
        self.authority = authority
        actorID = authority.senderID
        self.connection = connection
    }

    package mutating func apply(_ change: ConversationChange, memberLimit: Int) throws -> (entries: [IncomingMessage], result: ChangeOutcome) {
        let group = try snapshot()
        let steps = try GroupRules.steps(for: change, by: authority, in: group, memberLimit: memberLimit)
        let actor = try person(actorID)
        for step in steps { try carryOut(step, in: group.conversation, by: actor) }
        let record = try SQLiteStore.conversation(id: conversationID, on: connection)
        return (entries, ChangeOutcome(entries: entries, record: record, clears: clears))
    }

    /// The group as it is: not deleted, its members longest-standing first.
    private func snapshot() throws -> GroupSnapshot {
        let rows = try connection.query(
            "SELECT id, kind, title FROM conversations WHERE id = ?1 AND deleted = 0", [.text(conversationID)])
        guard let row = rows.first else { throw StoreError.conversationNotFound }
        let members = try connection.query(
            """
            SELECT user_id, owner FROM members WHERE conversation_id = ?1 AND removed_seq IS NULL
            ORDER BY added_seq, user_id
            """, [.text(conversationID)]
        ).map { GroupSnapshot.Member(id: $0.column("user_id")?.string ?? "", owner: try $0.bool("owner")) }
        return GroupSnapshot(conversation: try Rows.conversation(row), members: members)
    }

    /// Appends the step's event, then writes what it does at the event's seq.
    private mutating func carryOut(_ step: GroupStep, in conversation: Conversation, by actor: Person) throws {
        let event = ConversationEvent(kind: step.kind, members: try step.people.map(person), title: step.title)
        let seq = try append(event, conversation, actor).message.seq ?? 0
        for effect in step.effects {
            switch effect {
            case .add(let ids, let history):
                for id in ids {
                    try connection.query("INSERT OR IGNORE INTO users (id) VALUES (?1)", [.text(id)])
                    // Added: they receive from this event on, see the past if `history` says so, have read nothing
                    // after joining, and find the group at the top of their list. One removed before starts afresh.
                    try connection.query(
                        """
                        INSERT INTO members (conversation_id, user_id, added_seq, removed_seq, visible_from, read_seq, activity, owner, level)
                        VALUES (?1, ?2, ?3, NULL, ?4, ?3 - 1, ?3, 0, NULL)
                        ON CONFLICT (conversation_id, user_id) DO UPDATE SET added_seq = excluded.added_seq, removed_seq = NULL,
                            visible_from = excluded.visible_from, read_seq = excluded.read_seq, activity = excluded.activity,
                            owner = 0, level = NULL, level_until = NULL
                        """,
                        [.text(conversationID), .text(id), .integer(Int(seq)), .integer(history == .none ? Int(seq) : 0)])
                }
            case .end(let id):
                try connection.query(
                    "UPDATE members SET removed_seq = ?3, owner = 0 WHERE conversation_id = ?1 AND user_id = ?2",
                    [.text(conversationID), .text(id), .integer(Int(seq))])
                clears += try SQLiteStore.forgetPushes(
                    of: id, in: conversationID, at: seq, now: Date(timeIntervalSince1970: now), on: connection)
            case .setOwner(let id, let owner):
                try connection.query(
                    "UPDATE members SET owner = ?3 WHERE conversation_id = ?1 AND user_id = ?2",
                    [.text(conversationID), .text(id), .integer(owner ? 1 : 0)])
            case .retitle(let title):
                try connection.query(
                    "UPDATE conversations SET title = ?2, title_seq = ?3 WHERE id = ?1",
                    [.text(conversationID), .optionalText(title), .integer(Int(seq))])
            case .delete:
                try connection.query(
                    "DELETE FROM messages WHERE conversation_id = ?1 AND seq < ?2", [.text(conversationID), .integer(Int(seq))])
                try connection.query("DELETE FROM delivery_trail WHERE conversation_id = ?1", [.text(conversationID)])
                try connection.query("UPDATE conversations SET deleted = 1 WHERE id = ?1", [.text(conversationID)])
            }
        }
    }

    /// A user as they are now (a name only if they signed in).
    private func person(_ id: String) throws -> Person {
        let rows = try connection.query("SELECT id, name, picture, known FROM users WHERE id = ?1", [.text(id)])
        return try rows.first.flatMap(Rows.person) ?? Person(id: id, displayName: "")
    }

    /// Appends an event by `actor`: a row of its own in the log, with the next seq.
    private mutating func append(_ event: ConversationEvent, _ conversation: Conversation, _ actor: Person) throws -> IncomingMessage {
        let id = UUID().uuidString.lowercased()
        let rows = try connection.query(
            "INSERT INTO messages (id, conversation_id, sender_id, created_at, event) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq",
            [.text(id), .text(conversationID), .text(actor.id), .float(now), .optionalText(Rows.eventColumn(event))])
        guard let seq = rows.first?.column("seq")?.integer else { throw StoreError.damaged("an event was not stored") }
        var conversation = conversation
        if event.kind == .renamed { conversation.title = event.title }
        let entry = IncomingMessage(
            message: Message(id: id, conversationID: conversationID, senderID: actor.id, sentAt: Rows.date(now), seq: Int64(seq), event: event),
            conversation: conversation, sender: actor)
        entries.append(entry)
        return entry
    }
}
