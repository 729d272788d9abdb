#if canImport(CryptoKit)
import CryptoKit
#else
import Crypto
#endif
import Foundation

/// The `Herald-Signature` header of a webhook delivery: `t=<unix seconds>,v1=<hex>`, where the hex is
/// HMAC-SHA256, keyed with `HERALD_WEBHOOK_SECRET`, of the timestamp, a full stop, and the body's exact bytes.
///
/// Any HMAC library checks it: compute the same over `"\(t).\(body)"`, compare in constant time, and refuse a
/// timestamp too far from now (a replayed delivery).
public enum WebhookSignature {
    /// The header's name.
    public static let header = "Herald-Signature"

    /// The header's value for `body` sent at `time`.
    public static func sign(body: Data, secret: String, time: Date = Date()) -> String {
        let timestamp = Int64(time.timeIntervalSince1970.rounded(.down))
        return "t=\(timestamp),v1=\(hex(mac(body: body, timestamp: timestamp, secret: secret)))"
    }

    /// Why a delivery's signature was refused.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// No `Herald-Signature` header, or not `t=…,v1=…`.
        case malformed
        /// Its timestamp is further than the tolerance from now.
        case stale
        /// No `v1` matches the body under any of the secrets.
        case mismatch

        public var description: String {
            switch self {
            case .malformed: "the Herald-Signature header is missing or not t=…,v1=…"
            case .stale: "the signature's timestamp is too far from now (a replay?)"
            case .mismatch: "the signature does not match the body"
            }
        }
    }

    /// Checks `header` (the `Herald-Signature` value) against `body` under any of `secrets` (several while one
    /// replaces another), with a timestamp within `tolerance` of `now`.
    ///
    /// - Throws: ``Failure``.
    public static func verify(
        body: Data, header: String?, secrets: [String], tolerance: TimeInterval = 300, now: Date = Date()
    ) throws {
        guard let header else { throw Failure.malformed }
        var timestamp: Int64?
        var signatures: [Data] = []
        for part in header.split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            switch pair[0] {
            case "t": timestamp = Int64(pair[1])
            case "v1": if let bytes = bytes(fromHex: String(pair[1])) { signatures.append(bytes) }
            default: continue
            }
        }
        guard let timestamp, !signatures.isEmpty else { throw Failure.malformed }
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { throw Failure.stale }
        let message = signed(body, timestamp)
        for secret in secrets {
            let key = SymmetricKey(data: Data(secret.utf8))
            // Compared in constant time.
            if signatures.contains(where: { HMAC<SHA256>.isValidAuthenticationCode($0, authenticating: message, using: key) }) {
                return
            }
        }
        throw Failure.mismatch
    }

    private static func signed(_ body: Data, _ timestamp: Int64) -> Data {
        Data("\(timestamp).".utf8) + body
    }

    private static func mac(body: Data, timestamp: Int64, secret: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: signed(body, timestamp), using: SymmetricKey(data: Data(secret.utf8))))
    }

    private static func hex(_ data: Data) -> String {
        data.map { String(format: "%02x", $0) }.joined()
    }

    private static func bytes(fromHex text: String) -> Data? {
        guard text.count == 64 else { return nil }
        var data = Data(capacity: 32)
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            data.append(byte)
            index = next
        }
        return data
    }
}
