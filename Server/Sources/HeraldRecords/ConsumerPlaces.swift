import Foundation

/// A consumer of the log whose place is kept in the database (``DurableConsumer``): each is told an entry once,
/// across a crash and across nodes.
public enum DurableConsumerName: String, CaseIterable, Sendable {
    /// The push decider: its output is the outbox's jobs.
    case push
    /// The webhook feed: its output is events and unread reminders.
    case webhook
}

/// What a durable consumer writes for a round of entries, in the transaction that moves its place.
public struct ConsumerOutput: Sendable {
    /// Push jobs: an alert for a member's device (one for a conversation the member has left is not written).
    public var pushJobs: [NewPushJob] = []
    /// Webhook events.
    public var webhookEvents: [NewWebhookEvent] = []
    /// Reminders to check later whether a member read a message.
    public var reminders: [NewUnreadReminder] = []
    /// The push decisions' steps of the delivery trail (written when the trail is on).
    public var trail: [TrailStep] = []

    /// An output; by default nothing.
    public init(
        pushJobs: [NewPushJob] = [], webhookEvents: [NewWebhookEvent] = [], reminders: [NewUnreadReminder] = [],
        trail: [TrailStep] = []
    ) {
        self.pushJobs = pushJobs
        self.webhookEvents = webhookEvents
        self.reminders = reminders
        self.trail = trail
    }

    /// Whether it writes no row.
    public var isEmpty: Bool {
        pushJobs.isEmpty && webhookEvents.isEmpty && reminders.isEmpty && trail.isEmpty
    }
}

/// The places of the log's durable consumers, each a row beside the messages, and the one write that moves a place
/// with what it decided: the same two calls on every backend, so the consumer machine is written once, above storage.
public protocol ConsumerPlaces: Sendable {
    /// Where `consumer` is: the last seq it decided on.
    func place(of consumer: DurableConsumerName) async throws -> Int64
    /// Moves `consumer` from `place` to `through` and writes `output`, in one transaction; when the place is no
    /// longer `place` (another node moved it meanwhile), writes nothing and returns nil. Otherwise returns the push
    /// jobs and webhook events written (a job already queued, or for someone no longer a member, is not).
    func advance(
        _ consumer: DurableConsumerName, from place: Int64, to through: Int64, writing output: ConsumerOutput
    ) async throws -> Int?
}
