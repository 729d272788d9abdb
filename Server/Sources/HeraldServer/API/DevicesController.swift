import Crypto
import Foundation
import HeraldProtocol
import HeraldRecords
import Hummingbird

/// `/v1/devices`: the caller's devices; `/v1/devices/{deviceId}`: register a device's push token (the answer is the
/// device's key, ``DeviceReadKey``), and remove it on sign-out; `…/permission`: what its system lets the app do;
/// `…/test`: a test notification, answered with what the push service said.
///
/// Devices belong to their user: the same device id under two users is two devices, and a push token belongs to
/// the device that registered it last (a phone that changed hands stops getting its old owner's pushes).
struct DevicesController {
    let store: any DeviceStore
    let limits: ServerLimits
    let userLimits: UserLimits
    /// What sends a test notification.
    let push: PushDispatcher
    /// Which Web Push endpoints are taken (``AddressPolicy``).
    let webPushPolicy: AddressPolicy
    /// Whether an APNs, FCM or Expo device must register push keys (``PushSettings/requireEncryption``).
    var requireEncryption = false

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.get("devices", use: list)
        group.put("devices/:deviceId", use: register)
        group.delete("devices/:deviceId", use: remove)
        group.put("devices/:deviceId/permission", use: reportPermission)
        group.post("devices/:deviceId/test", use: test)
    }

    struct RegisterRequest: Decodable {
        var platform: DeviceRegistration.Platform
        var token: String
        /// The system's permission, when the app says it as it registers.
        var permission: String?
        /// The keys its pushes are encrypted to.
        var keys: WirePushKeys?
    }

    struct PermissionRequest: Decodable {
        var permission: String
    }

    /// `text` as a permission.
    ///
    /// - Throws: ``APIError`` `invalid_request` for anything but the values ``DevicePermission`` names.
    private static func permission(_ text: String) throws -> DevicePermission {
        guard let permission = DevicePermission(rawValue: text) else {
            throw APIError.invalidRequest(
                "`permission` must be one of \(DevicePermission.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return permission
    }

    @Sendable func list(_ request: Request, context: HeraldRequestContext) async throws -> WireDeviceList {
        let identity = try context.requireIdentity()
        let devices = try await store.reportedDevices(of: identity.userID)
        return WireDeviceList(devices: devices.map {
            WireDevice(
                id: $0.device.id, platform: $0.device.platform, token: $0.device.token, permission: $0.permission,
                lastSeen: $0.lastSeen, encrypted: $0.device.platform == .webpush || $0.device.keys != nil)
        })
    }

    /// Registers the device and answers with its new key (``WireDeviceRegistration``), which ends the one before.
    @Sendable func register(_ request: Request, context: HeraldRequestContext) async throws -> WireDeviceRegistration {
        let identity = try context.requireIdentity()
        let deviceID = try context.parameters.id("deviceId")
        let body = try await request.decodeJSON(as: RegisterRequest.self, context: context)
        if let problem = PushToken.problem(with: body.token, platform: body.platform, policy: webPushPolicy) {
            throw APIError.invalidRequest("`token` \(problem)")
        }
        let permission = try body.permission.map(Self.permission)
        let keys = try body.keys.map { try Self.pushKeys($0, platform: body.platform) }
        if requireEncryption, keys == nil, body.platform != .webpush {
            throw APIError(
                .badRequest, .encryptionRequired,
                "this server encrypts every push: register the device with `keys` (`p256dh` and `auth`, base64url)")
        }
        let key = DeviceReadKey.make()
        try await store.registerDevice(
            DeviceRegistration(id: deviceID, userID: identity.userID, platform: body.platform, token: body.token, keys: keys),
            limit: limits.devicesPerUser, keyDigest: key.digest)
        if let permission {
            _ = try await store.setPermission(permission, deviceID: deviceID, userID: identity.userID)
        }
        return WireDeviceRegistration(deviceKey: key.key)
    }

    /// `keys` checked: an uncompressed P-256 public key and a 16-byte secret, for a device that is not a Web Push
    /// subscription (whose keys are in it).
    ///
    /// - Throws: ``APIError`` `invalid_request` saying which.
    private static func pushKeys(_ keys: WirePushKeys, platform: DeviceRegistration.Platform) throws -> PushEncryptionKeys {
        guard platform != .webpush else {
            throw APIError.invalidRequest("a Web Push subscription has its keys in it: send no `keys`")
        }
        guard keys.p256dh.utf8.count <= 100, let p256dh = Data(base64URL: keys.p256dh),
              (try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)) != nil
        else { throw APIError.invalidRequest("`keys.p256dh` must be an uncompressed P-256 public key (65 bytes), base64url") }
        guard keys.auth.utf8.count <= 30, let auth = Data(base64URL: keys.auth), auth.count == 16 else {
            throw APIError.invalidRequest("`keys.auth` must be 16 bytes, base64url")
        }
        return PushEncryptionKeys(p256dh: p256dh, auth: auth)
    }

    /// Records what the device's system lets the app do (``DevicePermission``): the troubleshooter reads it.
    @Sendable func reportPermission(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let deviceID = try context.parameters.id("deviceId")
        let body = try await request.decodeJSON(as: PermissionRequest.self, context: context)
        guard try await store.setPermission(Self.permission(body.permission), deviceID: deviceID, userID: identity.userID) else {
            throw Self.noDevice
        }
        return .noContent
    }

    /// Sends a test notification to one of the caller's devices, at most ``UserLimits/testsPerMinute`` a minute.
    @Sendable func test(_ request: Request, context: HeraldRequestContext) async throws -> WireTestNotification {
        let identity = try context.requireIdentity()
        let deviceID = try context.parameters.id("deviceId")
        guard let device = try await store.devices(of: identity.userID).first(where: { $0.id == deviceID }) else {
            throw Self.noDevice
        }
        try userLimits.testNotification(by: identity.userID)
        return try await push.test(device)
    }

    private static let noDevice = APIError(.notFound, .notFound, "you have no device with that id")

    @Sendable func remove(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let deviceID = try context.parameters.id("deviceId")
        guard try await store.removeDevice(id: deviceID, userID: identity.userID) else {
            throw Self.noDevice
        }
        return .noContent
    }
}

/// What a push token of each platform looks like. A token goes into a push service's URL or body, so only the
/// shapes the services issue are taken.
enum PushToken {
    /// What is wrong with `token` as one of `platform`'s, or nil when nothing is.
    static func problem(with token: String, platform: DeviceRegistration.Platform, policy: AddressPolicy) -> String? {
        let bytes = Array(token.utf8)
        switch platform {
        case .apns:
            // A device token: 32 bytes today, in hex; Apple says it may grow, so up to 200 hex digits.
            guard (64...200).contains(bytes.count), bytes.count % 2 == 0, bytes.allSatisfy(\.isHexDigit) else {
                return "must be an APNs device token: 64 to 200 hex digits"
            }
        case .fcm:
            // A registration token: opaque, about 160 characters of URL-safe base64 with `:` and `-`.
            guard (1...4_096).contains(bytes.count), bytes.allSatisfy(\.isTokenCharacter) else {
                return "must be an FCM registration token: 1 to 4096 letters, digits, and - _ : ."
            }
        case .expo:
            for prefix in ["ExponentPushToken[", "ExpoPushToken["] where token.hasPrefix(prefix) && token.hasSuffix("]") {
                let inner = bytes.dropFirst(prefix.utf8.count).dropLast()
                if (1...256).contains(inner.count), inner.allSatisfy(\.isTokenCharacter) { return nil }
            }
            return "must be an Expo push token: ExponentPushToken[…]"
        case .webpush:
            guard (1...4_096).contains(bytes.count) else { return "must be a push subscription of 1 to 4096 bytes" }
            if case .failure(let problem) = WebPushSubscription.parse(token, policy: policy) {
                return problem.description
            }
        }
        return nil
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x61...0x66).contains(self) || (0x41...0x46).contains(self)
    }

    fileprivate var isTokenCharacter: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
            || self == 0x2D || self == 0x5F || self == 0x3A || self == 0x2E
    }
}

extension WireDeviceList: @retroactive ResponseEncodable {}
extension WireDeviceRegistration: @retroactive ResponseEncodable {}
extension WireTestNotification: @retroactive ResponseEncodable {}
