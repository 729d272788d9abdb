import Hummingbird

/// `/v1/devices/{deviceId}`: register a device's push token, and remove it on sign-out.
///
/// Devices belong to their user: the same device id under two users is two devices, and a push token belongs to
/// the device that registered it last (a phone that changed hands stops getting its old owner's pushes).
struct DevicesController {
    let store: any Store
    let limits: ServerLimits

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.put("devices/:deviceId", use: register)
        group.delete("devices/:deviceId", use: remove)
    }

    struct RegisterRequest: Decodable {
        var platform: DeviceRegistration.Platform
        var token: String
    }

    @Sendable func register(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let deviceID = try context.parameters.id("deviceId")
        let body = try await request.decodeJSON(as: RegisterRequest.self, context: context)
        guard !body.token.isEmpty, body.token.utf8.count <= 4_096 else {
            throw APIError.invalidRequest("`token` must be 1 to 4096 bytes")
        }
        try Input.text(body.token, field: "token")
        try await store.registerDevice(
            DeviceRegistration(id: deviceID, userID: identity.userID, platform: body.platform, token: body.token),
            limit: limits.devicesPerUser)
        return .noContent
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
