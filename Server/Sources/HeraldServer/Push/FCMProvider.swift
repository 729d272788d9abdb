import Foundation
import HeraldRecords
import JWTKit
import Logging

/// Firebase Cloud Messaging, HTTP v1 API, authorised by a Google service account.
///
/// The service account's key signs an RS256 assertion (`iss` = its `client_email`, `aud` = its `token_uri`,
/// scope `firebase.messaging`), exchanged at `token_uri` for an OAuth 2 access token, which is kept until five
/// minutes before it expires.
public final class FCMProvider: PushProvider {
    /// The fields of a service-account JSON file that Herald uses.
    struct ServiceAccount: Decodable {
        var project_id: String
        var client_email: String
        var private_key: String
        var token_uri: String
    }

    struct Assertion: JWTPayload {
        var iss: IssuerClaim
        var scope: String
        var aud: AudienceClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    public let platform = DeviceRegistration.Platform.fcm
    public let name = "FCM"
    public let concurrency: Int
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private let account: ServiceAccount
    private let keys: JWTKeyCollection
    private let http: PushHTTP
    private let sendURL: String
    private let accessToken: AccessTokenCache
    private let maxAge: Duration
    /// Whether alerts carry the keys of the app's own strings (``PushSettings/localizationKeys``).
    private let localizationKeys: Bool
    /// Whether pushes are encrypted to the devices that registered keys (``PushContentMode/encrypted``).
    private let encrypt: Bool
    private let logger: Logger

    /// A provider for the service account in `serviceAccountFile`, sending to `url` (FCM's by default).
    ///
    /// - Throws: ``ConfigurationError`` when the file cannot be read or lacks a field or a usable key.
    public init(
        serviceAccountFile: String, url: String, http: PushHTTP, maxAge: Duration, concurrency: Int,
        localizationKeys: Bool = false, encrypt: Bool = false, logger: Logger
    ) async throws {
        self.localizationKeys = localizationKeys
        self.encrypt = encrypt
        guard let data = FileManager.default.contents(atPath: serviceAccountFile) else {
            throw ConfigurationError("HERALD_FCM_SERVICE_ACCOUNT \(serviceAccountFile) cannot be read")
        }
        let account: ServiceAccount
        do {
            account = try JSONDecoder().decode(ServiceAccount.self, from: data)
        } catch {
            throw ConfigurationError(
                "HERALD_FCM_SERVICE_ACCOUNT \(serviceAccountFile) is not a service-account JSON file "
                    + "(project_id, client_email, private_key, token_uri)")
        }
        let key: Insecure.RSA.PrivateKey
        do {
            key = try Insecure.RSA.PrivateKey(pem: account.private_key)
        } catch {
            throw ConfigurationError("the private_key of HERALD_FCM_SERVICE_ACCOUNT \(serviceAccountFile) is not an RSA key")
        }
        self.account = account
        self.keys = await JWTKeyCollection().add(rsa: key, digestAlgorithm: .sha256)
        self.http = http
        self.sendURL = url.trimmingSuffix("/") + "/v1/projects/\(account.project_id)/messages:send"
        self.concurrency = concurrency
        self.maxAge = maxAge
        self.logger = logger
        self.accessToken = AccessTokenCache()
    }

    /// Exchanges a fresh assertion for an access token.
    private func exchange() async throws -> (token: String, expires: Date) {
        let now = Date()
        let assertion = try await keys.sign(Assertion(
            iss: IssuerClaim(value: account.client_email), scope: Self.scope,
            aud: AudienceClaim(value: account.token_uri), iat: IssuedAtClaim(value: now),
            exp: ExpirationClaim(value: now.addingTimeInterval(3600))))
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let answer = try await http.send(
            .POST, account.token_uri, headers: [("content-type", "application/x-www-form-urlencoded")], body: Data(form.utf8))
        guard answer.status == .ok, let json = answer.json, let token = json["access_token"] as? String, !token.isEmpty else {
            throw TokenExchangeError(status: Int(answer.status.code), body: String(decoding: answer.body.prefix(300), as: UTF8.self))
        }
        let lifetime = (json["expires_in"] as? Int).map(TimeInterval.init) ?? 3600
        return (token, now.addingTimeInterval(lifetime))
    }

    struct TokenExchangeError: Error, CustomStringConvertible {
        var status: Int
        var body: String
        var description: String { "the OAuth token exchange answered \(status): \(body)" }
    }

    public func send(_ job: PushJob) async -> PushOutcome {
        do {
            var answer = try await post(job, renew: false)
            if answer.status == .unauthorized {
                logger.info("FCM access token refused: getting a new one")
                answer = try await post(job, renew: true)
            }
            return Self.outcome(answer)
        } catch let error as TokenExchangeError {
            // The token endpoint said no: a bad service account is not fixed by retrying quickly, but it may be a
            // passing outage; the job's maximum age bounds the retries either way.
            return error.status == 429 || error.status >= 500
                ? .retry(after: nil, reason: "\(error)") : .retry(after: .seconds(60), reason: "\(error)")
        } catch {
            return .network(error)
        }
    }

    private func post(_ job: PushJob, renew: Bool) async throws -> PushHTTP.Answer {
        let token = try await accessToken.token(renew: renew) { try await self.exchange() }
        return try await http.send(
            .POST, sendURL,
            headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json; charset=utf-8")],
            body: Self.body(for: job, maxAge: maxAge, localized: localizationKeys, encrypt: encrypt))
    }

    /// The `message` of FCM's send request; with `localized`, the keys of the app's own strings beside the words;
    /// with `encrypt`, the words encrypted to a device with keys (``SealedPush``), sent as a data message only (so
    /// the app's messaging service always runs, decrypts and shows it). High priority only for what rings
    /// (``PushRank``): FCM lowers an app whose high-priority messages show nothing.
    static func body(for job: PushJob, maxAge: Duration, localized: Bool = false, encrypt: Bool = false) -> Data {
        // FCM counts the message, not the token it is addressed to.
        let limit = SealedPush.maxPayload + job.device.token.utf8.count + 16
        return SealedPush.payload(of: job, encrypt: encrypt, localized: localized, limit: limit) { sealed in
            body(for: job, sealed: sealed, maxAge: maxAge, localized: localized)
        }
    }

    /// The send request's body for `job` told as `sealed`.
    private static func body(for job: PushJob, sealed: SealedPush, maxAge: Duration, localized: Bool) -> Data {
        let content = sealed.content
        let rank = PushRank(job, maxAge: maxAge)
        var data = sealed.data
        data["badge"] = String(content.badge)
        var message: [String: Any] = ["token": job.device.token, "data": data]
        let expiration = String(Int(rank.expiry(of: job).timeIntervalSince1970))
        var android: [String: Any] = ["priority": rank.immediate ? "high" : "normal", "ttl": "\(rank.secondsLeft(of: job))s"]
        if job.showsAlert {
            let collapse = PushIdentity.collapseKey(for: content)
            android["collapse_key"] = collapse
            let passive = rank.interruption == "passive"
            var aps: [String: Any] = [
                "thread-id": content.conversationID, "badge": content.badge, "category": PushContent.category,
                "mutable-content": 1,
            ]
            if content.test == true {
                // A test notification is about no conversation, and has nothing to answer.
                aps["thread-id"] = nil
                aps["category"] = nil
                aps["mutable-content"] = nil
            }
            if sealed.isEncrypted {
                // No `notification`: Android would show it without the app. iOS shows `New message` until the
                // extension has decrypted.
                aps["alert"] = APNsProvider.alert(content, localized: localized)
            } else {
                message["notification"] = content.title.map { ["title": $0, "body": content.body ?? ""] } ?? ["body": content.body ?? ""]
                var notification: [String: Any] = ["tag": collapse, "notification_count": content.badge]
                // The keys an Android app's strings.xml translates the words with, when the operator says it ships them.
                if localized { notification.merge(content.localizationFields(
                    titleKey: "title_loc_key", titleArguments: "title_loc_args", bodyKey: "body_loc_key",
                    bodyArguments: "body_loc_args")
                ) { _, key in key } }
                if passive {
                    // Quiet hours, a burst's later message, an edit: low priority, no sound, no vibration.
                    notification["notification_priority"] = "PRIORITY_LOW"
                    notification["default_sound"] = false
                    notification["default_vibrate_timings"] = false
                }
                android["notification"] = notification
            }
            if !passive { aps["sound"] = "default" }
            aps["interruption-level"] = rank.interruption
            aps["relevance-score"] = rank.relevance
            message["apns"] = [
                "headers": [
                    "apns-collapse-id": collapse, "apns-priority": rank.immediate ? "10" : "5", "apns-push-type": "alert",
                    "apns-expiration": expiration,
                ],
                "payload": ["aps": aps],
            ]
        } else {
            message["apns"] = [
                "headers": ["apns-priority": "5", "apns-push-type": "background", "apns-expiration": expiration],
                "payload": ["aps": ["content-available": 1, "badge": content.badge]],
            ]
        }
        message["android"] = android
        return (try? JSONSerialization.data(withJSONObject: ["message": message], options: [.sortedKeys])) ?? Data()
    }

    /// What an answer means (FCM's `ErrorCode` reference).
    static func outcome(_ answer: PushHTTP.Answer) -> PushOutcome {
        if answer.status == .ok { return .sent(ticket: nil, id: answer.json?["name"] as? String) }
        let error = answer.json?["error"] as? [String: Any]
        let status = error?["status"] as? String ?? "HTTP \(answer.status.code)"
        let message = error?["message"] as? String ?? ""
        let details = error?["details"] as? [[String: Any]] ?? []
        let codes = details.compactMap { $0["errorCode"] as? String }
        let fields = details.flatMap { ($0["fieldViolations"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String } }
        let reason = ([status] + codes + (message.isEmpty ? [] : [message])).joined(separator: ": ")
        if codes.contains("UNREGISTERED") || answer.status == .notFound {
            return .removeDevice(reason: reason)
        }
        if codes.contains("SENDER_ID_MISMATCH") {
            return .removeDevice(reason: reason)
        }
        if answer.status == .badRequest,
           fields.contains("message.token") || message.lowercased().contains("registration token") {
            return .removeDevice(reason: reason)
        }
        return answer.shared ?? .drop(reason: reason)
    }
}

/// An OAuth access token shared by concurrent sends: fetched once, kept until five minutes before it expires. The
/// first send that needs one fetches it; the sends that need one meanwhile wait for that fetch.
actor AccessTokenCache {
    private var current: (token: String, expires: Date)?
    /// The sends waiting for the fetch in progress; nil when none is.
    private var waiting: [CheckedContinuation<String, any Error>]?

    func token(renew: Bool, fetch: @Sendable () async throws -> (token: String, expires: Date)) async throws -> String {
        if renew { current = nil }
        if let current, current.expires.timeIntervalSinceNow > 300 { return current.token }
        if waiting != nil {
            return try await withCheckedThrowingContinuation { waiting?.append($0) }
        }
        waiting = []
        let result: Result<(token: String, expires: Date), any Error>
        do {
            result = .success(try await fetch())
        } catch {
            result = .failure(error)
        }
        let waiters = waiting ?? []
        waiting = nil
        if case .success(let fresh) = result { current = fresh }
        for waiter in waiters { waiter.resume(with: result.map(\.token)) }
        return try result.get().token
    }
}
