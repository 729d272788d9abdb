import Foundation
import HeraldTestSupport
import Hummingbird
import HummingbirdHTTP2
import HummingbirdTLS
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOSSL
import ServiceLifecycle

/// A self-signed certificate for `127.0.0.1`, `localhost` and `push.invalid` (a name no resolver knows), made by openssl for one test, with its key.
struct TestCertificate {
    let folder: URL
    var certificatePath: String { folder.appendingPathComponent("cert.pem").path }
    var keyPath: String { folder.appendingPathComponent("key.pem").path }

    static func make() async throws -> TestCertificate {
        let folder = try makeTemporaryFolder("herald-cert")
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
             "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,DNS:push.invalid,IP:127.0.0.1",
             "-keyout", folder.appendingPathComponent("key.pem").path,
             "-out", folder.appendingPathComponent("cert.pem").path])
        guard result.status == 0 else { throw TestFailure("openssl failed: \(result.stderr)") }
        return TestCertificate(folder: folder)
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }
}

/// One request a fake push service received.
struct RecordedRequest: Sendable {
    var method: String
    var path: String
    /// The host the request named (HTTP/2's `:authority`).
    var authority: String? = nil
    var headers: [String: String]
    var body: Data
    /// The body of the answer it got, once answered.
    var answer: String?
    /// When the fake received it.
    var receivedAt = ContinuousClock.now

    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
    var jsonArray: [[String: Any]]? { (try? JSONSerialization.jsonObject(with: body)) as? [[String: Any]] }
    /// The message an APNs push is about (its `messageId`, beside `aps`).
    var messageID: String? { json?["messageId"] as? String }
    var text: String { String(decoding: body, as: UTF8.self) }
    /// Method, path and what the push is about, for a failure message.
    var summary: String {
        "\(method) \(path) \(headers["apns-collapse-id"] ?? headers["apns-push-type"] ?? "")"
    }
}

/// What a fake push service answers.
struct FakeAnswer: Sendable {
    var status: Int
    var headers: [String: String] = [:]
    var body: String = "{}"
    /// Hold the answer until ``FakePushService/release()``: a request in flight.
    var hold = false
    /// Answer (as given) only after this long: a slow service.
    var delay: Duration = .zero
}

/// APNs, FCM (with Google's OAuth token endpoint) and Expo, as one local HTTPS server that speaks HTTP/2 only
/// (ALPN `h2`, as APNs does): it records every request and answers as `respond` says (by default, as the real
/// services answer a good request).
final class FakePushService: Sendable {
    let port: Int
    private let recorded: NIOLockedValueBox<[RecordedRequest]>
    private let responder: NIOLockedValueBox<@Sendable (RecordedRequest) -> FakeAnswer?>
    private let released: NIOLockedValueBox<Bool>

    private init(
        port: Int, recorded: NIOLockedValueBox<[RecordedRequest]>,
        responder: NIOLockedValueBox<@Sendable (RecordedRequest) -> FakeAnswer?>, released: NIOLockedValueBox<Bool>
    ) {
        self.port = port
        self.recorded = recorded
        self.responder = responder
        self.released = released
    }

    /// Lets held answers go (with a 500: the sender has long gone).
    func release() { released.withLockedValue { $0 = true } }

    var url: String { "https://127.0.0.1:\(port)" }
    var requests: [RecordedRequest] { recorded.withLockedValue { $0 } }

    func requests(to prefix: String) -> [RecordedRequest] {
        requests.filter { $0.path.hasPrefix(prefix) }
    }

    /// Answers requests with `answer` where it returns one, else as by default.
    func respond(_ answer: @escaping @Sendable (RecordedRequest) -> FakeAnswer?) {
        responder.withLockedValue { $0 = answer }
    }

    /// Waits (up to `timeout`) until `condition` holds of the requests so far.
    @discardableResult
    func wait(
        timeout: Duration = .seconds(60), _ what: String, until condition: ([RecordedRequest]) -> Bool
    ) async throws -> [RecordedRequest] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let requests = requests
            if condition(requests) { return requests }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("the fake push service never saw \(what); it saw \(requests.map(\.summary))")
    }

    static func defaultAnswer(_ request: RecordedRequest) -> FakeAnswer {
        if request.path.hasPrefix("/3/device/") {
            return FakeAnswer(status: 200, headers: ["apns-id": request.headers["apns-id"] ?? ""], body: "")
        }
        if request.path == "/token" {
            return FakeAnswer(status: 200, body: #"{"access_token":"access-\#(UUID().uuidString)","expires_in":3599,"token_type":"Bearer"}"#)
        }
        if request.path.hasSuffix("/messages:send") {
            return FakeAnswer(status: 200, body: #"{"name":"projects/herald-test/messages/1"}"#)
        }
        if request.path == "/--/api/v2/push/send" {
            return FakeAnswer(status: 200, body: #"{"data":[{"status":"ok","id":"ticket-\#(UUID().uuidString)"}]}"#)
        }
        if request.path.hasPrefix("/push/") {
            return FakeAnswer(status: 201, headers: ["location": "/message/\(UUID().uuidString)"], body: "")
        }
        if request.path == "/--/api/v2/push/getReceipts" {
            return FakeAnswer(status: 200, body: #"{"data":{}}"#)
        }
        return FakeAnswer(status: 404, body: #"{"reason":"not a fake route"}"#)
    }

    /// Runs the service with `certificate` for the length of `body`.
    static func run<T: Sendable>(
        certificate: TestCertificate, _ body: (FakePushService) async throws -> T
    ) async throws -> T {
        let recorded = NIOLockedValueBox<[RecordedRequest]>([])
        let responder = NIOLockedValueBox<@Sendable (RecordedRequest) -> FakeAnswer?>({ _ in nil })
        let released = NIOLockedValueBox(false)
        let router = Router()
        router.add(middleware: Recorder(recorded: recorded, responder: responder, released: released))
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate.certificatePath).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: certificate.keyPath, format: .pem)))
        tls.applicationProtocols = ["h2"]
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        let logger = Logger(label: "fake-push") { _ in SwiftLogNoOpLogHandler() }
        let app = Application(
            router: router,
            server: try .tls(.plaintextHTTP2(), tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { portSink.yield($0.localAddress?.port ?? 0) },
            logger: logger)
        let services = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TestFailure("the fake push service did not start") }
            let service = FakePushService(port: port, recorded: recorded, responder: responder, released: released)
            let result: Result<T, any Error>
            do {
                result = .success(try await body(service))
            } catch {
                result = .failure(error)
            }
            service.release()
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return try result.get()
        }
    }

    private struct Recorder: RouterMiddleware {
        typealias Context = BasicRequestContext
        let recorded: NIOLockedValueBox<[RecordedRequest]>
        let responder: NIOLockedValueBox<@Sendable (RecordedRequest) -> FakeAnswer?>
        let released: NIOLockedValueBox<Bool>

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let record = RecordedRequest(
                method: request.method.rawValue, path: request.uri.path, authority: request.head.authority, headers: headers,
                body: Data(body.readableBytesView))
            let index = recorded.withLockedValue { recorded in
                recorded.append(record)
                return recorded.count - 1
            }
            var answer = responder.withLockedValue { $0 }(record) ?? FakePushService.defaultAnswer(record)
            if answer.hold {
                let deadline = ContinuousClock.now + .seconds(60)
                while !released.withLockedValue({ $0 }), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                answer = FakeAnswer(status: 500, body: #"{"reason":"InternalServerError"}"#)
            }
            if answer.delay > .zero { try await Task.sleep(for: answer.delay) }
            recorded.withLockedValue { $0[index].answer = answer.body }
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            for (name, value) in answer.headers { if let name = HTTPField.Name(name) { fields[name] = value } }
            return Response(
                status: .init(code: answer.status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
    }
}
