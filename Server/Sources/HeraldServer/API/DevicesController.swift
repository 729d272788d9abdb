import HeraldProtocol
import HeraldRecords
import Hummingbird

/// `/v1/devices`: the caller's devices; `/v1/devices/{deviceId}`: register a device's push token (the answer is the
/// device's key, ``DeviceReadKey``), and remove it on sign-out.
///
/// Devices belong to their user: the same device id under two users is two devices, and a push token belongs to
/// the device that registered it last (a phone that changed hands stops getting its old owner's pushes).
struct DevicesController {
    let store: any DeviceStore
    let limits: ServerLimits
    /// Which Web Push endpoints are taken (``AddressPolicy``).
    let webPushPolicy: AddressPolicy

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.get("devices", use: list)
        group.put("devices/:deviceId", use: register)
        group.delete("devices/:deviceId", use: remove)
    }

    struct RegisterRequest: Decodable {
        var platform: DeviceRegistration.Platform
        var token: String
    }

    @Sendable func list(_ request: Request, context: HeraldRequestContext) async throws -> WireDeviceList {
        let identity = try context.requireIdentity()
        let devices = try await store.devices(of: identity.userID)
        return WireDeviceList(devices: devices.map { WireDevice(id: $0.id, platform: $0.platform, token: $0.token) })
    }

    /// Registers the device and answers with its new key (``WireDeviceRegistration``), which ends the one before.
    @Sendable func register(_ request: Request, context: HeraldRequestContext) async throws -> WireDeviceRegistration {
        let identity = try context.requireIdentity()
        let deviceID = try context.parameters.id("deviceId")
        let body = try await request.decodeJSON(as: RegisterRequest.self, context: context)
        if let problem = PushToken.problem(with: body.token, platform: body.platform, policy: webPushPolicy) {
            throw APIError.invalidRequest("`token` \(problem)")
        }
        let key = DeviceReadKey.make()
        try await store.registerDevice(
            DeviceRegistration(id: deviceID, userID: identity.userID, platform: body.platform, token: body.token),
            limit: limits.devicesPerUser, keyDigest: key.digest)
        return WireDeviceRegistration(deviceKey: key.key)
    }

    @Sendable func remove(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let deviceID = try context.parameters.id("deviceId")
        guard try await store.removeDevice(id: deviceID, userID: identity.userID) else {
            throw APIError(.notFound, .notFound, "you have no device with that id")
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
