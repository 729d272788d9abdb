import Hummingbird

/// `/v1/devices/{deviceId}`: register a device's push token, and remove it on sign-out.
struct DevicesController {
    let store: any Store

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
        let deviceID = try context.parameters.require("deviceId")
        guard deviceID.utf8.count <= 128 else { throw APIError.invalidRequest("device ids are at most 128 bytes") }
        let body = try await request.decodeJSON(as: RegisterRequest.self, context: context)
        guard !body.token.isEmpty, body.token.utf8.count <= 4_096 else {
            throw APIError.invalidRequest("`token` must be 1 to 4096 bytes")
        }
        try await store.registerDevice(
            DeviceRegistration(id: deviceID, userID: identity.userID, platform: body.platform, token: body.token))
        return .noContent
    }

    @Sendable func remove(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let deviceID = try context.parameters.require("deviceId")
        guard try await store.removeDevice(id: deviceID, userID: identity.userID) else {
            throw APIError(.notFound, .notFound, "you have no device with that id")
        }
        return .noContent
    }
}
