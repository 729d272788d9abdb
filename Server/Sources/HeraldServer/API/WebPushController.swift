import Hummingbird

/// `GET /v1/webpush/key`: the server's VAPID public key, which a page subscribes to Web Push with
/// (`pushManager.subscribe({applicationServerKey})`).
struct WebPushController {
    let vapid: VAPID

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.get("webpush/key", use: key)
    }

    struct Key: ResponseEncodable {
        /// The uncompressed P-256 point, base64url.
        var publicKey: String
    }

    @Sendable func key(_ request: Request, context: HeraldRequestContext) async throws -> Key {
        _ = try context.requireIdentity()
        return Key(publicKey: vapid.publicKey)
    }
}
