import Foundation
import HeraldRecords
import Hummingbird

/// Verifies the caller's token (`Authorization: Bearer`, or `?token=` for the stream) and records who they are.
///
/// The user is created or updated from the claims the first time a token with new claims is seen.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = HeraldRequestContext

    let tokens: TokenAuthority
    let users: UserDirectory

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.identity = try await authenticate(request)
        return try await next(request, context)
    }

    /// The caller of `request`, from its token.
    ///
    /// - Throws: ``APIError`` `missing_token`, `invalid_token` or `token_expired`.
    func authenticate(_ request: Request) async throws -> Identity {
        guard let token = Self.token(in: request) else {
            throw APIError(.unauthorized, .missingToken, "send a token as `Authorization: Bearer <token>`")
        }
        do {
            // The user as stored: the name others see (a token without one keeps the user's).
            return try await users.remember(try await tokens.verify(token))
        } catch StoreError.userErased {
            throw APIError(.unauthorized, .userErased, "this user was erased: their tokens are no longer accepted")
        }
    }

    /// The bearer token of `request`: its `Authorization` header, else (when `allowQuery`, for the stream) `?token=`.
    static func token(in request: Request, allowQuery: Bool = true) -> String? {
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                // Spaces and tabs around it, trimmed without Foundation's character sets (a cost on every request).
                var token = parts[1]
                while let first = token.first, first == " " || first == "\t" { token = token.dropFirst() }
                while let last = token.last, last == " " || last == "\t" { token = token.dropLast() }
                return String(token)
            }
            return nil
        }
        if allowQuery, let token = try? QueryParameters(request).get("token"), !token.isEmpty {
            return token
        }
        return nil
    }
}
