import Foundation
import HeraldProtocol

/// Where and how the app's backend hears what happened (`HERALD_WEBHOOK_*`, `HERALD_UNREAD_REMINDER`).
public struct WebhookSettings: Hashable, Sendable {
    /// The backend's endpoint (`HERALD_WEBHOOK_URL`); nil: no webhooks.
    public var url: String?
    /// The HMAC key of the signature (`HERALD_WEBHOOK_SECRET`, at least 32 bytes).
    public var secret = ""
    /// The event types sent (`HERALD_WEBHOOK_EVENTS`, separated by commas; default all).
    public var events = Set(WebhookEventType.allCases)
    /// Whether the endpoint may be on this machine or a private network (`HERALD_WEBHOOK_ALLOW_PRIVATE=1`): the
    /// backend beside Herald in one private network, or a test.
    public var allowPrivate = false
    /// How long after the first unread message a member who had no device connected meanwhile is reminded of
    /// (`HERALD_UNREAD_REMINDER`, seconds); nil: no reminders (the default).
    public var reminder: Duration?
    /// How long an event is tried before it is given up (`HERALD_WEBHOOK_MAX_AGE`, default a day).
    public var maxAge: Duration = .seconds(24 * 3600)
    /// The first retry's wait; each further one waits twice as long (with jitter), up to ``maxRetryWait``.
    public var retryBase: Duration = .seconds(1)
    /// The longest wait between two tries.
    public var maxRetryWait: Duration = .seconds(10 * 60)
    /// How long one delivery may take.
    public var timeout: Duration = .seconds(10)
    /// How many deliveries (to different conversations) are in flight at once.
    public var concurrency = 16

    /// No webhooks.
    public init() {}

    /// Whether webhooks are on.
    public var isOn: Bool { url != nil }

    /// Whether events of `type` are sent.
    public func wants(_ type: WebhookEventType) -> Bool {
        isOn && events.contains(type) && (type != .unreadReminder || reminder != nil)
    }
}
