import Foundation
import HeraldCore
import JWTKit

/// Who is calling: the user named by a verified token.
public struct Identity: Hashable, Sendable {
    /// The user id (the token's `sub`).
    public var userID: String
    /// The display name (the token's `name`).
    public var name: String
    /// The picture (the token's `picture`), if any.
    public var picture: URL?

    /// The user as a ``HeraldCore/Person``.
    public var person: Person { Person(id: userID, displayName: name, avatarURL: picture) }
}

/// The claims of a Herald token: `sub` (user id), `name`, optional `picture`, `exp`.
public struct HeraldClaims: JWTPayload, Equatable {
    /// The user id.
    public var sub: SubjectClaim
    /// The display name.
    public var name: String
    /// A picture URL.
    public var picture: String?
    /// When the token expires.
    public var exp: ExpirationClaim

    /// Creates claims.
    public init(userID: String, name: String, picture: String? = nil, expires: Date) {
        sub = SubjectClaim(value: userID)
        self.name = name
        self.picture = picture
        exp = ExpirationClaim(value: expires)
    }

    /// Checks the expiry and that the user id is usable.
    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        guard !sub.value.isEmpty, sub.value.utf8.count <= 128 else {
            throw JWTError.claimVerificationFailure(failedClaim: sub, reason: "sub must be 1 to 128 bytes")
        }
    }
}

/// Verifies and signs Herald tokens: HS256 with the server's secret, nothing else.
public struct TokenAuthority: Sendable {
    private let keys: JWTKeyCollection

    /// Creates an authority for `secret`.
    public init(secret: String) async {
        keys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
    }

    /// The identity in `token`.
    ///
    /// - Throws: ``APIError`` `token_expired` or `invalid_token` (malformed, another algorithm such as `none`,
    ///   a bad signature, a missing claim).
    public func verify(_ token: String) async throws -> Identity {
        do {
            let claims = try await keys.verify(token, as: HeraldClaims.self)
            return Identity(userID: claims.sub.value, name: claims.name, picture: claims.picture.flatMap(URL.init(string:)))
        } catch let error as JWTError where error.failedClaim is ExpirationClaim {
            throw APIError(.unauthorized, .tokenExpired, "the token has expired")
        } catch {
            throw APIError(.unauthorized, .invalidToken, "the token is not valid: \(Self.reason(error))")
        }
    }

    /// A token for `userID`, valid for `lifetime`.
    public func token(
        userID: String,
        name: String,
        picture: String? = nil,
        lifetime: Duration = .seconds(30 * 24 * 3600)
    ) async throws -> String {
        let seconds = Double(lifetime.components.seconds)
        return try await keys.sign(
            HeraldClaims(userID: userID, name: name, picture: picture, expires: Date().addingTimeInterval(seconds))
        )
    }

    private static func reason(_ error: any Error) -> String {
        guard let jwtError = error as? JWTError else { return "it could not be read" }
        switch jwtError.errorType {
        case .signatureVerificationFailed: return "bad signature"
        case .claimVerificationFailure: return jwtError.reason ?? "a claim failed"
        case .malformedToken: return "malformed"
        default: return jwtError.reason ?? "it could not be verified"
        }
    }
}
