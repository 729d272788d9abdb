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
    /// The system permission the device last reported (nil: it never did).
    public var permission: DevicePermission?
    /// When it last registered or reported its permission (nil from a server before 0.32).
    public var lastSeen: Date?
    /// Whether it registered push keys (``WirePushKeys``), so that with `HERALD_PUSH_CONTENT=encrypted` its pushes are
    /// encrypted to it (nil from a server before 0.33). A Web Push subscription always has them.
    public var encrypted: Bool?

    /// A device.
    public init(
        id: String, platform: PushPlatform, token: String, permission: DevicePermission? = nil, lastSeen: Date? = nil,
        encrypted: Bool? = nil
    ) {
        self.id = id
        self.platform = platform
        self.token = token
        self.permission = permission
        self.lastSeen = lastSeen
        self.encrypted = encrypted
    }
}

/// A device's push keys, as a Web Push subscription holds them (`PUT /v1/devices/{deviceId}` with `"keys"`): with
/// `HERALD_PUSH_CONTENT=encrypted` every APNs, FCM and Expo push to the device carries its words encrypted to these
/// (RFC 8291, `aes128gcm`), and only the device reads them (`PushKeyPair` in HeraldPresentation makes and opens them).
public struct WirePushKeys: Codable, Hashable, Sendable {
    /// The device's P-256 public key, uncompressed (65 bytes), in base64url.
    public var p256dh: String
    /// Its 16-byte authentication secret, in base64url.
    public var auth: String

    /// Keys, in base64url.
    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// Whether a device's system lets the app notify (`PUT /v1/devices/{deviceId}/permission`): what the troubleshooter
/// (`GET /v1/me/notifications/check`) reads. A value this build does not know reads as ``unknown``.
public enum DevicePermission: String, Hashable, Sendable, Codable, CaseIterable {
    /// Notifications are allowed (iOS `authorized` or `ephemeral`, a browser's `granted`, Android's on).
    case granted
    /// The person turned them off, or refused when asked.
    case denied
    /// iOS provisional authorization: delivered quietly to Notification Center, never with a sound or a banner.
    case provisional
    /// Never asked yet (iOS `notDetermined`, a browser's `default`).
    case notAsked = "not_asked"
    /// The app could not tell.
    case unknown

    /// Reads a value, taking one this build does not know as ``unknown``.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        self = DevicePermission(rawValue: text) ?? .unknown
    }
}

/// The body of `PUT /v1/devices/{deviceId}/permission`.
public struct WirePermissionReport: Codable, Hashable, Sendable {
    /// What the device's system says now.
    public var permission: DevicePermission

    /// A report.
    public init(permission: DevicePermission) {
        self.permission = permission
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
