import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import HeraldProtocol

/// `GET /v1/stream?after=SEQ&device=ID`: the WebSocket of live messages.
///
/// The upgrade is decided at the connection (``request(_:)``, by ``StreamUpgradeChannel``), not by a route, and the
/// stream then lives in its channel's pipeline (``StreamHandler``): no task of its own, while idle or live.
///
/// It authenticates after the upgrade rather than before: a WebSocket client cannot read the status of a refused
/// upgrade, so a bad token on an upgrade request is accepted, answered with an `error` frame carrying the code, and
/// closed (1008). A plain GET gets the usual JSON 401 (or 400 for a bad `after`, and 426 when all is well but it is
/// not an upgrade).
struct StreamController: Sendable {
    /// An upgrade request for a stream.
    struct StreamRequest: Sendable {
        let request: Request
        /// The `seq` the client has everything up to, if it said.
        let after: Int64?
        /// The app's id for the device, from the `device` parameter: while it is connected, its pushes wait for its
        /// confirmation (`received`), and it is told which messages were pushed to it (`pushed`).
        let device: String?
    }

    let streams: StreamServices
    let authentication: AuthenticationMiddleware
    let work: StreamWork

    /// The plain HTTP side of `/v1/stream`.
    func addRoutes(to router: Router<HeraldRequestContext>) {
        router.get("v1/stream") { request, _ -> Response in
            _ = try await authentication.authenticate(request)
            _ = try Self.after(in: request)
            _ = try Self.device(in: request)
            throw APIError(.upgradeRequired, .invalidRequest, "the stream is a WebSocket: send an upgrade request")
        }
    }

    /// The stream an upgrade request asks for: a `GET` of `/v1/stream` with a valid `after` (or none). Nil for
    /// anything else, which goes on as plain HTTP.
    func request(_ head: HTTPRequestHead) -> StreamRequest? {
        guard head.method == .GET, let http = try? HTTPRequest(head, secure: false, splitCookie: false) else { return nil }
        let request = Request(head: http, body: RequestBody(buffer: ByteBuffer()))
        guard request.uri.path == "/v1/stream" else { return nil }
        do {
            return StreamRequest(request: request, after: try Self.after(in: request), device: try Self.device(in: request))
        } catch {
            return nil
        }
    }

    /// Opens the stream on the upgraded `channel`: its handler joins the pipeline, and its opening (the token, the
    /// registration, the catch-up) runs on ``StreamWork``. On the channel's event loop.
    func open(_ request: StreamRequest, on channel: any Channel, logger: Logger) throws {
        let handler = StreamHandler(rules: streams.rules, logger: logger)
        try channel.pipeline.syncOperations.addHandler(handler)
        let opening = StreamOpening(
            asked: request, peer: StreamPeer(handler, lane: streams.hub.lanes.lane(for: channel.eventLoop)), services: streams,
            authentication: authentication, work: work, logger: logger)
        if !work.submit({ await opening.run() }) {
            // The server is stopping.
            channel.close(promise: nil)
        }
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
