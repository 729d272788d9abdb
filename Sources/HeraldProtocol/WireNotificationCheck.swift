import Foundation

/// The answer to `GET /v1/me/notifications/check`: the person's troubleshooter. The server checks, one by one, what
/// could keep notifications from them (``checks``, in a fixed order), and says what it knows of each of their devices
/// (``devices``). Titles, details and actions are plain English sentences for people: an app shows them as text.
public struct WireNotificationCheck: Codable, Hashable, Sendable {
    /// One thing checked.
    public struct Check: Codable, Hashable, Sendable, Identifiable {
        /// Which check: `devices`, `permission`, `level`, `snooze`, `quiet_hours`, `pushes`, `confirmations`
        /// (``ID``'s constants); a newer server may add others.
        public var id: ID
        /// How it stands.
        public var state: State
        /// What was checked, in a few words.
        public var title: String
        /// What the server found.
        public var detail: String
        /// What the person can do about it; nil when nothing needs doing.
        public var action: String?

        /// A check.
        public init(id: ID, state: State, title: String, detail: String, action: String? = nil) {
            self.id = id
            self.state = state
            self.title = title
            self.detail = detail
            self.action = action
        }
    }

    /// A check's id: what the server checked. Any string reads, so a newer server's checks still show.
    public struct ID: RawRepresentable, Codable, Hashable, Sendable, ExpressibleByStringLiteral {
        /// Its name on the wire.
        public var rawValue: String

        /// The check `rawValue` names.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// The check named `value`.
        public init(stringLiteral value: String) {
            self.init(rawValue: value)
        }

        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        /// Whether the person has a device registered for pushes.
        public static let devices: ID = "devices"
        /// Whether the system lets the app notify on their devices.
        public static let permission: ID = "permission"
        /// Their default notification level.
        public static let level: ID = "level"
        /// Whether they snoozed notifications.
        public static let snooze: ID = "snooze"
        /// Whether their quiet hours hold now.
        public static let quietHours: ID = "quiet_hours"
        /// What became of the last pushes to their devices.
        public static let pushes: ID = "pushes"
        /// Whether their connected apps confirm what they take in (else they may hold pushes back).
        public static let confirmations: ID = "confirmations"
    }

    /// How a check stands.
    ///
    /// A value this build does not know (a newer server's) is ``other(_:)``, kept as it came.
    public enum State: Hashable, Sendable {
        /// Nothing here keeps notifications away.
        case ok
        /// This may keep some notifications away, or make them quiet.
        case warning
        /// This keeps notifications away.
        case problem
        /// A state this build does not know, as the server wrote it.
        case other(String)
    }

    /// What the server knows of one of the person's devices.
    public struct Device: Codable, Hashable, Sendable, Identifiable {
        /// The device's id.
        public var id: String
        /// Its push service.
        public var platform: PushPlatform
        /// When it last registered or reported its permission; nil when it never did.
        public var lastSeen: Date?
        /// Whether the system lets the app notify on it, as the app last reported it; nil when it never did.
        public var permission: DevicePermission?
        /// Whether it has a live stream open now.
        public var connected: Bool
        /// Whether its stream confirms what it takes in (which holds back the pushes of what it confirmed); nil
        /// when it never connected a stream.
        public var confirms: Bool?
        /// Its last pushes, newest first (at most 5).
        public var lastPushes: [Push]

        /// A device as the troubleshooter sees it.
        public init(
            id: String, platform: PushPlatform, lastSeen: Date? = nil, permission: DevicePermission? = nil,
            connected: Bool = false, confirms: Bool? = nil, lastPushes: [Push] = []
        ) {
            self.id = id
            self.platform = platform
            self.lastSeen = lastSeen
            self.permission = permission
            self.connected = connected
            self.confirms = confirms
            self.lastPushes = lastPushes
        }
    }

    /// One of a device's last pushes: the last step it came to.
    public struct Push: Codable, Hashable, Sendable {
        /// When.
        public var at: Date
        /// What became of it.
        public var step: WireDeliveryStep.Kind
        /// The push service's id or words; nil when there are none.
        public var detail: String?
        /// The conversation of the message pushed; empty for a test notification.
        public var conversation: String
        /// The message pushed; nil for a test notification.
        public var message: String?

        /// A push.
        public init(at: Date, step: WireDeliveryStep.Kind, detail: String? = nil, conversation: String, message: String? = nil) {
            self.at = at
            self.step = step
            self.detail = detail
            self.conversation = conversation
            self.message = message
        }
    }

    /// When the server checked.
    public var checkedAt: Date
    /// The checks, in the server's order.
    public var checks: [Check]
    /// The person's registered devices.
    public var devices: [Device]

    /// A troubleshooter's answer.
    public init(checkedAt: Date, checks: [Check], devices: [Device]) {
        self.checkedAt = checkedAt
        self.checks = checks
        self.devices = devices
    }
}

extension WireNotificationCheck.State: Codable {
    /// The state the wire's `value` names; ``other(_:)`` for one this build does not know.
    public init(rawValue value: String) {
        switch value {
        case "ok": self = .ok
        case "warning": self = .warning
        case "problem": self = .problem
        default: self = .other(value)
        }
    }

    /// Its name on the wire.
    public var rawValue: String {
        switch self {
        case .ok: "ok"
        case .warning: "warning"
        case .problem: "problem"
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
