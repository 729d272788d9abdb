import Foundation
import HeraldCore
import HeraldRecords

/// What APNs, FCM and Expo are told of one push, and what only the device reads (`HERALD_PUSH_CONTENT=encrypted`;
/// docs/push.md, "Encrypted pushes").
///
/// With encryption on, a device that registered keys gets the push's every field encrypted to them (RFC 8291, the
/// Web Push scheme), and in clear only the ids, the badge and `New message`; a device without keys, or a push too
/// large to encrypt within the services' 4 KB even without the sender's picture and the localisation keys, gets
/// what `HERALD_PUSH_CONTENT=none` sends, and its app fetches the
/// words with its device key. Otherwise (and for a test notification, which has no words to keep) the push is the
/// job's own.
struct SealedPush {
    /// What the push shows in clear: the job's content, or with its words withheld.
    var content: PushContent
    /// The data beside the alert: the content's own, or with encryption the ids, `withheld` and `encrypted`.
    var data: [String: String]
    /// Whether the words travel encrypted (`withheld: "encrypted"`).
    var isEncrypted: Bool { data["withheld"] == PushContentMode.encrypted.rawValue }

    /// The data fields an encrypted push carries in clear: what a device needs to show something and to fetch the
    /// rest should decryption fail.
    static let clearFields: Set<String> = ["type", "conversationId", "messageId", "seq", "notificationId", "category"]
    /// The most bytes a push service takes in one push (APNs, FCM and Expo: 4 KB).
    static let maxPayload = 4_096

    /// How much of the push is sealed: everything, or without the sender's picture and the localisation keys (to fit),
    /// or nothing (the words withheld, as `none` sends them).
    enum Extent: CaseIterable {
        case whole, trimmed, withheld
    }

    /// The push of `job` as the services are told it: encrypted to the device when `encrypt` (the server's mode is
    /// ``PushContentMode/encrypted``) and the device has keys, to `extent`. `localized`: whether the plaintext
    /// carries the keys of the app's own strings.
    init(_ job: PushJob, encrypt: Bool, localized: Bool, extent: Extent = .whole) {
        guard encrypt, job.content.test != true else {
            content = job.content
            data = job.content.data
            return
        }
        var withheld = job.content
        withheld.withholdAll()
        if extent != .withheld, let keys = job.device.keys,
           let sealed = Self.seal(job.content, localized: localized && extent == .whole, trimmed: extent == .trimmed, for: keys) {
            withheld.withheld = .encrypted
            withheld.count = nil
            content = withheld
            data = job.content.data.filter { Self.clearFields.contains($0.key) }
            data["withheld"] = PushContentMode.encrypted.rawValue
            data["encrypted"] = sealed
        } else {
            content = withheld
            data = withheld.data
        }
    }

    /// The payload `build` makes of `job`, encrypted as far as it fits in `limit` bytes (``maxPayload`` and what
    /// the service does not count): whole, then trimmed, then with the words withheld.
    static func payload(
        of job: PushJob, encrypt: Bool, localized: Bool, limit: Int = maxPayload, _ build: (SealedPush) -> Data
    ) -> Data {
        var body = Data()
        for extent in Extent.allCases {
            let sealed = SealedPush(job, encrypt: encrypt, localized: localized, extent: extent)
            body = build(sealed)
            if !sealed.isEncrypted || body.count <= limit { return body }
        }
        return body
    }

    /// The plaintext is padded to a multiple of this many bytes, so a push's size tells the push service little of
    /// its words' length.
    static let paddingBlock = 128

    /// `content`'s plaintext (``plaintext(of:localized:)``) encrypted for `keys`, padded (``paddingBlock``), in
    /// base64url (`trimmed`: without the sender's picture); nil when the keys cannot be used.
    static func seal(_ content: PushContent, localized: Bool, trimmed: Bool = false, for keys: PushEncryptionKeys) -> String? {
        var content = content
        if trimmed { content.senderAvatarURL = nil }
        let plaintext = Self.plaintext(of: content, localized: localized)
        let padding = (paddingBlock - (plaintext.count + 1) % paddingBlock) % paddingBlock
        return (try? WebPushEncryption.encrypt(plaintext, p256dh: keys.p256dh, auth: keys.auth, padding: padding))?
            .base64URLEncodedString()
    }

    /// What a device decrypts: the fields a full push carries, as JSON. `title`, `body` and `summary` (a burst's
    /// count in words) where the push has them, `badge`, `data` (a full push's data, as strings) and, with
    /// `localized`, `localization` (the keys of the app's own strings and their arguments).
    static func plaintext(of content: PushContent, localized: Bool) -> Data {
        var fields: [String: Any] = ["badge": content.badge, "data": content.data]
        if let title = content.title { fields["title"] = title }
        if let body = content.body {
            fields["body"] = body
        } else if content.follows == .deleted {
            fields["body"] = ContentFormatter.standard.deletedPlaceholder
        }
        if let summary = content.summary { fields["summary"] = summary }
        if localized, let localization = content.localization,
           let encoded = try? JSONEncoder().encode(localization),
           let object = try? JSONSerialization.jsonObject(with: encoded) {
            fields["localization"] = object
        }
        return (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data()
    }
}
