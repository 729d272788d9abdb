import Foundation

/// The push service a device's token belongs to (`PUT /v1/devices/{deviceId}`).
public enum PushPlatform: String, Hashable, Sendable, Codable, CaseIterable {
    /// Apple Push Notification service: the device token, in hex.
    case apns
    /// Firebase Cloud Messaging: the registration token.
    case fcm
    /// Expo's push service (React Native apps on Expo): an `ExponentPushToken[…]`.
    case expo
    /// Web Push: the browser's subscription.
    case webpush
}

/// A registered device, as `GET /v1/devices` lists it.
public struct WireDevice: Codable, Hashable, Sendable {
    /// The app's id for the device.
    public var id: String
    /// Its push service.
    public var platform: PushPlatform
    /// Its push token.
    public var token: String
    /// Whether the system lets the app notify on it, as the app last reported it; nil when it never did (or the
    /// server is older than the report).
    public var permission: DevicePermission?
    /// When it last registered or reported its permission; nil from a server older than that.
    public var lastSeen: Date?

    /// A device.
    public init(id: String, platform: PushPlatform, token: String, permission: DevicePermission? = nil, lastSeen: Date? = nil) {
        self.id = id
        self.platform = platform
        self.token = token
        self.permission = permission
        self.lastSeen = lastSeen
    }
}

/// `{"devices": [...]}`: the answer to `GET /v1/devices`.
public struct WireDeviceList: Codable, Hashable, Sendable {
    /// The caller's devices, by id.
    public var devices: [WireDevice]

    /// A list of these devices.
    public init(devices: [WireDevice]) {
        self.devices = devices
    }
}

/// The answer to `PUT /v1/devices/{deviceId}`: the device's key, which reads the messages pushed privately to this
/// device (`GET /v1/push/conversations/{conversationId}/messages/{messageId}`) and nothing else.
///
/// Each registration makes a new key and ends the one before; removing the device ends it. Herald keeps only its
/// SHA-256, so the key is shown this once: the app keeps it where its Notification Service Extension (or Android
/// messaging service) can read it.
public struct WireDeviceRegistration: Codable, Hashable, Sendable {
    /// `hdk_` and 43 characters of base64url (32 random bytes).
    public var deviceKey: String

    /// A registration's answer.
    public init(deviceKey: String) {
        self.deviceKey = deviceKey
    }
}

/// The answer to `GET /v1/push/conversations/{conversationId}/messages/{messageId}`: what a full push of the message
/// would have said to this device's user, and the message itself. A device fetches it when its push withheld the
/// words (`withheld` in the push's data: `sender` or `none`).
public struct WirePushedMessage: Codable, Hashable, Sendable {
    /// The notification's title: `New message from <sender>`, `New message in <group>`, or a group's title.
    public var title: String?
    /// The notification's body: the preview, `<sender>: <preview>` in a group, or an event's line.
    public var body: String
    /// The data a full push carries (docs/push.md, "What a push says"): `senderId`, `senderName`,
    /// `senderAvatarURL`, `conversationTitle`, `isGroup`, `mentioned` and the ids, as strings.
    public var data: [String: String]
    /// The message.
    public var message: WireMessage

    /// A pushed message.
    public init(title: String?, body: String, data: [String: String], message: WireMessage) {
        self.title = title
        self.body = body
        self.data = data
        self.message = message
    }
}

/// Whether the system lets the app show notifications on a device, as the app reported it
/// (`PUT /v1/devices/{deviceId}/permission`, or `permission` in the registration): what the troubleshooter and
/// `GET /v1/devices` say of it.
///
/// A value this build does not know (a newer server's) is ``other(_:)``, kept as it came, so it never stops an answer
/// from being read.
public enum DevicePermission: Hashable, Sendable {
    /// Notifications are allowed (`granted`).
    case granted
    /// The person turned notifications off for the app (`denied`).
    case denied
    /// iOS's quiet delivery: notifications go to Notification Center without a sound or a banner (`provisional`).
    case provisional
    /// The app has not asked yet: iOS's `notDetermined`, a browser's `default` (`not_asked`).
    case notAsked
    /// The app could not tell (`unknown`).
    case unknown
    /// A value this build does not know, as the server wrote it. Reported to a server, it is refused
    /// (`invalid_request`).
    case other(String)
}

extension DevicePermission: Codable {
    /// The permission the wire's `value` names; ``other(_:)`` for one this build does not know.
    public init(rawValue value: String) {
        switch value {
        case "granted": self = .granted
        case "denied": self = .denied
        case "provisional": self = .provisional
        case "not_asked": self = .notAsked
        case "unknown": self = .unknown
        default: self = .other(value)
        }
    }

    /// Its name on the wire.
    public var rawValue: String {
        switch self {
        case .granted: "granted"
        case .denied: "denied"
        case .provisional: "provisional"
        case .notAsked: "not_asked"
        case .unknown: "unknown"
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
