import NIOHTTP1
import Foundation
import HeraldProtocol
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// Identity providers whose ID tokens Herald takes beside its own (`HERALD_OIDC_ISSUER`, `HERALD_OIDC_AUDIENCE`):
/// Firebase Authentication, Sign in with Apple, Auth0, Keycloak, ...
public struct OpenIDSettings: Hashable, Sendable {
    /// The issuers (`iss`), exactly as their tokens name them.
    public var issuers: [String] = []
    /// The user id prefix of each issuer that has one: its tokens' users are `prefix:sub`; the one issuer without
    /// (at most one) keys its users by `sub` alone, and a `sub` of its that starts with another's `prefix:` is
    /// refused. So two issuers' subs never name one user (`HERALD_OIDC_ISSUER=firebase-url, apple=apple-url`).
    public var userPrefixes: [String: String] = [:]
    /// The audiences (`aud`) a token must name one of: your app's client id, or the Firebase project id.
    public var audiences: [String] = []
    /// Where an issuer's keys are, when not found through its discovery document (`HERALD_OIDC_JWKS_URL`, with one
    /// issuer only).
    public var jwksURL: String?
    /// The least time between two fetches of an issuer's keys caused by tokens naming a `kid` it lacks (so that
    /// made-up kids cannot make Herald fetch on every request).
    public var refetchWait: Duration = .seconds(30)
    /// Whether issuers and keys on this machine or a private network are taken (`HERALD_OIDC_ALLOW_PRIVATE=1`), over
    /// http too: a provider inside the operator's own network, or one run to try sign-in (docs/integrate.md).
    public var allowPrivate = false

    /// None.
    public init() {}

    /// Whether any issuer is configured.
    public var isOn: Bool { !issuers.isEmpty }

    /// The user id of `sub` from `issuer`; nil when the issuer has no prefix and `sub` starts with another's.
    func userID(sub: String, issuer: String) -> String? {
        if let prefix = userPrefixes[issuer] { return prefix + ":" + sub }
        let taken = userPrefixes.values.contains { sub.utf8.starts(with: ($0 + ":").utf8) }
        return taken ? nil : sub
    }

    /// Whether `prefix` may be a user id prefix: 1 to 16 of `a-z`, `0-9`, `_` and `-`.
    static func isUsablePrefix(_ prefix: String) -> Bool {
        (1...16).contains(prefix.utf8.count)
            && prefix.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D }
    }

    /// What is wrong with `url` as an issuer or a keys URL, or nil when it may be one: https on a host that the
    /// ``AddressPolicy`` of webhooks and Web Push finds public; a loopback, private or link-local host (over https or
    /// http) only with ``allowPrivate``.
    func problem(withURL url: String) -> String? {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = parsed.host, !host.isEmpty, parsed.query == nil, parsed.fragment == nil
        else { return "must be an https URL with a host and no query or fragment" }
        if let local = AddressPolicy(allowPrivate: false).problem(withHost: host) {
            return allowPrivate ? nil : "the host \(local); set HERALD_OIDC_ALLOW_PRIVATE=1 if the identity provider is meant to be there"
        }
        return scheme == "https" ? nil : "must be https (http only on this machine or a private network, with HERALD_OIDC_ALLOW_PRIVATE=1)"
    }
}

/// The claims of an ID token Herald reads: `sub`, `iss`, `aud`, `exp`, optional `iat`, `nbf`, `name`, `email`,
/// `picture`.
struct OpenIDClaims: JWTPayload {
    var sub: SubjectClaim
    var iss: IssuerClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim?
    var nbf: NotBeforeClaim?
    var name: String?
    var email: String?
    var picture: String?

    /// The part of `email` before its last `@`, if it is a usable display name: what stands in for a name a token
    /// does not carry (`dana.lee` for `dana.lee@example.com`).
    static func localPart(of email: String) -> String? {
        guard let at = email.lastIndex(of: "@") else { return nil }
        let local = String(email[..<at]).trimmingCharacters(in: .whitespaces)
        return !local.isEmpty && DisplayText.problem(with: local) == nil ? local : nil
    }

    /// The times, with ``HeraldClaims/leeway`` (the issuer and the audience are checked by ``OpenIDVerifier``).
    func verify(using algorithm: some JWTAlgorithm) async throws {
        try HeraldClaims.verifyTimes(exp: exp, nbf: nbf, iat: iat)
    }
}

/// Verifies ID tokens against their issuers' published keys (JWKS): RS256 and ES256 only, the key named by the
/// header's `kid`, the issuer one of ``OpenIDSettings/issuers``, an audience one of ``OpenIDSettings/audiences``.
///
/// Each issuer's keys are fetched (through its discovery document's `jwks_uri`) when first needed, again after an
/// hour, and when a token names a `kid` they lack (at most every ``OpenIDSettings/refetchWait``, so tokens with
/// made-up kids cannot make it fetch on every request). A fetch that fails leaves the keys it had: tokens signed by them are still taken while
/// the issuer is away.
final class OpenIDVerifier: Sendable {
    private struct Keys {
        var collection: JWTKeyCollection?
        var kids: Set<String> = []
        var fetched: Date?
        var attempted: Date?
    }

    let settings: OpenIDSettings
    private let keys: NIOLockedValueBox<[String: Keys]>
    private let logger: Logger
    /// What fetches the issuers' documents and keys.
    private let http: GuardedHTTP
    /// How long fetched keys are used before they are fetched again.
    static let refresh: TimeInterval = 3_600

    /// A verifier for the issuers of `settings`, fetching their keys with `http` (by default the client of their
    /// address policy, ``OpenIDSettings/allowPrivate``).
    init(settings: OpenIDSettings, logger: Logger, http: GuardedHTTP? = nil) {
        self.settings = settings
        keys = NIOLockedValueBox(Dictionary(uniqueKeysWithValues: settings.issuers.map { ($0, Keys()) }))
        self.logger = logger
        self.http = http ?? (settings.allowPrivate ? Self.privateClient : Self.publicClient)
    }

    /// The claims of `token` (its header's `alg` checked already), verified.
    ///
    /// - Throws: ``APIError`` `invalid_token` naming what is wrong, or `token_expired`.
    func verify(_ token: String, kid: String?, payload: [String: Any]) async throws -> OpenIDClaims {
        guard let issuer = payload["iss"] as? String else { throw TokenAuthority.invalid("its claim `iss` is missing") }
        guard settings.issuers.contains(issuer) else {
            throw TokenAuthority.invalid(
                "its issuer \(Self.quoted(issuer)) is not one this server takes (HERALD_OIDC_ISSUER: \(settings.issuers.joined(separator: ", ")))")
        }
        guard let kid, !kid.isEmpty else { throw TokenAuthority.invalid("its header names no key (`kid`)") }
        let collection = try await keys(of: issuer, with: kid)
        let claims: OpenIDClaims
        do {
            claims = try await collection.verify(token, as: OpenIDClaims.self)
        } catch let error as JWTError where error.failedClaim is ExpirationClaim {
            throw APIError(.unauthorized, .tokenExpired, "the token has expired\(TokenAuthority.expiry(of: token, now: Date()))")
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw TokenAuthority.invalid("bad signature (by \(issuer)'s key \(Self.quoted(kid)))")
        } catch let error as JWTError {
            throw TokenAuthority.invalid(error.reason ?? "it could not be verified")
        } catch {
            throw TokenAuthority.invalid("it could not be read: a claim is missing or of the wrong type (sub, iss, aud, exp)")
        }
        guard claims.aud.value.contains(where: settings.audiences.contains) else {
            throw TokenAuthority.invalid(
                "its audience \(claims.aud.value.map(Self.quoted).joined(separator: ", ")) is not this server's (HERALD_OIDC_AUDIENCE: \(settings.audiences.joined(separator: ", ")))")
        }
        return claims
    }

    /// The keys of `issuer`, holding `kid` (fetched again when they do not, or are old).
    private func keys(of issuer: String, with kid: String) async throws -> JWTKeyCollection {
        let now = Date()
        let (current, fetch) = keys.withLockedValue { all -> (Keys, Bool) in
            let keys = all[issuer] ?? Keys()
            let stale = keys.fetched.map { now.timeIntervalSince($0) > Self.refresh } ?? true
            let recentlyTried = keys.attempted.map { now.timeIntervalSince($0) < self.settings.refetchWait.seconds } ?? false
            let fetch = (stale || !keys.kids.contains(kid)) && !recentlyTried
            if fetch { all[issuer]?.attempted = now }
            return (keys, fetch)
        }
        var latest = current
        if fetch {
            do {
                let (collection, kids) = try await fetchKeys(of: issuer)
                latest = Keys(collection: collection, kids: kids, fetched: now, attempted: now)
                keys.withLockedValue { $0[issuer] = latest }
                logger.info("OIDC keys fetched", metadata: ["issuer": "\(issuer)", "kids": "\(kids.sorted())"])
            } catch {
                logger.warning("OIDC keys not fetched; the ones held stay", metadata: ["issuer": "\(issuer)", "error": "\(error)"])
                if current.collection == nil {
                    throw TokenAuthority.invalid("\(issuer)'s keys could not be fetched (\(error)); try again shortly")
                }
            }
        }
        guard let collection = latest.collection, latest.kids.contains(kid) else {
            throw TokenAuthority.invalid("no key \(Self.quoted(kid)) among \(issuer)'s keys")
        }
        return collection
    }

    /// An issuer's keys: its discovery document's `jwks_uri` (or ``OpenIDSettings/jwksURL``), read and parsed; each
    /// must have a `kid`, and only RSA and P-256 keys are kept. The `jwks_uri` comes from the network: it is held to
    /// the same rule as the issuer.
    func fetchKeys(of issuer: String) async throws -> (JWTKeyCollection, Set<String>) {
        var url = settings.jwksURL
        if url == nil {
            let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
            let discovery = try await get(base + "/.well-known/openid-configuration")
            guard let object = try JSONSerialization.jsonObject(with: discovery) as? [String: Any],
                  let found = object["jwks_uri"] as? String
            else { throw OpenIDFailure("its discovery document names no jwks_uri") }
            if let problem = settings.problem(withURL: found) {
                throw OpenIDFailure("its discovery document's jwks_uri \(Self.quoted(found)): \(problem)")
            }
            url = found
        }
        return try await Self.keys(fromJWKS: try await get(url ?? ""))
    }

    /// The keys of a JWK Set document (an issuer's, from the network): each must have a `kid`, and only RSA and
    /// P-256 keys are kept.
    static func keys(fromJWKS document: Data) async throws -> (JWTKeyCollection, Set<String>) {
        // Each key is read on its own: one the library cannot read (a symmetric `oct` key, another curve) is passed
        // over, not a reason to refuse the others.
        guard let object = try JSONSerialization.jsonObject(with: document) as? [String: Any],
              let entries = object["keys"] as? [Any]
        else { throw OpenIDFailure("its keys are not a JWK Set (an object with `keys`)") }
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        for entry in entries {
            guard let data = try? JSONSerialization.data(withJSONObject: entry),
                  let key = try? JSONDecoder().decode(JWK.self, from: data),
                  key.keyType == .rsa || (key.keyType == .ecdsa && key.curve?.rawValue == "P-256"),
                  let kid = key.keyIdentifier?.string, (try? await collection.add(jwk: key)) != nil
            else { continue }
            kids.insert(kid)
        }
        return (collection, kids)
    }

    /// The clients for issuers' documents and keys, one for each address policy, kept for the life of the process:
    /// Herald's one policy for outbound HTTP (``PushHTTP/configuration(tls:)``: bounded connects and reads, redirects
    /// never followed), through ``GuardedHTTP``, as webhooks and Web Push: each address a name resolves to is judged,
    /// and the connection made to the one judged. A provider that redirects is an error to see, not a hop to make: it
    /// would send the fetch (and trust the keys) wherever the redirect points.
    private static let publicClient = guardedClient(allowPrivate: false)
    private static let privateClient = guardedClient(allowPrivate: true)

    private static func guardedClient(allowPrivate: Bool) -> GuardedHTTP {
        GuardedHTTP(
            policy: AddressPolicy(allowPrivate: allowPrivate),
            configuration: PushHTTP.configuration(tls: .makeClientConfiguration()), timeout: .seconds(10),
            resolver: GuardedHTTP.systemResolver)
    }

    /// A GET of its first 64 KiB, within 10 s, never redirected, to an address the policy allows.
    private func get(_ url: String) async throws -> Data {
        guard let parsed = URL(string: url) else { throw OpenIDFailure("\(Self.quoted(url)) is not a URL") }
        let answer: PushHTTP.Answer
        do {
            answer = try await http.send(.GET, parsed, headers: [("Accept", "application/json")], body: Data())
        } catch let refusal as GuardedHTTP.Refusal {
            throw OpenIDFailure("\(url) was not fetched: \(refusal); set HERALD_OIDC_ALLOW_PRIVATE=1 if the identity provider is meant to be there")
        }
        guard answer.status == .ok else {
            let location = answer.headers.first(name: "location").map { " (a redirect to \(ControlCharacters.escaped($0)), not followed)" } ?? ""
            throw OpenIDFailure("\(url) answered \(answer.status.code)\(location)")
        }
        return answer.body
    }

    private static func quoted(_ text: String) -> String {
        "`\(ControlCharacters.escaped(String(text.prefix(200))))`"
    }
}

/// Why an issuer's keys could not be had.
struct OpenIDFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
