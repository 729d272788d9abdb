import Foundation

extension Data {
    /// Bytes from base64url text, padded or not (RFC 4648 section 5), as JWTs and Web Push keys carry them; nil for
    /// anything else.
    public init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}

extension DataProtocol {
    /// The bytes as base64url text without padding (RFC 4648 section 5).
    public func base64URLEncodedString() -> String {
        Data(self).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
