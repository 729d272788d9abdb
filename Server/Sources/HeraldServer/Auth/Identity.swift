import Foundation
import HeraldCore
import HeraldProtocol
import JWTKit
import Logging
import NIOConcurrencyHelpers

/// Who is calling: the user named by a verified token.
public struct Identity: Hashable, Sendable {
    /// The user id (the token's `sub`).
    public var userID: String
    /// The display name (the token's `name`).
    public var name: String
    /// The picture (the token's `picture`), if any.
    public var picture: URL?
    /// Whether ``name`` stands in for a name the token did not carry (an identity provider's token with an email and
    /// no `name`: the email's local part). Such a name never replaces one the user already has.
    public var nameIsStandIn = false

    /// The user as a ``HeraldCore/Person``.
    public var person: Person { Person(id: userID, displayName: name, avatarURL: picture) }
}

/// The claims of a Herald token: `sub` (user id), `name`, optional `picture`, `exp`, and optional `nbf` and `iat`.
public struct HeraldClaims: JWTPayload, Equatable {
    /// The user id.
    public var sub: SubjectClaim
    /// The display name.
    public var name: String
    /// A picture URL.
    public var picture: String?
    /// When the token expires.
    public var exp: ExpirationClaim
    /// The token is not valid before this time.
    public var nbf: NotBeforeClaim?
    /// When the token was issued.
    public var iat: IssuedAtClaim?

    /// Creates claims.
    public init(userID: String, name: String, picture: String? = nil, expires: Date, notBefore: Date? = nil, issuedAt: Date? = nil) {
        sub = SubjectClaim(value: userID)
        self.name = name
        self.picture = picture
        exp = ExpirationClaim(value: expires)
        nbf = notBefore.map(NotBeforeClaim.init(value:))
        iat = issuedAt.map(IssuedAtClaim.init(value:))
    }

    /// How far the clocks of the app's backend and Herald may disagree: a token is taken up to this long after its
    /// `exp`, and its `nbf` and `iat` may lie this far in the future.
    public static let leeway: TimeInterval = 60

    /// Checks the times: not expired, not before its `nbf`, not issued in the future (each with ``leeway``).
    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try Self.verifyTimes(exp: exp, nbf: nbf, iat: iat)
    }

    /// The time checks every token Herald takes passes (its own, and identity providers'), each with ``leeway``.
    static func verifyTimes(exp: ExpirationClaim, nbf: NotBeforeClaim?, iat: IssuedAtClaim?) throws {
        let now = Date()
        try exp.verifyNotExpired(currentDate: now.addingTimeInterval(-leeway))
        let later = now.addingTimeInterval(leeway)
        if let nbf, nbf.value > later {
            throw JWTError.claimVerificationFailure(failedClaim: nbf, reason: "the token is not valid yet (nbf)")
        }
        if let iat, iat.value > later {
            throw JWTError.claimVerificationFailure(failedClaim: iat, reason: "the token was issued in the future (iat)")
        }
    }
}

/// Verifies and signs Herald tokens: HS256 with the server's secret (the app's backend's tokens), and, when
/// identity providers are configured, their ID tokens (RS256 or ES256, ``OpenIDVerifier``). Nothing else.
public struct TokenAuthority: Sendable {
    private let keys: JWTKeyCollection
    private let verified = VerifiedTokens()
    private let openID: OpenIDVerifier?

    /// Creates an authority for `secret`, taking ID tokens from the identity providers `openID` names.
    public init(secret: String, openID: OpenIDSettings = OpenIDSettings(), logger: Logger = Logger(label: "herald.tokens")) async {
        keys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.openID = openID.isOn ? OpenIDVerifier(settings: openID, logger: logger) : nil
    }

    /// The identity in `token`.
    ///
    /// - Throws: ``APIError`` `token_expired`, or `invalid_token`: malformed; a header whose `alg` is not `HS256`
    ///   or that names `crit` extensions; a bad signature; a missing claim; `nbf` or `iat` in the future; a `sub`
    ///   that is not a usable id (see ``HeraldID``); a `name` that is not a usable display name (``DisplayText``:
    ///   200 characters, 800 bytes, no control characters). A `picture` that is not an http or https URL of at most
    ///   2,048 bytes is ignored.
    ///
    /// A token verified before is recognised by its bytes (all of them, signature included) until it expires, without
    /// parsing or checking it again: every request and stream carries one, and verifying is most of what a small
    /// request costs.
    public func verify(_ token: String) async throws -> Identity {
        let now = Date()
        if let identity = verified.identity(for: token, at: now) { return identity }
        let header = try Self.header(of: token)
        if header.alg != "HS256" { return try await verifyOpenID(token, header: header, now: now) }
        let claims: HeraldClaims
        do {
            try Self.checkClaims(of: token)
            claims = try await keys.verify(token, as: HeraldClaims.self)
        } catch let error as JWTError where error.failedClaim is ExpirationClaim {
            throw APIError(.unauthorized, .tokenExpired, "the token has expired\(Self.expiry(of: token, now: now))")
        } catch let error as APIError {
            throw error
        } catch {
            throw Self.invalid(Self.reason(error))
        }
        if let problem = HeraldID.problem(with: claims.sub.value) {
            throw Self.invalid("its sub \(problem)")
        }
        if let problem = DisplayText.problem(with: claims.name) {
            throw Self.invalid("its name \(problem)")
        }
        let identity = Identity(userID: claims.sub.value, name: claims.name, picture: claims.picture.flatMap(Input.webURL))
        verified.remember(token, identity: identity, expires: claims.exp.value.addingTimeInterval(HeraldClaims.leeway))
        return identity
    }

    /// A token for `userID`, valid for `lifetime`.
    public func token(
        userID: String,
        name: String,
        picture: String? = nil,
        lifetime: Duration = .seconds(30 * 24 * 3600)
    ) async throws -> String {
        let seconds = Double(lifetime.components.seconds)
        let now = Date()
        return try await keys.sign(
            HeraldClaims(userID: userID, name: name, picture: picture, expires: now.addingTimeInterval(seconds), issuedAt: now)
        )
    }

    /// A token's JOSE header.
    private struct Header: Decodable {
        var alg: String?
        var kid: String?
        var crit: [String]?
    }

    /// The JOSE header, which must say `HS256`, `RS256` or `ES256`: the key collection would otherwise accept a
    /// signature under any `alg`, and a token should mean exactly what it says (never `none`, never an identity
    /// provider's public key taken as an HMAC secret: HS256 is only ever checked with the server's secret).
    private static func header(of token: String) throws -> Header {
        guard let encoded = token.split(separator: ".", omittingEmptySubsequences: false).first,
              let data = Data(base64URL: String(encoded)),
              let header = try? JSONDecoder().decode(Header.self, from: data)
        else { throw invalid("malformed") }
        guard ["HS256", "RS256", "ES256"].contains(header.alg ?? "") else {
            let named = header.alg.map { "`\(ControlCharacters.escaped(String($0.prefix(20))))`" } ?? "none"
            throw invalid(
                "the header's alg must be HS256 (your backend's tokens) or RS256 or ES256 (an identity provider's ID tokens), not \(named)")
        }
        guard header.crit == nil else { throw invalid("the header names critical extensions this server does not know") }
        return header
    }

    /// An identity provider's ID token (RS256 or ES256).
    private func verifyOpenID(_ token: String, header: Header, now: Date) async throws -> Identity {
        guard let openID else {
            throw Self.invalid(
                "its alg \(header.alg ?? "") is an identity provider's, and this server takes no ID tokens (set HERALD_OIDC_ISSUER and HERALD_OIDC_AUDIENCE)")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URL: String(parts[1])),
              let payload = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw Self.invalid("malformed: its payload is not a base64url JSON object") }
        let claims = try await openID.verify(token, kid: header.kid, payload: payload)
        if let problem = HeraldID.problem(with: claims.sub.value) { throw Self.invalid("its sub \(problem)") }
        guard let userID = openID.settings.userID(sub: claims.sub.value, issuer: claims.iss.value) else {
            throw Self.invalid("its sub starts with another issuer's user id prefix")
        }
        if let problem = HeraldID.problem(with: userID) { throw Self.invalid("its user id \(problem)") }
        // A provider's token may carry no name (an email sign-in): then the email's local part stands in, never over
        // a name the user has (the app's backend's, or an earlier token's); with no email either, the name stays
        // empty, and clients say "Someone".
        let named = claims.name.flatMap { DisplayText.problem(with: $0) == nil ? $0 : nil }
        let standIn = named == nil ? claims.email.flatMap(OpenIDClaims.localPart) : nil
        var identity = Identity(userID: userID, name: named ?? standIn ?? "", picture: claims.picture.flatMap(Input.webURL))
        identity.nameIsStandIn = standIn != nil
        verified.remember(token, identity: identity, expires: claims.exp.value.addingTimeInterval(HeraldClaims.leeway))
        return identity
    }

    /// The claims Herald needs are there, of the right types: a refusal names the one that is not (before the
    /// signature is checked, which would only say the payload cannot be read).
    private static func checkClaims(of token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URL: String(parts[1])),
              let payload = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw invalid("malformed: its payload is not a base64url JSON object") }
        let needed = "Herald's tokens carry sub (the user id), name and exp"
        for (claim, kind) in [("sub", "a string"), ("name", "a string"), ("exp", "a number of seconds since 1970")] {
            guard let value = payload[claim] else { throw invalid("its claim `\(claim)` is missing (\(needed))") }
            let fits = kind == "a string" ? value is String : (value is NSNumber && !(value is Bool))
            guard fits else { throw invalid("its claim `\(claim)` must be \(kind)") }
        }
        for (claim, kind) in [("nbf", "a number"), ("iat", "a number"), ("picture", "a string")] {
            guard let value = payload[claim], !(value is NSNull) else { continue }
            let fits = kind == "a string" ? value is String : (value is NSNumber && !(value is Bool))
            guard fits else { throw invalid("its claim `\(claim)` must be \(kind)") }
        }
    }

    /// `: <how long ago>` from the token's `exp`, for a refusal that says by how much it expired.
    static func expiry(of token: String, now: Date) -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URL: String(parts[1])),
              let payload = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let exp = (payload["exp"] as? NSNumber)?.doubleValue, (0...now.timeIntervalSince1970).contains(exp)
        else { return "" }  // an `exp` before 1970 (as far back as -1e300) says nothing worth a span
        let ago = Int(now.timeIntervalSince1970 - exp)
        let span = ago >= 3_600 ? "\(ago / 3_600) h \(ago % 3_600 / 60) min" : ago >= 60 ? "\(ago / 60) min \(ago % 60) s" : "\(ago) s"
        let when = Date(timeIntervalSince1970: exp).formatted(.iso8601)
        return " \(span) ago (exp \(when); tokens are taken up to \(Int(HeraldClaims.leeway)) s after it): get a fresh one"
    }

    static func invalid(_ reason: String) -> APIError {
        APIError(.unauthorized, .invalidToken, "the token is not valid: \(reason)")
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

/// Tokens that passed verification, by their bytes, until they expire. At most ``capacity``: when full, it starts
/// afresh (a token forgotten is simply verified again).
final class VerifiedTokens: Sendable {
    private struct Entry {
        var identity: Identity
        var expires: Date
    }

    static let capacity = 10_000
    private let entries = NIOLockedValueBox<[[UInt8]: Entry]>([:])

    /// The identity of `token` if it was verified and has not expired at `now`.
    func identity(for token: String, at now: Date) -> Identity? {
        let key = Array(token.utf8)
        return entries.withLockedValue { entries in
            guard let entry = entries[key] else { return nil }
            guard now < entry.expires else {
                entries.removeValue(forKey: key)
                return nil
            }
            return entry.identity
        }
    }

    func remember(_ token: String, identity: Identity, expires: Date) {
        entries.withLockedValue { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[Array(token.utf8)] = Entry(identity: identity, expires: expires)
        }
    }
}
