import Foundation
import HeraldProtocol

/// An event for the app's backend, to queue in the webhook outbox.
public struct NewWebhookEvent: Sendable {
    /// What happened.
    public var type: WebhookEventType
    /// The conversation it concerns, if any: events of one conversation go out in order.
    public var conversationID: String?
    /// The user it concerns, for an event of no conversation (`device.removed`): those go out in order per user.
    public var userID: String?
    /// Its place in the log: an entry's own seq; nil for the log's last when it is queued (it follows the entries
    /// committed before it).
    public var seq: Int64?
    /// What it is about.
    public var data: WebhookEventData
    /// When it happened.
    public var time: Date

    /// An event.
    public init(
        type: WebhookEventType, conversationID: String?, userID: String? = nil, seq: Int64?, data: WebhookEventData,
        time: Date = Date()
    ) {
        self.type = type
        self.conversationID = conversationID
        self.userID = userID
        self.seq = seq
        self.data = data
        self.time = time
    }

    /// The order it keeps with others: by conversation, else by user.
    package var orderingKey: String {
        if let conversationID { return "c:" + conversationID }
        return "u:" + (userID ?? "")
    }

    /// Whether it is an entry's own event (entries come before the other events at the same seq).
    package var rank: Int { seq == nil ? 1 : 0 }

    /// Its data as stored: JSON.
    package var dataJSON: String {
        String(decoding: (try? WireJSON.encoder().encode(data)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

/// A reminder to check, later, whether a member read what they were sent (`unread.reminder`).
public struct NewUnreadReminder: Hashable, Sendable {
    /// The member.
    public var userID: String
    /// The conversation.
    public var conversationID: String
    /// The message they have not read.
    public var seq: Int64
    /// When to check.
    public var due: Date

    /// A reminder.
    public init(userID: String, conversationID: String, seq: Int64, due: Date) {
        self.userID = userID
        self.conversationID = conversationID
        self.seq = seq
        self.due = due
    }
}

/// A queued event, leased to be delivered.
public struct WebhookJob: Hashable, Sendable {
    /// Its row: the event's id.
    public var id: Int64
    /// Its type's raw value.
    public var type: String
    /// Its place in the log.
    public var seq: Int64
    /// Its conversation, if any.
    public var conversationID: String?
    /// Its data, as JSON.
    public var data: String
    /// When it happened.
    public var time: Date
    /// How many tries failed so far.
    public var attempts: Int
}

/// The durable side of webhooks, kept by the store beside the messages: events are written in the transaction of
/// what they tell (an entry's with the feed's place in the log, a read's with the read marker, a dead device's
/// with its removal) and deleted once the backend answered 2xx (or they were given up), so none is lost however the
/// server stops.
public protocol WebhookOutbox: Sendable {
    /// Leases up to `limit` events that may go now, for `lease`: for each conversation (or user), only the first in
    /// `seq` order that is waiting, once it is due and once the feed has queued every entry up to its `seq`. Also
    /// tells when the next event not leased falls due.
    func leaseWebhooks(now: Date, limit: Int, lease: Duration) async throws -> (jobs: [WebhookJob], nextDue: Date?)

    /// Deletes a delivered (or given up) event.
    func finishWebhook(id: Int64) async throws

    /// Puts a leased event back, to be tried again at `due`.
    func retryWebhook(id: Int64, at due: Date) async throws

    /// Releases every lease (at start, with one node: what was being sent when it stopped is sent again).
    func releaseWebhookLeases() async throws

    /// Puts back the events `ids` this server leased and never started, as ``PushOutbox/releasePushJobs(ids:now:)``
    /// does jobs.
    func releaseWebhooks(ids: [Int64], now: Date) async throws

    /// Turns the reminders due by `now` into `unread.reminder` events, for members who still have not read the
    /// message and are still members; drops the others. Returns the events queued.
    func fireReminders(now: Date, limit: Int) async throws -> Int

    /// Drops `userID`'s reminders: a device of theirs is connected.
    func cancelReminders(of userID: String) async throws

    /// How many events wait to be delivered.
    func webhookCount() async throws -> Int
}

