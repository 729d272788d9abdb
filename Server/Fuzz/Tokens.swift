import Crypto
import Foundation
import HeraldProtocol
@testable import HeraldServer
import JWTKit

/// Tokens, as the server verifies them (``TokenAuthority``): the input's first byte picks what the rest is.
///
/// - 0: a token, as it comes in a request's `Authorization` (or the stream's query).
/// - 1: a token's payload (JSON), signed with the server's secret: what the claims are read into once the signature
///   holds, for Herald's own tokens and as an identity provider's (``OpenIDClaims``).
/// - 2: an identity provider's JWK Set, read as ``OpenIDVerifier`` reads the document it fetches, then a token (after
///   the first newline) verified against those keys.
enum TokensTarget {
    static let secret = "fuzz-secret-fuzz-secret-fuzz-secret"
    static let authority = waitFor { await TokenAuthority(secret: secret) }
    static let hmacKeys = waitFor { await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256) }

    static func run(_ data: Data) {
        guard let mode = data.first else { return }
        let rest = data.dropFirst()
        switch mode % 3 {
        case 0:
            let token = String(decoding: rest, as: UTF8.self)
            waitFor { _ = try? await authority.verify(token) }
        case 1:
            let token = signed(payload: Data(rest))
            waitFor {
                _ = try? await authority.verify(token)
                if let claims = try? await hmacKeys.verify(token, as: OpenIDClaims.self), let email = claims.email {
                    _ = OpenIDClaims.localPart(of: email)
                }
            }
        default:
            let (document, token) = Data(rest).split(at: UInt8(ascii: "\n"))
            let text = String(decoding: token, as: UTF8.self)
            waitFor {
                guard let (keys, _) = try? await OpenIDVerifier.keys(fromJWKS: document) else { return }
                _ = try? await keys.verify(text, as: OpenIDClaims.self)
            }
        }
    }

    /// An HS256 token of `payload` under ``secret``.
    static func signed(payload: Data) -> String {
        let header = Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8).base64URLEncodedString()
        let input = header + "." + payload.base64URLEncodedString()
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return input + "." + Data(mac).base64URLEncodedString()
    }
}
