import Crypto
import Foundation
import HeraldProtocol

/// A device's key (docs/push.md, "Private pushes"): what a Notification Service Extension, which has no user token,
/// reads the messages pushed to its device with, and nothing else.
///
/// `hdk_` and 32 random bytes in base64url. Herald stores the SHA-256 of the key only, in hex, so a copy of the
/// database reads nothing; a request names its key as `Authorization: Bearer <key>`.
public enum DeviceReadKey {
    /// A new key and its digest.
    public static func make() -> (key: String, digest: String) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let key = prefix + Data(bytes).base64URLEncodedString()
        return (key, digest(ofWellFormed: key))
    }

    /// The digest of `key`, or nil when it is not shaped like a device key (nothing is looked up for it).
    public static func digest(of key: String) -> String? {
        let bytes = key.utf8
        guard bytes.count == prefix.utf8.count + 43, key.hasPrefix(prefix),
              bytes.dropFirst(prefix.utf8.count).allSatisfy(\.isBase64URL)
        else { return nil }
        return digest(ofWellFormed: key)
    }

    private static let prefix = "hdk_"

    private static func digest(ofWellFormed key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

extension UInt8 {
    fileprivate var isBase64URL: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
            || self == 0x2D || self == 0x5F
    }
}
