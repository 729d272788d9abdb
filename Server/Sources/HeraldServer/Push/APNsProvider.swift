import Crypto
import Foundation
import HeraldCore
import HeraldRecords
import JWTKit
import Logging
import NIOConcurrencyHelpers

/// Apple Push Notification service: the HTTP/2 provider API with token authentication.
///
/// The provider token is an ES256 JWT signed with the team's `.p8` key (`kid` = the key id, `iss` = the team id),
/// made once and reused, and made anew after ``tokenLifetime`` (Apple refuses tokens older than an hour and
/// throttles ones made more often than every 20 minutes) or when APNs answers `ExpiredProviderToken`.
public final class APNsProvider: PushProvider {
    /// What `herald serve` needs to reach APNs.
    public struct Settings: Hashable, Sendable {
        /// The `.p8` key file from the Apple Developer account (Keys).
        public var keyFile: String
        /// The key's id (10 characters).
        public var keyID: String
        /// The team id (10 characters).
        public var teamID: String
        /// The app's bundle id: the `apns-topic`.
        public var topic: String
        /// The APNs server: production by default; `https://api.sandbox.push.apple.com` for development builds.
        public var url: String

        /// The production server.
        public static let production = "https://api.push.apple.com"
        /// The development (sandbox) server.
        public static let sandbox = "https://api.sandbox.push.apple.com"

        /// Settings for the key in `keyFile`.
        public init(keyFile: String, keyID: String, teamID: String, topic: String, url: String = Self.production) {
            self.keyFile = keyFile
            self.keyID = keyID
            self.teamID = teamID
            self.topic = topic
            self.url = url
        }
    }

    struct ProviderClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    public let platform = DeviceRegistration.Platform.apns
    public let name = "APNs"
    public let concurrency: Int
    /// How long a provider token is reused.
    static let tokenLifetime: TimeInterval = 50 * 60

    private let settings: Settings
    private let keys: JWTKeyCollection
    private let http: PushHTTP
    private let maxAge: Duration
    /// Whether alerts carry the keys of the app's own strings (``PushSettings/localizationKeys``).
    private let localizationKeys: Bool
    /// Whether pushes are encrypted to the devices that registered keys (``PushContentMode/encrypted``).
    private let encrypt: Bool
    private let token = NIOLockedValueBox<(value: String, made: Date)?>(nil)
    private let logger: Logger

    /// A provider signing with the key in `settings.keyFile`.
    ///
    /// - Throws: ``ConfigurationError`` when the key file cannot be read or holds no P-256 private key.
    public init(
        settings: Settings, http: PushHTTP, maxAge: Duration, concurrency: Int, localizationKeys: Bool = false,
        encrypt: Bool = false, logger: Logger
    ) async throws {
        self.localizationKeys = localizationKeys
        self.encrypt = encrypt
        guard let pem = try? String(contentsOfFile: settings.keyFile, encoding: .utf8) else {
            throw ConfigurationError("HERALD_APNS_KEY_FILE \(settings.keyFile) cannot be read")
        }
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: pem)
        } catch {
            throw ConfigurationError("HERALD_APNS_KEY_FILE \(settings.keyFile) holds no P-256 private key (.p8)")
        }
        self.settings = settings
        self.keys = await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: settings.keyID))
        self.http = http
        self.maxAge = maxAge
        self.concurrency = concurrency
        self.logger = logger
    }

    /// The provider token: the current one, or a new one when it is too old or `renew`.
    func providerToken(renew: Bool = false) async throws -> String {
        let now = Date()
        if !renew, let current = token.withLockedValue({ $0 }), now.timeIntervalSince(current.made) < Self.tokenLifetime {
            return current.value
        }
        let value = try await keys.sign(
            ProviderClaims(iss: IssuerClaim(value: settings.teamID), iat: IssuedAtClaim(value: now)),
            kid: JWKIdentifier(string: settings.keyID))
        token.withLockedValue { $0 = (value, now) }
        return value
    }

    public func send(_ job: PushJob) async -> PushOutcome {
        do {
            let answer = try await post(job, renew: false)
            if answer.status == .forbidden, Self.reason(answer) == "ExpiredProviderToken" {
                logger.info("APNs provider token expired: making a new one")
                return Self.outcome(try await post(job, renew: true))
            }
            return Self.outcome(answer)
        } catch {
            return .network(error)
        }
    }

    private func post(_ job: PushJob, renew: Bool) async throws -> PushHTTP.Answer {
        let headers = [
            ("authorization", "bearer \(try await providerToken(renew: renew))"), ("apns-topic", settings.topic),
        ] + Self.headers(for: job, maxAge: maxAge)
        let url = settings.url.trimmingSuffix("/") + "/3/device/" + job.device.token
        return try await http.send(
            .POST, url, headers: headers,
            body: Self.payload(for: job, localized: localizationKeys, encrypt: encrypt, maxAge: maxAge))
    }

    /// The request's headers but its token and topic: the push's type, priority (at once only what rings;
    /// background pushes must go at 5), expiry (``PushRank``), id and collapse id.
    static func headers(for job: PushJob, maxAge: Duration) -> [(String, String)] {
        let alert = isVisible(job)
        let rank = PushRank(job, maxAge: maxAge)
        var headers = [
            ("apns-push-type", alert ? "alert" : "background"),
            ("apns-priority", alert && rank.immediate ? "10" : "5"),
            ("apns-expiration", String(Int(rank.expiry(of: job).timeIntervalSince1970))),
            ("apns-id", PushIdentity.uuid(for: job)),
            ("content-type", "application/json"),
        ]
        if alert { headers.append(("apns-collapse-id", PushIdentity.collapseKey(for: job.content))) }
        return headers
    }

    /// Whether the push shows something: an alert, an edit's replacement, and a deletion's. A deletion is a visible,
    /// passive alert under the message's collapse id, so iOS replaces the message's notification with it even when the
    /// app was force-quit (a background push is throttled, and never delivered then); its `content-available` lets an
    /// app that runs remove it altogether. Only the clear is a background push.
    static func isVisible(_ job: PushJob) -> Bool {
        job.showsAlert || (job.kind == .follow && job.content.follows == .deleted)
    }

    /// The JSON body: `aps` and the app's data beside it. A background push (the clear) has `content-available` alone
    /// in `aps`, as Apple's "Pushing background updates to your App" asks; the badge it carries is the app's data
    /// (`badge` beside `aps`), which the app sets itself. With `localized`, alerts carry the keys of the app's own
    /// strings beside their words; with `encrypt`, the words go encrypted to a device with keys (``SealedPush``).
    /// Alerts are ranked for iOS's summaries and Focus (``PushRank``).
    static func payload(for job: PushJob, localized: Bool = false, encrypt: Bool = false, maxAge: Duration = .seconds(3600)) -> Data {
        SealedPush.payload(of: job, encrypt: encrypt, localized: localized) { sealed in
            payload(for: job, sealed: sealed, localized: localized, maxAge: maxAge)
        }
    }

    /// The JSON body of `job` told as `sealed`.
    private static func payload(for job: PushJob, sealed: SealedPush, localized: Bool, maxAge: Duration) -> Data {
        let content = sealed.content
        let rank = PushRank(job, maxAge: maxAge)
        var aps: [String: Any] = [:]
        var body: [String: Any] = [:]
        if job.kind == .follow, content.follows == .deleted {
            // Replaces the message's notification: no words of it, no sound, nothing that breaks through.
            aps["alert"] = ["body": ContentFormatter.standard.deletedPlaceholder]
            aps["thread-id"] = content.conversationID
            aps["badge"] = content.badge
            aps["content-available"] = 1
            body["badge"] = content.badge
        } else if job.showsAlert {
            aps["badge"] = content.badge
            aps["alert"] = alert(content, localized: localized)
            if content.test != true {
                // A test notification is about no conversation, and has nothing to answer.
                aps["thread-id"] = content.conversationID
                aps["category"] = PushContent.category
                // The app's Notification Service Extension fills in a chat-style notification (and decrypts).
                aps["mutable-content"] = 1
            }
            // Quiet hours, a burst's later message, an edit: into the notification list without sound, lighting the
            // screen or breaking through Focus (``PushRank``).
            if rank.interruption != "passive" { aps["sound"] = "default" }
        } else {
            aps["content-available"] = 1
            body["badge"] = content.badge
        }
        // Nil for a clear, which shows nothing.
        aps["interruption-level"] = rank.interruption
        aps["relevance-score"] = rank.relevance
        body["aps"] = aps
        for (key, value) in sealed.data { body[key] = value }
        return (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
    }

    /// The `alert` of an alert's `aps`: its English words, and with `localized` beside them the keys an app's
    /// `Localizable.strings` translates them with (`title-loc-key` and `title-loc-args`, `loc-key` and `loc-args` for
    /// the body, `subtitle-loc-key` for a burst's count).
    static func alert(_ content: PushContent, localized: Bool) -> [String: Any] {
        var alert: [String: Any] = ["body": content.body ?? ""]
        if let title = content.title { alert["title"] = title }
        if let summary = content.summary, let count = content.count {
            // Inside a burst: `3 new messages`, translatable.
            alert["subtitle"] = summary
            if localized {
                alert["subtitle-loc-key"] = "HERALD_NEW_MESSAGES"
                alert["subtitle-loc-args"] = [String(count)]
            }
        }
        guard localized else { return alert }
        alert.merge(content.localizationFields(
            titleKey: "title-loc-key", titleArguments: "title-loc-args", bodyKey: "loc-key", bodyArguments: "loc-args")
        ) { _, key in key }
        return alert
    }

    static func reason(_ answer: PushHTTP.Answer) -> String? {
        answer.json?["reason"] as? String
    }

    /// What an answer means (Apple's "Handling notification responses from APNs").
    static func outcome(_ answer: PushHTTP.Answer) -> PushOutcome {
        let reason = reason(answer) ?? "HTTP \(answer.status.code)"
        switch answer.status.code {
        case 200:
            return .sent(ticket: nil, id: answer.headers.first(name: "apns-id"))
        case 410:
            return .removeDevice(reason: reason)
        case 400 where ["BadDeviceToken", "DeviceTokenNotForTopic"].contains(reason):
            return .removeDevice(reason: reason)
        case 403 where ["ExpiredProviderToken", "InvalidProviderToken"].contains(reason):
            // A new token was already tried; try again later rather than never.
            return .retry(after: nil, reason: reason)
        case 413:
            return .drop(reason: "payload too large (\(reason))")
        default:
            return answer.shared ?? .drop(reason: reason)
        }
    }
}

/// The identities a push carries so that sending it again never shows it twice.
enum PushIdentity {
    /// What the push is about, hashed: the message (its conversation and its id there: an id names a message only in
    /// its conversation), or the conversation a clear is for. The same every time the same push is sent.
    static func digest(for content: PushContent) -> SHA256.Digest {
        let subject = content.messageID.map { "message\u{0}\(content.conversationID)\u{0}\($0)" }
            ?? "read\u{0}\(content.conversationID)"
        return SHA256.hash(data: Data(subject.utf8))
    }

    /// The collapse key (APNs' `apns-collapse-id`, which iOS makes the notification's identifier; FCM's
    /// `collapse_key` and Android tag): for an alert, the identifier the device's own notification of the message
    /// has (``LocalNotification/identifier``, `herald-<seq>`), so the two show once; for a clear, the digest in hex
    /// (64 characters, APNs' limit).
    static func collapseKey(for content: PushContent) -> String {
        if let identifier = content.notificationID { return identifier }
        return digest(for: content).map { String(format: "%02x", $0) }.joined()
    }

    /// A UUID that is the same every time the job is sent (APNs' `apns-id`), and another for each message (the
    /// pushes of a burst share a collapse id, not an `apns-id`).
    static func uuid(for job: PushJob) -> String {
        let subject = digest(for: job.content).map { String(format: "%02x", $0) }.joined()
        let seed = "\(job.kind.rawValue)\u{0}\(subject)\u{0}\(job.device.userID)\u{0}\(job.device.id)"
        var bytes = Array(SHA256.hash(data: Data(seed.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // version 5 style: name-based
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
            .uuidString.lowercased()
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
