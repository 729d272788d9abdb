import Crypto
import Foundation
import HeraldProtocol
import Logging
import NIOPosix

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it and a `webpush` device registers it (the
/// JSON text is the device's token).
struct WebPushSubscription: Decodable, Sendable {
    struct Keys: Decodable, Sendable {
        var p256dh: String
        var auth: String
    }

    var endpoint: String
    var keys: Keys

    /// The subscription in `token`, checked: an `https` endpoint on a public host (unless `allowPrivate`), a P-256
    /// public key and a 16-byte secret. The problem, in words, when it is not one.
    static func parse(_ token: String, allowPrivate: Bool) -> Result<(url: URL, p256dh: Data, auth: Data), WebPushSubscriptionProblem> {
        guard let subscription = try? JSONDecoder().decode(WebPushSubscription.self, from: Data(token.utf8)) else {
            return .failure(.init("must be a push subscription: {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}}"))
        }
        guard let url = URL(string: subscription.endpoint), url.scheme?.lowercased() == "https",
              let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else { return .failure(.init("endpoint must be an https URL")) }
        if !allowPrivate, let reason = PublicHost.problem(with: host) {
            return .failure(.init("endpoint \(reason)"))
        }
        guard let p256dh = Data(base64URL: subscription.keys.p256dh),
              (try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)) != nil
        else { return .failure(.init("keys.p256dh must be an uncompressed P-256 public key, base64url")) }
        guard let auth = Data(base64URL: subscription.keys.auth), auth.count == 16 else {
            return .failure(.init("keys.auth must be 16 bytes, base64url"))
        }
        return .success((url, p256dh, auth))
    }
}

/// What is wrong with a subscription.
struct WebPushSubscriptionProblem: Error {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Whether a host is one Herald may send to on a browser's behalf: never this machine or a private network, so a
/// crafted subscription cannot make the server call into its own network (server-side request forgery).
enum PublicHost {
    /// What is wrong with `host` (a name or an address literal), or nil when it may be public.
    static func problem(with host: String) -> String? {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare.hasSuffix(".localhost") || bare.hasSuffix(".local") || bare.hasSuffix(".internal")
            || !bare.contains(".") && !bare.contains(":") {
            return "must be on a public host, not \(bare)"
        }
        if let reason = problem(withAddress: bare) { return reason }
        return nil
    }

    /// What is wrong with `address` if it is an IP address literal that is not public.
    static func problem(withAddress address: String) -> String? {
        if let v4 = ipv4(address) { return isPublic(v4: v4) ? nil : "must not be a loopback, private or link-local address (\(address))" }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return isPublic(v4: Array(bytes[12..<16])) ? nil : "must not be a loopback, private or link-local address (\(address))"
        }
        let isPrivate = bytes.allSatisfy { $0 == 0 }  // ::
            || (bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1)  // ::1
            || bytes[0] & 0xFE == 0xFC  // fc00::/7, unique local
            || (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80)  // fe80::/10, link-local
            || bytes[0] == 0xFF  // multicast
        return isPrivate ? "must not be a loopback, private or link-local address (\(address))" : nil
    }

    private static func ipv4(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        guard inet_pton(AF_INET, text, &v4) == 1 else { return nil }
        return withUnsafeBytes(of: &v4) { Array($0) }
    }

    private static func isPublic(v4 b: [UInt8]) -> Bool {
        !(b[0] == 0 || b[0] == 10 || b[0] == 127 || b[0] >= 224  // this network, private, loopback, multicast, reserved
            || (b[0] == 100 && b[1] & 0xC0 == 64)  // 100.64.0.0/10, shared address space
            || (b[0] == 169 && b[1] == 254)  // link-local
            || (b[0] == 172 && b[1] & 0xF0 == 16)  // 172.16.0.0/12
            || (b[0] == 192 && b[1] == 168)  // 192.168.0.0/16
            || (b[0] == 192 && b[1] == 0 && b[2] == 0)  // 192.0.0.0/24
            || (b[0] == 198 && b[1] & 0xFE == 18))  // 198.18.0.0/15, benchmarking
    }

    /// What is wrong with where `host` resolves to: every address must be public (a name can point anywhere).
    static func problemResolving(_ host: String) async -> String? {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if let reason = problem(with: bare) { return reason }
        let addresses: [String]
        do {
            addresses = try await NIOThreadPool.singleton.runIfActive { resolve(bare) }
        } catch {
            return "could not be resolved"
        }
        guard !addresses.isEmpty else { return "could not be resolved" }
        for address in addresses {
            if let reason = problem(withAddress: address) { return "\(bare) resolves to a private address: \(reason)" }
        }
        return nil
    }

    private static func resolve(_ host: String) -> [String] {
        var hints = addrinfo()
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(info.pointee.ai_addr, info.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 {
                addresses.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            cursor = info.pointee.ai_next
        }
        return addresses
    }
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
    private let http: PushHTTP
    private let maxAge: Duration
    private let allowPrivate: Bool

    /// A provider signing with `vapid`; `allowPrivate` lets endpoints on this machine or a private network through
    /// (`HERALD_WEBPUSH_ALLOW_PRIVATE=1`, for tests only).
    public init(vapid: VAPID, http: PushHTTP, maxAge: Duration, concurrency: Int, allowPrivate: Bool) {
        self.vapid = vapid
        self.http = http
        self.maxAge = maxAge
        self.concurrency = concurrency
        self.allowPrivate = allowPrivate
    }

    /// What the service worker receives, decrypted: the words, the conversation, the message and the badge.
    static func payload(for job: PushJob) -> Data {
        let content = job.content
        var payload: [String: Any] = content.data
        payload["badge"] = content.badge
        if job.kind == .alert {
            payload["title"] = content.title ?? ""
            payload["body"] = content.body ?? ""
        }
        return (try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])) ?? Data()
    }

    /// The `Topic` header: the push service keeps only the newest push of a topic, so a resent push replaces
    /// itself. At most 32 characters of the URL-safe base64 alphabet: the message id if it is one, else its hash.
    static func topic(for content: PushContent) -> String {
        let key = content.messageID ?? "read-\(content.conversationID)"
        let safe = key.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
        }
        if safe && key.utf8.count <= 32 { return key }
        return String(Data(SHA256.hash(data: Data(key.utf8))).base64URLEncodedString().prefix(32))
    }

    public func send(_ job: PushJob) async -> PushOutcome {
        let subscription: (url: URL, p256dh: Data, auth: Data)
        switch WebPushSubscription.parse(job.device.token, allowPrivate: allowPrivate) {
        case .success(let parsed): subscription = parsed
        case .failure(let problem): return .removeDevice(reason: "not a usable subscription: \(problem.description)")
        }
        if !allowPrivate, let host = subscription.url.host, let reason = await PublicHost.problemResolving(host) {
            return .removeDevice(reason: "endpoint \(reason)")
        }
        let plaintext = Self.payload(for: job)
        guard plaintext.count <= Self.maxPayload else { return .drop(reason: "payload of \(plaintext.count) bytes is over 4 KB") }
        do {
            let body = try WebPushEncryption.encrypt(plaintext, p256dh: subscription.p256dh, auth: subscription.auth)
            let ttl = max(0, Int(job.createdAt.addingTimeInterval(maxAge.seconds).timeIntervalSinceNow))
            let answer = try await http.send(
                .POST, subscription.url.absoluteString,
                headers: [
                    ("authorization", try await vapid.authorization(for: subscription.url)),
                    ("content-encoding", "aes128gcm"),
                    ("content-type", "application/octet-stream"),
                    ("ttl", String(ttl)),
                    ("urgency", job.kind == .alert ? "high" : "normal"),
                    ("topic", Self.topic(for: job.content)),
                ],
                body: body)
            return Self.outcome(answer)
        } catch let error as WebPushEncryption.KeyFailure {
            return .removeDevice(reason: "the subscription's keys cannot be used: \(error)")
        } catch {
            return .network(error)
        }
    }

    /// What an answer means (RFC 8030, section 5 and 8).
    static func outcome(_ answer: PushHTTP.Answer) -> PushOutcome {
        switch answer.status.code {
        case 200..<300: return .sent(ticket: nil)
        case 404, 410: return .removeDevice(reason: "the subscription is gone (HTTP \(answer.status.code))")
        case 413: return .drop(reason: "payload too large (HTTP 413)")
        default: return answer.transient ?? .drop(reason: "HTTP \(answer.status.code)")
        }
    }
}
