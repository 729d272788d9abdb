import Foundation
import HeraldWebhookSignature

/// The webhooks' `Herald-Signature` header, as a backend checks it: a header (the input's first line) against a
/// body (the rest); and a body signed is verified.
enum WebhookSignatureTarget {
    static let secrets = ["whsec_fuzz", "whsec_previous"]
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func run(_ data: Data) {
        let (header, body) = data.split(at: UInt8(ascii: "\n"))
        _ = try? WebhookSignature.verify(body: body, header: String(decoding: header, as: UTF8.self), secrets: secrets, now: now)
        let signed = WebhookSignature.sign(body: body, secret: secrets[1], time: now)
        do {
            try WebhookSignature.verify(body: body, header: signed, secrets: secrets, now: now)
        } catch {
            preconditionFailure("a signed body does not verify: \(error)")
        }
    }
}
