import Foundation
import HeraldCore
import HeraldProtocol

/// A row of a query's result, read by column name: what both stores' rows (SQLite's and PostgreSQL's) offer, so
/// that a message, a conversation or a person is decoded from either by the same code.
package protocol StoredRow {
    /// The text in `column`, nil for NULL.
    func optionalText(_ column: String) throws -> String?
    /// The integer in `column`, nil for NULL.
    func optionalInteger(_ column: String) throws -> Int64?
    /// The number in `column`, nil for NULL.
    func optionalDouble(_ column: String) throws -> Double?
    /// The truth value in `column` (SQLite keeps 0 and 1).
    func bool(_ column: String) throws -> Bool
}

extension StoredRow {
    /// The text in `column`, which must not be NULL.
    package func text(_ column: String) throws -> String {
        guard let text = try optionalText(column) else { throw StoreError.damaged("no \(column) in a row") }
        return text
    }

    /// The integer in `column`, which must not be NULL.
    package func integer(_ column: String) throws -> Int64 {
        guard let value = try optionalInteger(column) else { throw StoreError.damaged("no \(column) in a row") }
        return value
    }
}

/// How rows become Herald's values, for both stores: the columns each query names, decoded once here.
package enum Rows {
    /// The key that finds the direct chat of `members` (sorted by bytes): each id prefixed by its length in bytes,
    /// so no two pairs of ids share a key, whatever characters they hold.
    package static func directKey(_ members: [String]) -> String {
        members.map { "\($0.utf8.count):\($0)" }.joined()
    }

    /// The entry in a row of `seq`, `<idColumn>`, `conversation_id`, `sender_id`, `text`, `image_url`, `created_at`,
    /// `event`, and `silent`, `mentions`, `edits` and `deleted` where they matter (a row without them is a message as
    /// it was sent).
    package static func message(_ row: some StoredRow, idColumn: String = "id", conversationID: String? = nil) throws -> Message {
        let mentions = mentions(try row.optionalText("mentions"))
        return Message(
            id: try row.text(idColumn),
            conversationID: try conversationID ?? row.text("conversation_id"),
            senderID: try row.text("sender_id"),
            text: try row.optionalText("text"),
            imageURL: try row.optionalText("image_url").flatMap(URL.init(string:)),
            sentAt: date(try row.optionalDouble("created_at") ?? 0),
            seq: try row.integer("seq"),
            event: try event(from: row.optionalText("event")),
            silent: try row.bool("silent"),
            mentions: mentions.ids,
            mentionsAll: mentions.all,
            edited: (try row.optionalInteger("edits") ?? 0) > 0,
            deleted: try row.bool("deleted"))
    }

    /// The `mentions` column of `ids` and `all`: JSON, or nil when it mentions no one.
    package static func mentionsColumn(ids: [String], all: Bool) -> String? {
        guard !ids.isEmpty || all else { return nil }
        return (try? JSONEncoder().encode(StoredMentions(ids: ids, all: all))).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The mentions in a `mentions` column (none for NULL or what cannot be read).
    package static func mentions(_ column: String?) -> StoredMentions {
        column.flatMap { try? JSONDecoder().decode(StoredMentions.self, from: Data($0.utf8)) } ?? StoredMentions(ids: [], all: false)
    }

    /// The entry in a row of ``message(_:idColumn:conversationID:)``'s columns and `kind`, `title`, `sender_name`,
    /// `sender_picture`: with its conversation and sender.
    package static func incoming(_ row: some StoredRow) throws -> IncomingMessage {
        let message = try message(row)
        return IncomingMessage(
            message: message,
            conversation: Conversation(
                id: message.conversationID,
                kind: Conversation.Kind(rawValue: try row.text("kind")) ?? .group,
                title: try row.optionalText("title")),
            sender: Person(
                id: message.senderID, displayName: try row.optionalText("sender_name") ?? "",
                avatarURL: try row.optionalText("sender_picture").flatMap(URL.init(string:))))
    }

    /// The conversation in a row of `id`, `kind`, `title`.
    package static func conversation(_ row: some StoredRow) throws -> Conversation {
        guard let kind = Conversation.Kind(rawValue: try row.text("kind")) else {
            throw StoreError.damaged("a conversation row")
        }
        return Conversation(id: try row.text("id"), kind: kind, title: try row.optionalText("title"))
    }

    /// The user in a row of `id`, `name`, `picture`, `known`, if they are one: they signed in or the app's backend
    /// made them (a name may then be empty: a sign-in that carried neither a name nor an email; clients say
    /// "Someone"), or they have a name (an erased user's).
    package static func person(_ row: some StoredRow) throws -> Person? {
        let name = try row.optionalText("name") ?? ""
        guard try !name.isEmpty || row.bool("known") else { return nil }
        return Person(id: try row.text("id"), displayName: name, avatarURL: try row.optionalText("picture").flatMap(URL.init(string:)))
    }

    /// The device in a row with `user_id`, `id`, `platform` and `token`; nil when any is missing or unknown.
    package static func device(_ row: some StoredRow) throws -> DeviceRegistration? {
        guard let userID = try row.optionalText("user_id"), let id = try row.optionalText("id"),
              let token = try row.optionalText("token"),
              let platform = try row.optionalText("platform").flatMap(DeviceRegistration.Platform.init)
        else { return nil }
        return DeviceRegistration(
            id: id, userID: userID, platform: platform, token: token,
            keys: try row.optionalText("push_keys").flatMap(PushEncryptionKeys.init(stored:)))
    }

    /// A device's row of `user_id`, `id`, `platform`, `token`, `permission` and `seen_at`, with what it reported.
    package static func reportedDevice(_ row: some StoredRow) throws -> ReportedDevice? {
        guard let device = try device(row) else { return nil }
        return ReportedDevice(
            device: device, permission: try row.optionalText("permission").map { DevicePermission(rawValue: $0) ?? .unknown },
            lastSeen: try row.optionalDouble("seen_at").map(Date.init(timeIntervalSince1970:)))
    }

    /// A step of the delivery trail in a row of `at`, `conversation_id`, `seq`, `user_id`, `device_id`, `step`,
    /// `reasons`, `detail` and, when the query joins it, `message_id`; nil for a step this build does not know.
    package static func trailStep(_ row: some StoredRow) throws -> TrailStep? {
        guard let kind = TrailStep.Kind(rawValue: try row.text("step")) else { return nil }
        var step = TrailStep(
            conversationID: try row.text("conversation_id"), seq: try row.integer("seq"), userID: try row.text("user_id"),
            deviceID: try row.text("device_id"), at: Date(timeIntervalSince1970: try row.optionalDouble("at") ?? 0),
            kind: kind, reasons: TrailStep.reasons(stored: try row.optionalText("reasons")),
            detail: try row.optionalText("detail"))
        step.messageID = try? row.optionalText("message_id")
        return step
    }

    /// A member's row of `user_id`, `added_seq`, `removed_seq` as a span.
    package static func span(_ row: some StoredRow) throws -> (userID: String, span: MemberSpan) {
        (try row.text("user_id"), MemberSpan(added: try row.integer("added_seq"), removed: try row.optionalInteger("removed_seq")))
    }

    /// The summary in a row of the list's query: the conversation, the member's marker, level (`level`,
    /// `level_until`, `default_level`; as in force at `now`) and activity, the
    /// unread count, and the last entry (`seq`, `message_id`, `sender_id`, `text`, `image_url`, `created_at`,
    /// `event`; NULLs when there is none); `members` are its members and people.
    package static func summary(
        _ row: some StoredRow, members: (ids: [String], people: [Person], owners: [String]), at now: Date
    ) throws -> ConversationSummary {
        let conversation = try conversation(row)
        let choice = try LevelSQL.choice(row).flatMap { $0.holds(at: now) ? $0 : nil }
        let defaultLevel = try row.optionalText("default_level").flatMap(NotificationLevel.init(rawValue:)) ?? .all
        let lastMessage: Message? = try row.optionalInteger("seq") == nil
            ? nil : try message(row, idColumn: "message_id", conversationID: conversation.id)
        return ConversationSummary(
            record: ConversationRecord(
                conversation: conversation, memberIDs: members.ids, people: members.people, ownerIDs: members.owners),
            lastMessage: lastMessage,
            unreadCount: Int(try row.optionalInteger("unread") ?? 0),
            readUpTo: try row.optionalInteger("read_seq") ?? 0,
            muted: (choice?.level ?? defaultLevel) == .nothing,
            level: choice,
            activity: try row.optionalInteger("activity") ?? 0)
    }

    /// A webhook event in a row of `id`, `type`, `seq`, `conversation_id`, `data`, `created_at`, `attempts`.
    package static func webhookJob(_ row: some StoredRow) throws -> WebhookJob {
        WebhookJob(
            id: try row.integer("id"), type: try row.text("type"), seq: try row.integer("seq"),
            conversationID: try row.optionalText("conversation_id"), data: try row.text("data"),
            time: date(try row.optionalDouble("created_at") ?? 0), attempts: Int(try row.integer("attempts")))
    }

    /// The conversation in a row of `id`, `kind`, `title`, as a webhook names it.
    package static func webhookConversation(_ row: some StoredRow) throws -> WebhookConversation {
        WebhookConversation(id: try row.text("id"), kind: try row.text("kind"), title: try row.optionalText("title"))
    }

    /// The `unread.reminder` of `userID` for the message `seq`, from a row of the conversation's `id`, `kind`,
    /// `title` and the member's `unread` count; nil when nothing is unread.
    package static func unreadReminder(_ row: some StoredRow, userID: String, seq: Int64, at time: Date) throws -> NewWebhookEvent? {
        let unread = try row.integer("unread")
        guard unread > 0 else { return nil }
        return NewWebhookEvent(
            type: .unreadReminder, conversationID: try row.text("id"), seq: nil,
            data: WebhookEventData(
                conversation: try webhookConversation(row), userId: userID, unreadCount: Int(unread), firstUnreadSeq: seq),
            time: time)
    }

    /// An event as its column keeps it: JSON.
    package static func eventColumn(_ event: ConversationEvent?) -> String? {
        guard let event else { return nil }
        return String(decoding: (try? JSONEncoder().encode(event)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The event its column kept; nil for a message (NULL).
    package static func event(from column: String?) throws -> ConversationEvent? {
        guard let column else { return nil }
        do {
            return try JSONDecoder().decode(ConversationEvent.self, from: Data(column.utf8))
        } catch {
            throw StoreError.damaged("an event row")
        }
    }

    /// A stored time, to the millisecond, so a message reads back exactly as it was sent.
    package static func date(_ seconds: Double) -> Date {
        Date(timeIntervalSince1970: (seconds * 1000).rounded() / 1000)
    }
}

/// The members of some conversations, as the list and a conversation's answer show them.
package struct MemberRows {
    private(set) var byConversation: [String: (ids: [String], people: [Person], owners: [String])] = [:]

    /// Adds a row of `conversation_id`, `id`, `name`, `picture`, `owner` (in id order).
    package mutating func add(_ row: some StoredRow) throws {
        let conversationID = try row.text("conversation_id")
        let id = try row.text("id")
        var entry = byConversation[conversationID] ?? ([], [], [])
        entry.ids.append(id)
        if let person = try Rows.person(row) { entry.people.append(person) }
        if try row.bool("owner") { entry.owners.append(id) }
        byConversation[conversationID] = entry
    }

    /// The members of `conversationID`.
    package subscript(_ conversationID: String) -> (ids: [String], people: [Person], owners: [String]) {
        byConversation[conversationID] ?? ([], [], [])
    }

    /// An empty one.
    package init() {}
}

/// A message's mentions as the `mentions` column keeps them.
package struct StoredMentions: Codable {
    package var ids: [String]
    package var all: Bool
}
