import Crypto
import Foundation
import HeraldProtocol
import HeraldRecords
import Logging
import NIOPosix

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it and a `webpush` device registers it (the
/// JSON text is the device's token), with the page that registered it (`page`, optional: where a notification's
/// click goes).
struct WebPushSubscription: Decodable, Sendable {
    struct Keys: Decodable, Sendable {
        var p256dh: String
        var auth: String
    }

    var endpoint: String
    var keys: Keys
    var page: String?

    /// A subscription as checked: where to send, the browser's keys, and the page to open (nil: none was given).
    struct Checked: Sendable {
        var url: URL
        var p256dh: Data
        var auth: Data
        var page: String?
    }

    /// The longest endpoint URL taken, in bytes (real ones are a few hundred).
    static let maxEndpointBytes = 2_048

    /// The longest page address taken, in bytes: a notification's `navigate` is the page, `#chat=` and the
    /// conversation's id, and the whole push fits 4 KB.
    static let maxPageBytes = 512

    /// The subscription in `token`, checked: an `https` endpoint whose host `policy` allows as written, a P-256
    /// public key and a 16-byte secret, and a ``page(_:)`` when one is given. The problem, in words, when it is not
    /// one.
    static func parse(_ token: String, policy: AddressPolicy) -> Result<Checked, WebPushSubscriptionProblem> {
        guard let subscription = try? JSONDecoder().decode(WebPushSubscription.self, from: Data(token.utf8)) else {
            return .failure(.init("must be a push subscription: {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}}"))
        }
        guard subscription.endpoint.utf8.count <= maxEndpointBytes,
              let url = URL(string: subscription.endpoint), url.scheme?.lowercased() == "https",
              let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else { return .failure(.init("endpoint must be an https URL of at most \(maxEndpointBytes) bytes")) }
        if let reason = policy.problem(withHost: host) {
            return .failure(.init("endpoint's host \(reason)"))
        }
        guard let p256dh = Data(base64URL: subscription.keys.p256dh),
              (try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)) != nil
        else { return .failure(.init("keys.p256dh must be an uncompressed P-256 public key, base64url")) }
        guard let auth = Data(base64URL: subscription.keys.auth), auth.count == 16 else {
            return .failure(.init("keys.auth must be 16 bytes, base64url"))
        }
        var page: String?
        if let given = subscription.page {
            guard let checked = Self.page(given) else {
                return .failure(.init("page must be an http or https URL of at most \(maxPageBytes) bytes, without user, password or fragment"))
            }
            page = checked
        }
        return .success(Checked(url: url, p256dh: p256dh, auth: auth, page: page))
    }

    /// The page of the subscription in `token`, or nil: none given, or not a usable one (the push then goes in the
    /// plain format the service worker reads).
    static func page(in token: String) -> String? {
        (try? JSONDecoder().decode(WebPushSubscription.self, from: Data(token.utf8)))?.page.flatMap { Self.page($0) }
    }

    /// `address` when it is a page a notification may open: an absolute `http` or `https` URL with a host, no user
    /// or password and no fragment, at most ``maxPageBytes`` bytes of printable ASCII that a URL may hold as written
    /// (nothing left for a parser to encode or drop).
    static func page(_ address: String) -> String? {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?[]@!$&'()*+,;=%".utf8)
        guard !address.isEmpty, address.utf8.count <= maxPageBytes, address.utf8.allSatisfy(allowed.contains),
              let components = URLComponents(string: address),
              let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = components.host, !host.isEmpty,
              components.user == nil, components.password == nil, components.fragment == nil,
              !address.contains("#")
        else { return nil }
        return address
    }
}

/// What is wrong with a subscription.
struct WebPushSubscriptionProblem: Error {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Web Push (RFC 8030): the payload encrypted for the browser (RFC 8291), the request signed with the server's
/// VAPID key (RFC 8292), sent to the subscription's endpoint at the browser's push service.
public final class WebPushProvider: PushProvider {
    public let platform = DeviceRegistration.Platform.webpush
    public let name = "Web Push"
    public let concurrency: Int

    /// The most plaintext one push carries: a 4,096-byte record less its tag and delimiter.
    static let maxPayload = 4_096 - 17

    private let vapid: VAPID
    private let http: GuardedHTTP
    private let maxAge: Duration

    /// A provider signing with `vapid`, sending through `http`'s guarded client: to the addresses its policy allows
    /// (with `HERALD_WEBPUSH_ALLOW_PRIVATE=1`, for tests only, endpoints on this machine or a private network too).
    public init(vapid: VAPID, http: PushHTTP, maxAge: Duration, concurrency: Int) {
        self.vapid = vapid
        self.http = http.guarded
        self.maxAge = maxAge
        self.concurrency = concurrency
    }

    /// What the browser receives, decrypted. An alert and the test notification go as a declarative push message (W3C Push API, "declarative push message"; WebKit's Declarative Web Push):
    /// `{"web_push": 8030, "notification": {title, body, navigate, tag, silent, icon?, data, mutable}, "app_badge",
    /// "mutable": true}`, which a browser that implements it shows by itself, and which still reaches the service
    /// worker (`mutable`) to shape it; `notification.data` holds the fields the service worker reads. `navigate` is
    /// the subscription's page with `#chat=<conversation>`: without a page (a subscription registered before pages
    /// were sent), or when the declarative form would not fit 4 KB, the push is the plain JSON of those fields, as
    /// are clears and deletions (they show nothing) and edits: a browser shows a declarative message whenever the
    /// worker shows nothing, and the worker shows nothing for an edit of a notification no longer shown (it stays
    /// gone).
    static func payload(for job: PushJob) -> Data {
        let plain = plainPayload(for: job)
        guard job.showsAlert, job.content.follows == nil,
              let page = WebPushSubscription.page(in: job.device.token)
        else { return serialized(plain) }
        let declarative = serialized(declarativePayload(for: job, page: page, data: plain))
        return declarative.count <= maxPayload ? declarative : serialized(plain)
    }

    /// The fields the service worker reads: the words, the conversation, the message, the sender's name and
    /// picture (`senderAvatarURL`, which it shows as the icon), the category of its actions and the badge.
    static func plainPayload(for job: PushJob) -> [String: Any] {
        let content = job.content
        var payload: [String: Any] = content.data
        payload["badge"] = content.badge
        if job.showsAlert {
            payload["title"] = content.title ?? ""
            payload["body"] = content.body ?? ""
            // Quiet hours: the service worker shows it without sound or vibration.
            if content.quiet { payload["silent"] = true }
            if let summary = content.summary { payload["summary"] = summary }
        }
        return payload
    }

    /// The declarative push message of an alert or a test shown on `page`, carrying `data`. `mutable` is also
    /// inside `notification`, where Firefox's and earlier WebKit's parsers read it (the standard's parser ignores a
    /// member NotificationOptions does not have).
    static func declarativePayload(for job: PushJob, page: String, data: [String: Any]) -> [String: Any] {
        let content = job.content
        let test = content.test == true
        var navigate = page
        if !test, !content.conversationID.isEmpty {
            navigate += "#chat=" + fragmentEncoded(content.conversationID)
        }
        let edited = content.follows == .edited
        var body = content.body ?? ""
        if !edited, let summary = content.summary { body = summary + "\n" + body }
        var notification: [String: Any] = [
            "title": (content.title?.isEmpty == false ? content.title : nil) ?? (test ? "Herald" : "New message"),
            "body": body,
            "navigate": navigate,
            "tag": test ? "herald-test" : content.notificationID ?? "herald-\(content.seq)",
            // An edit is not news: it changes the words silently; quiet hours ring no sound.
            "silent": edited || content.quiet,
            "data": data,
            "mutable": true,
        ]
        if let picture = content.senderAvatarURL, let url = URL(string: picture),
           let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http" {
            notification["icon"] = picture
        }
        return ["web_push": 8030, "notification": notification, "app_badge": max(0, content.badge), "mutable": true]
    }

    /// `text` with everything but the URL-safe unreserved characters percent-encoded, as `encodeURIComponent` does
    /// (the page reads `#chat=` with `URLSearchParams`, which takes `+` for a space).
    static func fragmentEncoded(_ text: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static func serialized(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }

    /// The `Topic` header: the push service keeps only the newest push of a topic, so a resent push replaces
    /// itself. At most 32 characters of the URL-safe base64 alphabet: the first 32 of the push's digest. A deletion's
    /// follow-up shares its message's topic (a push of it not delivered yet is replaced by the word to remove it); an
    /// edit's has its own (the alert it changes must still arrive).
    static func topic(for content: PushContent) -> String {
        var digest = Data(PushIdentity.digest(for: content))
        if content.follows == .edited { digest = Data(SHA256.hash(data: digest + Data("\u{0}edited".utf8))) }
        return String(digest.base64URLEncodedString().prefix(32))
    }

    /// The headers that say how long the push lives, how urgent it is (ranked as the other services rank it,
    /// ``PushRank``: `high` only for what rings) and what it replaces (`Topic`).
    static func headers(for job: PushJob, maxAge: Duration) -> [(String, String)] {
        let rank = PushRank(job, maxAge: maxAge)
        return [
            ("ttl", String(rank.secondsLeft(of: job))),
            ("urgency", rank.immediate ? "high" : "normal"),
            ("topic", topic(for: job.content)),
        ]
    }

    public func send(_ job: PushJob) async -> PushOutcome {
        let subscription: WebPushSubscription.Checked
        switch WebPushSubscription.parse(job.device.token, policy: http.policy) {
        case .success(let parsed): subscription = parsed
        case .failure(let problem): return .removeDevice(reason: "not a usable subscription: \(problem.description)")
        }
        let plaintext = Self.payload(for: job)
        guard plaintext.count <= Self.maxPayload else { return .drop(reason: "payload of \(plaintext.count) bytes is over 4 KB") }
        do {
            let body = try WebPushEncryption.encrypt(plaintext, p256dh: subscription.p256dh, auth: subscription.auth)
            let answer = try await http.send(
                .POST, subscription.url,
                headers: [
                    ("authorization", try await vapid.authorization(for: subscription.url)),
                    ("content-encoding", "aes128gcm"),
                    ("content-type", "application/octet-stream"),
                ] + Self.headers(for: job, maxAge: maxAge),
                body: body)
            return Self.outcome(answer)
        } catch let error as WebPushEncryption.KeyFailure {
            return .removeDevice(reason: "the subscription's keys cannot be used: \(error)")
        } catch let refusal as GuardedHTTP.Refusal {
            return .removeDevice(reason: "endpoint refused: \(refusal)")
        } catch {
            return .network(error)
        }
    }

    /// What an answer means (RFC 8030, section 5 and 8).
    static func outcome(_ answer: PushHTTP.Answer) -> PushOutcome {
        switch answer.status.code {
        case 200..<300: return .sent(ticket: nil, id: answer.headers.first(name: "location"))
        case 404, 410: return .removeDevice(reason: "the subscription is gone (HTTP \(answer.status.code))")
        case 413: return .drop(reason: "payload too large (HTTP 413)")
        default: return answer.shared ?? .drop(reason: "HTTP \(answer.status.code)")
        }
    }
}
