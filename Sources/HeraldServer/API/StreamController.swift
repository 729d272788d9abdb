import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import HummingbirdWebSocket
import NIOWebSocket
import HeraldProtocol

/// `GET /v1/stream?after=SEQ&device=ID`: the WebSocket of live messages (see ``StreamSession``).
///
/// The upgrade is decided at the connection (``shouldUpgrade(_:channel:logger:)``), not by a route: the stream writes
/// to its channel directly (``SocketWriter``), and hummingbird-websocket's router integration keeps every upgraded
/// request's context alive in a reference cycle (about a kilobyte for every stream ever opened).
///
/// It authenticates after the upgrade rather than before: a WebSocket client cannot read the status of a refused
/// upgrade, so a bad token on an upgrade request is accepted, answered with an `error` frame carrying the code, and
/// closed (1008). A plain GET gets the usual JSON 401 (or 400 for a bad `after`, and 426 when all is well but it is
/// not an upgrade).
struct StreamController {
    let streams: StreamServices
    let authentication: AuthenticationMiddleware

    /// The plain HTTP side of `/v1/stream`.
    func addRoutes(to router: Router<HeraldRequestContext>) {
        router.get("v1/stream") { request, _ -> Response in
            _ = try await authentication.authenticate(request)
            _ = try Self.after(in: request)
            _ = try Self.device(in: request)
            throw APIError(.upgradeRequired, .invalidRequest, "the stream is a WebSocket: send an upgrade request")
        }
    }

    /// Whether an upgrade request becomes a stream: a `GET` of `/v1/stream` with a valid `after` (or none). Anything
    /// else goes on as plain HTTP, to the router.
    @Sendable
    func shouldUpgrade(
        _ head: HTTPRequest, channel: any Channel, logger: Logger
    ) -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer()))
        let after: Int64?
        let device: String?
        do {
            guard head.method == .get, request.uri.path == "/v1/stream" else { return .dontUpgrade }
            after = try Self.after(in: request)
            device = try Self.device(in: request)
        } catch {
            return .dontUpgrade
        }
        return .upgrade([:]) { inbound, outbound, _ in
            let identity: Identity
            do {
                identity = try await authentication.authenticate(request)
            } catch {
                try await Self.refuse(APIError(error), inbound: inbound, outbound: outbound, channel: channel)
                return
            }
            let session = StreamSession(identity: identity, after: after, device: device, services: streams, logger: logger)
            let socket = try await SocketWriter.attach(to: channel, pingEvery: streams.timeouts.ping)
            try await session.run(inbound: inbound, outbound: outbound, socket: socket)
        }
    }

    /// Refuses an upgraded connection: one `error` frame with the code, then a close (1008) with the code as reason.
    ///
    /// Not at once: a client library may drop frames that arrive in the same read as the upgrade's 101 response
    /// (swift-websocket's client did, and then waited for ever), so the refusal goes out once the client has shown
    /// it is reading (its first frame; Herald's clients send `focus` and `app` on every connection), or after
    /// `patience` for a client that sends nothing. Then nothing more is read from it (``ClosingInput``).
    static func refuse(
        _ refusal: APIError, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel,
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
        ClosingInput.stopReading(channel)
    }

    /// The `device` parameter: the app's id for the device, as registered with `PUT /v1/devices/{deviceId}`.
    private static func device(in request: Request) throws -> String? {
        try QueryParameters(request).id("device")
    }

    private static func after(in request: Request) throws -> Int64? {
        guard let text = try QueryParameters(request).get("after") else { return nil }
        guard let after = Int64(text), after >= 0 else {
            throw APIError.invalidRequest("`after` must be a whole number, 0 or more")
        }
        return after
    }
}
