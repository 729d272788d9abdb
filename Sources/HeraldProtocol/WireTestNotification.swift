/// The answer to `POST /v1/devices/{deviceId}/test`: what became of a test notification the server sent at once to
/// one of the caller's devices (title "Herald", body "Test notification: notifications reach this device.", data
/// `type` `test`).
public struct WireTestNotification: Codable, Hashable, Sendable {
    /// What the push service (or the server) did with a test notification.
    ///
    /// A value this build does not know (a newer server's) is ``other(_:)``, kept as it came.
    public enum Outcome: Hashable, Sendable {
        /// The push service took it (`sent`): it is on its way to the device.
        case sent
        /// A demo server wrote it to its log instead of sending it (`logged`).
        case logged
        /// The push service said to try later (`retry`).
        case retry
        /// The push service said the token is dead, and the server removed the device (`device_removed`): the app
        /// registers it again with the token the system gives it now.
        case deviceRemoved
        /// The push service refused it for good (`refused`; ``WireTestNotification/reason`` says what it said).
        case refused
        /// The push service answered with a redirect, which the server does not follow (`redirected`).
        case redirected
        /// The server has no push service configured for the device's platform (`no_provider`;
        /// ``WireTestNotification/reason`` names the setting).
        case noProvider
        /// An outcome this build does not know, as the server wrote it.
        case other(String)
    }

    /// The device's id.
    public var device: String
    /// Its push service.
    public var platform: PushPlatform
    /// What became of the notification.
    public var outcome: Outcome
    /// The id the push service gave it, when it gives one.
    public var providerID: String?
    /// Why it was not sent, in the push service's or the server's words; nil when it was.
    public var reason: String?

    /// A test notification's answer.
    public init(device: String, platform: PushPlatform, outcome: Outcome, providerID: String? = nil, reason: String? = nil) {
        self.device = device
        self.platform = platform
        self.outcome = outcome
        self.providerID = providerID
        self.reason = reason
    }
}

extension WireTestNotification.Outcome: Codable {
    /// The outcome the wire's `value` names; ``other(_:)`` for one this build does not know.
    public init(rawValue value: String) {
        switch value {
        case "sent": self = .sent
        case "logged": self = .logged
        case "retry": self = .retry
        case "device_removed": self = .deviceRemoved
        case "refused": self = .refused
        case "redirected": self = .redirected
        case "no_provider": self = .noProvider
        default: self = .other(value)
        }
    }

    /// Its name on the wire.
    public var rawValue: String {
        switch self {
        case .sent: "sent"
        case .logged: "logged"
        case .retry: "retry"
        case .deviceRemoved: "device_removed"
        case .refused: "refused"
        case .redirected: "redirected"
        case .noProvider: "no_provider"
        case .other(let value): value
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
