import HeraldRecords

/// What became of one push, as a provider reports it.
public enum PushOutcome: Hashable, Sendable {
    /// The push service took it; `ticket`, if any, is to be checked later (``PushProvider/checkReceipt(_:)``); `id`
    /// is what the service calls it (APNs' `apns-id`, FCM's message name, Expo's ticket, Web Push's `Location`), for
    /// the delivery trail.
    case sent(ticket: String?, id: String? = nil)
    /// Try again later: rate limited (with the service's `Retry-After`, if it gave one), a server or network error.
    case retry(after: Duration?, reason: String)
    /// The token is dead (unregistered, not for this app): the device is removed.
    case removeDevice(reason: String)
    /// It can never be sent (too large, refused): dropped, with a log line.
    case drop(reason: String)
    /// The service answered with a redirect (HTTP 3xx), which is never followed: the push is dropped and the device
    /// kept (a redirect says nothing about the device, and where it points is not the service's to choose).
    case redirected(status: Int, location: String?)
    /// Nothing was sent: the push was written to the log instead (`--demo`, for a service without credentials). It is
    /// finished as a sent one is, and counted apart (`outcome="logged"` in `/metrics`).
    case logged
}

/// A push service: APNs, FCM, Expo, Web Push, or the log of `--demo`.
///
/// A provider turns a job into the service's request and the service's answer into a ``PushOutcome``; the
/// ``PushDispatcher`` does the rest (the outbox, retries, back-off, concurrency, removing dead devices). A new
/// service is one type conforming to this protocol.
public protocol PushProvider: Sendable {
    /// The platform of the devices it serves.
    var platform: DeviceRegistration.Platform { get }
    /// Its name in logs.
    var name: String { get }
    /// How many pushes it sends at once.
    var concurrency: Int { get }
    /// Sends one push.
    func send(_ job: PushJob) async -> PushOutcome
    /// Asks what became of a push whose ticket ``send(_:)`` returned.
    func checkReceipt(_ job: PushJob) async -> PushOutcome
}

extension PushProvider {
    /// Providers without tickets have nothing to check.
    public func checkReceipt(_ job: PushJob) async -> PushOutcome { .sent(ticket: nil) }
}
