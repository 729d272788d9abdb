import HeraldProtocol
import Hummingbird

/// "Why didn't my phone ring?" (docs/push.md): `GET /v1/me/deliveries?conversation=…&message=…`, what became of a
/// message's pushes to the caller's own devices, and `GET /v1/me/notifications/check`, the troubleshooter's checks;
/// for the app's backend, `GET /v1/service/conversations/{id}/messages/{messageId}/deliveries[?user=…]`, every
/// member's.
struct DeliveriesController {
    let reports: DeliveryReports
    let push: PushDispatcher

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.get("me/deliveries", use: mine)
        group.get("me/notifications/check", use: check)
    }

    func addServiceRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.get("conversations/:id/messages/:messageId/deliveries", use: all)
    }

    @Sendable func mine(_ request: Request, context: HeraldRequestContext) async throws -> WireDeliveries {
        let identity = try context.requireIdentity()
        let query = QueryParameters(request)
        guard let conversation = try query.get("conversation"), let message = try query.get("message") else {
            throw APIError.invalidRequest("`conversation` and `message` are required")
        }
        return try await reports.deliveries(
            of: try Input.id(message, field: "message"), in: try Input.id(conversation, field: "conversation"),
            user: nil, viewer: identity.userID)
    }

    @Sendable func check(_ request: Request, context: HeraldRequestContext) async throws -> WireNotificationCheck {
        try await reports.check(for: try context.requireIdentity().userID, push: push)
    }

    @Sendable func all(_ request: Request, context: HeraldRequestContext) async throws -> WireDeliveries {
        let user = try QueryParameters(request).get("user").map { try Input.id($0, field: "user") }
        return try await reports.deliveries(
            of: try context.parameters.id("messageId"), in: try context.parameters.id("id"), user: user, viewer: nil)
    }
}

extension WireDeliveries: @retroactive ResponseEncodable {}
extension WireNotificationCheck: @retroactive ResponseEncodable {}
