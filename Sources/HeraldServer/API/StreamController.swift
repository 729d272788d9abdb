import Hummingbird
import HummingbirdWebSocket

/// `GET /v1/stream?after=SEQ`: the WebSocket of live messages (see ``StreamSession``).
struct StreamController {
    let messenger: Messenger
    let limits: ServerLimits

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.ws("stream") { request, context in
            _ = try context.requireIdentity()
            _ = try Self.after(in: request)
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let session = StreamSession(
                identity: try context.requestContext.requireIdentity(),
                after: try Self.after(in: context.request),
                messenger: messenger,
                limits: limits,
                logger: context.logger
            )
            try await session.run(inbound: inbound, outbound: outbound)
        }
    }

    private static func after(in request: Request) throws -> Int64? {
        guard let text = request.uri.queryParameters.get("after") else { return nil }
        guard let after = Int64(text), after >= 0 else {
            throw APIError.invalidRequest("`after` must be a whole number, 0 or more")
        }
        return after
    }
}
