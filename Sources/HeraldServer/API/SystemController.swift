import Foundation
import Hummingbird

/// `/health` and `/openapi.yaml`, open to anyone.
struct SystemController {
    func addRoutes(to router: Router<HeraldRequestContext>) {
        router.get("health", use: health)
        router.get("openapi.yaml", use: openAPI)
    }

    struct Health: ResponseEncodable {
        var status = "ok"
    }

    @Sendable func health(_ request: Request, context: HeraldRequestContext) async throws -> Health {
        Health()
    }

    @Sendable func openAPI(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
              let data = FileManager.default.contents(atPath: url.path)
        else { throw APIError(.internalServerError, .internalError, "the API description is missing") }
        return Response(
            status: .ok,
            headers: [.contentType: "application/yaml; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}
