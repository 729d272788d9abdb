import Hummingbird
import Logging

/// Lets the app's backend in to `/v1/service/…`: a service key (``ServiceKeys``) as the bearer token, from no web
/// page. Every call is logged with the key's id and the route.
struct ServiceAuthenticationMiddleware: RouterMiddleware {
    typealias Context = HeraldRequestContext

    let keys: ServiceKeys
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.serviceKeyID = try authenticate(request)
        logger.info(
            "service call",
            metadata: ["key": "\(context.serviceKeyID ?? "")", "method": "\(request.method)", "path": "\(request.uri.path)"])
        return try await next(request, context)
    }

    /// The id of the key `request` carries.
    ///
    /// - Throws: ``APIError`` `browser_origin` (403) for a request from a web page; `missing_token` (401) without a
    ///   bearer token; `invalid_service_key` (401) for a user's token, a key that is not (or no longer) one of
    ///   `HERALD_SERVICE_KEY`'s, or a server that has none.
    func authenticate(_ request: Request) throws -> String {
        // A browser sends `Origin` on every cross-origin request and on same-origin ones that are not GET or HEAD: a
        // key in a web page is a key everyone has.
        guard request.headers[.origin] == nil else {
            throw APIError(
                .forbidden, .browserOrigin,
                "service keys are for the app's backend, never a web page: this request came from a browser (it has an Origin)")
        }
        guard let token = AuthenticationMiddleware.token(in: request, allowQuery: false) else {
            throw APIError(.unauthorized, .missingToken, "send a service key as `Authorization: Bearer <key>`")
        }
        guard !keys.isEmpty else {
            throw APIError(.unauthorized, .invalidServiceKey, "this server takes no service calls: set HERALD_SERVICE_KEY")
        }
        if let id = keys.keyID(of: token) { return id }
        if token.split(separator: ".", omittingEmptySubsequences: false).count == 3 {
            throw APIError(.unauthorized, .invalidServiceKey, "a user's token cannot call service routes: send a service key")
        }
        throw APIError(.unauthorized, .invalidServiceKey, "the key is not one of this server's service keys")
    }
}
