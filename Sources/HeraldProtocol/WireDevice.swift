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

    /// A device.
    public init(id: String, platform: PushPlatform, token: String) {
        self.id = id
        self.platform = platform
        self.token = token
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
