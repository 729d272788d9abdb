import Foundation
import HeraldRecords
import Hummingbird

/// `/health`, `/metrics` and `/openapi.yaml`, open to anyone (a proxy in front keeps `/metrics` in: docs/deploy.md).
struct SystemController {
    let store: any PushOutbox & HealthReporter

    func addRoutes(to router: Router<HeraldRequestContext>) {
        router.get("health", use: health)
        router.get("metrics", use: metrics)
        router.get("openapi.yaml", use: openAPI)
    }

    /// The node's metrics in the Prometheus text format (``HeraldMetrics``); the outbox depth and the heap are read now.
    @Sendable func metrics(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        if let depth = try? await store.pushJobCount() { HeraldMetrics.outboxDepth.record(depth) }
        if let heap = HeapUsage.bytesInUse() { HeraldMetrics.heapBytes.record(heap) }
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: HeraldMetrics.registry.emitToBuffer())))
    }

    struct Health: ResponseEncodable {
        /// `ok`, or `unavailable` when the database is not.
        var status: String
        /// `reachable`, `unreachable`, or `full` (it answers, but its disk is full and it takes no writes).
        var database: String
        /// The server's version (``HeraldVersion/current``).
        var version = HeraldVersion.current
    }

    /// 200 `{"status": "ok", "database": "reachable", "version": "…"}`; 503 with `unavailable` and `unreachable` when the database
    /// does not answer within 2 s, or `full` when its disk is full (a load balancer takes the node out until it
    /// recovers).
    @Sendable func health(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<Health> {
        switch await store.health(within: .seconds(2)) {
        case .ok:
            return EditedResponse(status: .ok, response: Health(status: "ok", database: "reachable"))
        case .unreachable:
            return EditedResponse(
                status: .serviceUnavailable, headers: [.retryAfter: "1"],
                response: Health(status: "unavailable", database: "unreachable"))
        case .full:
            return EditedResponse(
                status: .serviceUnavailable, headers: [.retryAfter: "30"],
                response: Health(status: "unavailable", database: "full"))
        }
    }

    @Sendable func openAPI(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let file = EmbeddedFiles.file("/openapi.yaml") else {
            throw APIError(.internalServerError, .internalError, "the API description is missing")
        }
        return Response(
            status: .ok,
            headers: [.contentType: "application/yaml; charset=utf-8"],
            body: .init(byteBuffer: file.bytes)
        )
    }
}
