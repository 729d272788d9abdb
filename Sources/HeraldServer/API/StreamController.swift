import Hummingbird
import HummingbirdWebSocket
import NIOWebSocket
import HeraldProtocol

/// `GET /v1/stream?after=SEQ`: the WebSocket of live messages (see ``StreamSession``).
///
/// It authenticates on its own rather than behind the `/v1` middleware: a WebSocket client cannot read the
/// status of a refused upgrade, so a bad token on an upgrade request is accepted, answered with an `error` frame
/// carrying the code, and closed (1008). A plain GET gets the usual JSON 401.
struct StreamController {
    let messenger: Messenger
    let limits: ServerLimits
    let timeouts: ServerTimeouts
    let authentication: AuthenticationMiddleware

    func addRoutes(to router: Router<HeraldRequestContext>) {
        router.ws("v1/stream") { request, _ in
            if request.headers[.upgrade]?.lowercased() != "websocket" {
                _ = try await authentication.authenticate(request)
            }
            _ = try Self.after(in: request)
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let identity: Identity
            do {
                identity = try await authentication.authenticate(context.request)
            } catch {
                try await Self.refuse(APIError(error), inbound: inbound, outbound: outbound)
                return
            }
            let session = StreamSession(
                identity: identity,
                after: try Self.after(in: context.request),
                messenger: messenger,
                limits: limits,
                timeouts: timeouts,
                logger: context.logger
            )
            let socket = try await SocketWriter.attach(to: context.requestContext.channel)
            try await session.run(inbound: inbound, outbound: outbound, socket: socket)
        }
    }

    /// Refuses an upgraded connection: one `error` frame with the code, then a close (1008) with the code as reason.
    ///
    /// Not at once: a client library may drop frames that arrive in the same read as the upgrade's 101 response
    /// (swift-websocket's client did, and then waited for ever), so the refusal goes out once the client has shown
    /// it is reading (its first frame; Herald's clients send `focus` and `app` on every connection), or after
    /// `patience` for a client that sends nothing.
    static func refuse(
        _ refusal: APIError, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
        patience: Duration = .seconds(1)
    ) async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var frames = inbound.makeAsyncIterator()
                _ = try? await frames.next()
            }
            group.addTask { try? await Task.sleep(for: patience) }
            await group.next()
            group.cancelAll()
        }
        try await outbound.write(.text(ServerFrame.refusal(refusal, ref: nil).text))
        try await outbound.close(.policyViolation, reason: refusal.code.rawValue)
    }

    private static func after(in request: Request) throws -> Int64? {
        guard let text = request.uri.queryParameters.get("after") else { return nil }
        guard let after = Int64(text), after >= 0 else {
            throw APIError.invalidRequest("`after` must be a whole number, 0 or more")
        }
        return after
    }
}
