import Crypto
import Foundation

/// The app's backend's credentials: the keys of `HERALD_SERVICE_KEY` (several at once, so that one can replace
/// another without a moment when neither works).
///
/// A key is a random string of at least 32 bytes that only the app's backend and Herald know, sent as
/// `Authorization: Bearer <key>` to `/v1/service/…`. Herald keeps each key's SHA-256 only, compares digests in
/// constant time, and names a key in its logs by its id: the first 8 hex digits of that digest, never the key.
public struct ServiceKeys: Hashable, Sendable {
    private let keys: [(id: String, digest: SHA256Digest)]

    /// No key: the service routes refuse every call.
    public static let none = ServiceKeys(digests: [])

    private init(digests: [(id: String, digest: SHA256Digest)]) {
        keys = digests
    }

    /// The keys; none means the service routes refuse every call.
    ///
    /// - Throws: ``ConfigurationError`` for a key shorter than 32 bytes.
    public init(_ keys: [String]) throws {
        self.keys = try keys.map { key in
            guard key.utf8.count >= 32 else {
                throw ConfigurationError("HERALD_SERVICE_KEY: each key must be at least 32 bytes (one is \(key.utf8.count))")
            }
            let digest = SHA256.hash(data: Data(key.utf8))
            return (Self.id(of: digest), digest)
        }
    }

    /// Whether there is any key.
    public var isEmpty: Bool { keys.isEmpty }

    /// The ids of the keys, in the order given: what the logs name them by.
    public var ids: [String] { keys.map(\.id) }

    /// The id of the key `token` is, or nil when it is none of them. Every key is compared, in constant time.
    func keyID(of token: String) -> String? {
        let digest = SHA256.hash(data: Data(token.utf8))
        var found: String?
        for key in keys where key.digest == digest && found == nil {
            found = key.id
        }
        return found
    }

    /// The id a key is known by: `key:` and the first 8 hex digits of its SHA-256.
    public static func id(of key: String) -> String {
        id(of: SHA256.hash(data: Data(key.utf8)))
    }

    private static func id(of digest: SHA256Digest) -> String {
        "key:" + digest.prefix(4).map { String(format: "%02x", $0) }.joined()
    }

    public static func == (lhs: ServiceKeys, rhs: ServiceKeys) -> Bool { lhs.ids == rhs.ids }

    public func hash(into hasher: inout Hasher) { hasher.combine(ids) }
}
