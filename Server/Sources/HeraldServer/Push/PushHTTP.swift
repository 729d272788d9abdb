import AsyncHTTPClient
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOSSL

/// The HTTP clients every push provider sends with: HTTP/2 where the service offers it (APNs requires it), the
/// system's trusted certificates plus those of `HERALD_PUSH_CA_FILE`, a deadline on every request, and redirects
/// never followed (a push service has no reason to send one, and following it would send the push, and what is
/// learnt from the answer, wherever the redirect points).
///
/// ``send(_:_:headers:body:)`` is for the services the operator configured (APNs, FCM, Expo); ``guarded`` is for
/// URLs that users gave (Web Push endpoints): it connects only to addresses its ``AddressPolicy`` allows.
public final class PushHTTP: Sendable {
    let client: HTTPClient
    /// For endpoints that users registered.
    let guarded: GuardedHTTP
    /// How long one request may take, from connecting to the last byte of the answer.
    let timeout: TimeAmount

    /// The largest answer read from a push service.
    static let maxResponseBytes = 64 * 1024

    /// A client trusting the system's certificates and those in `caFile` (PEM), if given; `allowPrivate` lets
    /// users' endpoints be on this machine or a private network (`HERALD_WEBPUSH_ALLOW_PRIVATE=1`, for tests).
    ///
    /// - Throws: ``ConfigurationError`` when `caFile` holds no certificate that can be read.
    public convenience init(caFile: String?, allowPrivate: Bool = false, timeout: Duration = .seconds(30)) throws {
        try self.init(caFile: caFile, policy: AddressPolicy(allowPrivate: allowPrivate), timeout: timeout)
    }

    init(
        caFile: String?, policy: AddressPolicy, timeout: Duration = .seconds(30),
        resolver: @escaping GuardedHTTP.Resolver = GuardedHTTP.systemResolver
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            do {
                let certificates = try NIOSSLCertificate.fromPEMFile(caFile)
                guard !certificates.isEmpty else { throw ConfigurationError("no certificate in it") }
                tls.additionalTrustRoots = [.certificates(certificates)]
            } catch {
                throw ConfigurationError("HERALD_PUSH_CA_FILE \(caFile) cannot be used: \(error)")
            }
        }
        let configuration = Self.configuration(tls: tls)
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.timeout = .nanoseconds(Int64(timeout.seconds * 1e9))
        guarded = GuardedHTTP(policy: policy, configuration: configuration, timeout: self.timeout, resolver: resolver)
    }

    /// HTTP/2 where offered, bounded connects and reads, and no redirects.
    static func configuration(tls: TLSConfiguration) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(30))
        return configuration
    }

    /// An answer from a push service.
    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        var body: Data

        /// The body's JSON object, if it is one.
        var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        }

        /// `Retry-After` as a duration: seconds, or an HTTP date.
        var retryAfter: Duration? {
            guard let value = headers.first(name: "retry-after")?.trimmingCharacters(in: .whitespaces) else { return nil }
            if let seconds = Int(value), seconds >= 0 { return .seconds(min(seconds, 86_400)) }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            guard let date = formatter.date(from: value) else { return nil }
            return .seconds(min(max(0, Int(date.timeIntervalSinceNow.rounded(.up))), 86_400))
        }

        /// The outcome for the answers every service shares: a redirect is refused (it is never followed, and says
        /// nothing about the device), 429 and 5xx are tried again.
        var shared: PushOutcome? {
            if (300..<400).contains(status.code) {
                return .redirected(status: Int(status.code), location: headers.first(name: "location"))
            }
            if status == .tooManyRequests || status.code >= 500 {
                return .retry(after: retryAfter, reason: "HTTP \(status.code)")
            }
            return nil
        }
    }

    /// Sends a request to a service the operator configured and reads its answer (up to ``maxResponseBytes``).
    func send(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)], body: Data
    ) async throws -> Answer {
        try await Self.execute(on: client, method, url, headers: headers, body: body, timeout: timeout)
    }

    /// Sends a request on `client` and reads its answer: the first ``maxResponseBytes`` of its body, the rest left
    /// unread (a long answer is no failure: a webhook receiver's 2xx with a large page is a delivery).
    static func execute(
        on client: HTTPClient, _ method: HTTPMethod, _ url: String, headers: [(String, String)], body: Data,
        timeout: TimeAmount
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: timeout)
        let start = try await response.body.prefix(bytes: maxResponseBytes)
        return Answer(status: response.status, headers: response.headers, body: Data(start.readableBytesView))
    }

    /// Closes its connections.
    func shutdown() async {
        await guarded.shutdown()
        try? await client.shutdown()
    }
}

extension PushOutcome {
    /// A request that never got an answer (connection refused or reset, timed out, TLS failed): tried again.
    static func network(_ error: any Error) -> PushOutcome {
        .retry(after: nil, reason: "network: \(error)")
    }
}

extension HTTPClientResponse.Body {
    /// Its first `limit` bytes; what follows is not read (the connection is then closed rather than reused).
    func prefix(bytes limit: Int) async throws -> ByteBuffer {
        var collected = ByteBuffer()
        for try await chunk in self {
            let room = limit - collected.readableBytes
            guard room > 0 else { break }
            var part = chunk
            if part.readableBytes > room, let slice = part.readSlice(length: room) { part = slice }
            collected.writeBuffer(&part)
        }
        return collected
    }
}
