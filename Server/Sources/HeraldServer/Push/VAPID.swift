import Crypto
import Foundation
import HeraldProtocol
import HeraldRecords
import JWTKit

/// The server's identity towards Web Push services (VAPID, RFC 8292): a P-256 key pair, whose public half the page
/// subscribes with, and a subject (a `mailto:` or `https:` URL) the services can contact.
///
/// Each push carries `Authorization: vapid t=<JWT>, k=<public key>`, the JWT (ES256) naming the push service's
/// origin (`aud`), an expiry at most 24 hours ahead (`exp`; Herald uses 12) and the subject (`sub`).
public struct VAPID: Sendable {
    struct Claims: JWTPayload {
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var sub: SubjectClaim?
        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }

    /// How long a VAPID token is valid.
    static let lifetime: TimeInterval = 12 * 3600

    private let keys: JWTKeyCollection
    /// The public key as the page needs it (`applicationServerKey`) and `k=` carries it: the uncompressed P-256
    /// point, base64url.
    public let publicKey: String
    /// The contact the push services see (`HERALD_VAPID_SUBJECT`); some services (Apple's) refuse pushes without.
    public let subject: String?

    /// The identity with `key`.
    init(key: P256.Signing.PrivateKey, subject: String?) async throws {
        publicKey = key.publicKey.x963Representation.base64URLEncodedString()
        self.subject = subject
        keys = await JWTKeyCollection().add(ecdsa: try ES256PrivateKey(backing: key))
    }

    /// The key pair in `file` (PEM), or, when `file` is nil, the one the nodes share (``SharedSetting/vapidKey``:
    /// made on first start; a single node keeps it beside its database in `<database>.vapid`, readable by the owner
    /// only, like the token secret, and a fresh one for `:memory:`; nodes on PostgreSQL keep it in the database).
    ///
    /// - Throws: ``ConfigurationError`` when the file or the shared setting holds no P-256 private key, or it cannot
    ///   be kept.
    public static func shared(by cluster: any Cluster, file: String?, subject: String?) async throws -> VAPID {
        if let file {
            return try await VAPID(key: readKey(file, setting: "HERALD_VAPID_PRIVATE_KEY_FILE"), subject: subject)
        }
        let pem = try await cluster.sharedSetting(.vapidKey) { P256.Signing.PrivateKey().pemRepresentation }
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw ConfigurationError("the VAPID key the server keeps (\(SharedSetting.vapidKey.rawValue)) is not a P-256 private key")
        }
        return try await VAPID(key: key, subject: subject)
    }

    private static func readKey(_ path: String, setting: String) throws -> P256.Signing.PrivateKey {
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError("\(setting): cannot read \(path)")
        }
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw ConfigurationError("\(setting): \(path) holds no P-256 private key (PEM)")
        }
        return key
    }

    /// The origin of `endpoint` (`https://push.example.com`, with the port only when it is not the default).
    static func origin(of endpoint: URL) -> String? {
        guard let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host?.lowercased() else { return nil }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let port = endpoint.port.flatMap { (scheme == "https" && $0 == 443) || (scheme == "http" && $0 == 80) ? nil : $0 }
        return "\(scheme)://\(shownHost)" + (port.map { ":\($0)" } ?? "")
    }

    /// The `Authorization` header for a push to `endpoint`.
    public func authorization(for endpoint: URL, now: Date = Date()) async throws -> String {
        guard let origin = Self.origin(of: endpoint) else { throw ConfigurationError("no origin in \(endpoint)") }
        let token = try await keys.sign(Claims(
            aud: AudienceClaim(value: origin), exp: ExpirationClaim(value: now.addingTimeInterval(Self.lifetime)),
            sub: subject.map(SubjectClaim.init(value:))))
        return "vapid t=\(token), k=\(publicKey)"
    }
}
