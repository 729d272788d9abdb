// Foundation's URLSession, on Apple platforms (where it is the system's) and on Linux (swift-corelibs-foundation's
// FoundationNetworking, over libcurl). APIs used, available since iOS 15 / macOS 12 and checked against Apple's
// documentation: URLSession(configuration:), URLSessionConfiguration.ephemeral (timeoutIntervalForRequest,
// httpCookieStorage, urlCache), URLSession.data(for:) (async), URLRequest (httpMethod, httpBody, timeoutInterval,
// setValue(_:forHTTPHeaderField:)), HTTPURLResponse.statusCode, URLError.Code, URLSession.webSocketTask(with:),
// URLSessionWebSocketTask (resume(), maximumMessageSize, send(_:) and receive() (async), cancel(with:reason:),
// closeCode, closeReason), URLSessionWebSocketTask.Message (.string, .data), URLSessionWebSocketTask.CloseCode.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldTransport

extension ClientTransport {
    /// HTTP and the stream over URLSession: what an app on Apple platforms uses (the default there).
    public static var urlSession: ClientTransport {
        ClientTransport(http: URLSessionHTTPTransport(), stream: URLSessionStreamTransport())
    }
}

/// A transport's own session: no cookies, no cache; its tasks finish and it is let go with the transport.
private final class OwnedSession: Sendable {
    let session: URLSession

    init(_ configuration: URLSessionConfiguration) {
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }
}

/// The API's requests over URLSession. One session per transport, ephemeral: no cookies, no cache, nothing on disk.
public final class URLSessionHTTPTransport: HTTPTransport {
    private let owned: OwnedSession
    private var session: URLSession { owned.session }

    /// A transport with a session of its own (`configuration`: ephemeral by default).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        owned = OwnedSession(configuration)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.timeoutInterval = Double(request.timeout.components.seconds)
            + Double(request.timeout.components.attoseconds) / 1e18
        for header in request.headers { urlRequest.setValue(header.value, forHTTPHeaderField: header.name) }
        urlRequest.httpBody = request.body
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw TransportError(reason: Self.reason(error))
        }
        guard let http = response as? HTTPURLResponse else { throw TransportError(reason: "not an HTTP answer") }
        guard data.count <= TransportResponse.maximumBodySize else {
            throw TransportError(reason: "an answer over \(TransportResponse.maximumBodySize) bytes")
        }
        return TransportResponse(status: http.statusCode, body: data)
    }

    /// A URL error for people, in the words the other transports use. Never the error's whole description: it
    /// carries the address, and the stream's address carries the token. (swift-corelibs-foundation throws its URL
    /// errors as NSErrors of their domain; Apple's as URLError: both are read by domain and code.)
    static func reason(_ error: any Error) -> String {
        let error = error as NSError
        guard error.domain == NSURLErrorDomain else { return "an error of the URL loading system (\(error.domain) \(error.code))" }
        switch error.code {
        case URLError.Code.cannotConnectToHost.rawValue: return "connection refused"
        case URLError.Code.timedOut.rawValue: return "timed out"
        case URLError.Code.cannotFindHost.rawValue, URLError.Code.dnsLookupFailed.rawValue: return "the host name cannot be resolved"
        case URLError.Code.notConnectedToInternet.rawValue: return "no network"
        case URLError.Code.networkConnectionLost.rawValue: return "connection lost"
        case URLError.Code.secureConnectionFailed.rawValue, URLError.Code.serverCertificateUntrusted.rawValue,
             URLError.Code.serverCertificateHasBadDate.rawValue, URLError.Code.serverCertificateNotYetValid.rawValue,
             URLError.Code.serverCertificateHasUnknownRoot.rawValue:
            return "the TLS connection failed (\(error.localizedDescription))"
        default: return error.localizedDescription
        }
    }
}

/// The stream over `URLSessionWebSocketTask`.
///
/// On Linux it needs a libcurl built with WebSocket support, which Debian 12's and Ubuntu 24.04's are not
/// (FoundationNetworking then says "WebSockets not supported by libcurl"); ``isSupported`` says whether this system's
/// is, and Herald's Linux clients use `HeraldNIOTransport` for the stream.
public final class URLSessionStreamTransport: StreamTransport {
    private let owned: OwnedSession
    private var session: URLSession { owned.session }

    /// A transport with a session of its own (`configuration`: ephemeral by default).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        owned = OwnedSession(configuration)
    }

    /// Whether URLSession carries WebSockets on this system: always on Apple platforms; on Linux only with a libcurl
    /// built with them.
    public static var isSupported: Bool {
        #if canImport(FoundationNetworking)
        return LibcurlWebSockets.available
        #else
        return true
        #endif
    }

    public func connect(
        to url: URL, maximumMessageSize: Int,
        session run: @escaping @Sendable (_ inbound: AsyncThrowingStream<String, any Error>, _ outbound: any StreamWriter) async throws -> Void
    ) async throws -> StreamClosing? {
        let task = session.webSocketTask(with: url)
        task.maximumMessageSize = maximumMessageSize
        task.resume()
        let (inbound, sink) = AsyncThrowingStream<String, any Error>.makeStream()
        let closed = ServerClosing()
        // `receive()` does not end when its task is cancelled; cancelling the WebSocket task ends it.
        defer { task.cancel(with: .normalClosure, reason: nil) }
        try await withTaskCancellationHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        while true {
                            if case .string(let text) = try await task.receive() { sink.yield(text) }
                        }
                    } catch {
                        if let closing = Self.closing(of: task) {
                            closed.value = closing // the server closed it: the messages end
                            sink.finish()
                        } else {
                            sink.finish(throwing: TransportError(reason: URLSessionHTTPTransport.reason(error)))
                        }
                    }
                }
                defer {
                    task.cancel(with: .normalClosure, reason: nil)
                    group.cancelAll()
                }
                try await run(inbound, Writer(task: task))
            }
        } onCancel: {
            task.cancel(with: .goingAway, reason: nil)
        }
        return closed.value
    }

    /// The server's close, once it closed the connection.
    private static func closing(of task: URLSessionWebSocketTask) -> StreamClosing? {
        guard task.closeCode != .invalid else { return nil }
        return StreamClosing(code: task.closeCode.rawValue, reason: task.closeReason.map { String(decoding: $0, as: UTF8.self) })
    }

    /// The server's close, as the receiving task saw it, for the connecting one.
    private final class ServerClosing: @unchecked Sendable {
        private let lock = NSLock()
        private var closing: StreamClosing?

        var value: StreamClosing? {
            get { lock.withLock { closing } }
            set { lock.withLock { closing = newValue } }
        }
    }

    private struct Writer: StreamWriter {
        let task: URLSessionWebSocketTask

        func write(_ text: String) async throws {
            do {
                try await task.send(.string(text))
            } catch {
                // As the receiving side says it: in words, never with the address (and its token).
                throw TransportError(reason: URLSessionHTTPTransport.reason(error))
            }
        }
    }
}

#if canImport(FoundationNetworking)
/// Whether this system's libcurl carries WebSockets for FoundationNetworking, found once by asking it to open one
/// (to a closed port on loopback: the answer is "not supported" at once, or a connection failure).
enum LibcurlWebSockets {
    static let available: Bool = {
        let done = DispatchSemaphore(value: 0)
        let outcome = Outcome()
        let session = URLSession(configuration: .ephemeral)
        let task = session.webSocketTask(with: URL(string: "ws://127.0.0.1:9/")!)
        task.resume()
        task.receive { result in
            if case .failure(let error) = result {
                outcome.unsupported = "\(error)".contains("not supported")
            }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
        task.cancel(with: .normalClosure, reason: nil)
        session.invalidateAndCancel()
        return !outcome.unsupported
    }()

    private final class Outcome: @unchecked Sendable {
        var unsupported = false
    }
}
#endif
