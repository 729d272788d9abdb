import Foundation

/// How Herald's Swift clients reach a server: HTTP for the API, a WebSocket for the stream. The clients only speak to
/// these two protocols; `HeraldURLSession` carries them over URLSession (what an app on Apple platforms uses, adding
/// nothing it did not ask for) and `HeraldNIOTransport` over AsyncHTTPClient and SwiftNIO (what a server on Linux
/// uses).
public struct ClientTransport: Sendable {
    /// The API's requests.
    public var http: any HTTPTransport
    /// The live stream.
    public var stream: any StreamTransport

    /// A transport of these two parts.
    public init(http: any HTTPTransport, stream: any StreamTransport) {
        self.http = http
        self.stream = stream
    }
}

/// An HTTP method of Herald's API.
public enum APIMethod: String, Sendable, CustomStringConvertible {
    case GET, POST, PUT, PATCH, DELETE

    public var description: String { rawValue }
}

/// One request, as a transport sends it.
public struct TransportRequest: Sendable {
    /// The method.
    public var method: APIMethod
    /// The whole address.
    public var url: URL
    /// Header fields, in order.
    public var headers: [(name: String, value: String)]
    /// The body, if any.
    public var body: Data?
    /// How long the whole exchange may take.
    public var timeout: Duration

    /// A request of these parts.
    public init(method: APIMethod, url: URL, headers: [(name: String, value: String)] = [], body: Data? = nil, timeout: Duration) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// An answer: its status and body.
public struct TransportResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The body (at most ``maximumBodySize`` bytes).
    public var body: Data

    /// The most of a body a transport reads.
    public static let maximumBodySize = 16 << 20

    /// An answer of these parts.
    public init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }
}

/// No answer came: the server could not be reached, the exchange timed out or was cut. `reason` is for people:
/// "connection refused", "timed out", "the host name cannot be resolved".
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, in a few words.
    public var reason: String

    /// An error saying `reason`.
    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

/// Sends the API's requests.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and reads its answer (its body up to ``TransportResponse/maximumBodySize``).
    ///
    /// - Throws: ``TransportError`` when no answer came; `CancellationError` when the calling task was cancelled.
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// How the server ended a stream.
public struct StreamClosing: Sendable, Hashable {
    /// The WebSocket close code (1000 normal, 1001 going away, 1008 policy: a refused token or a flood, 1011 error).
    public var code: Int
    /// The reason the server gave, if any.
    public var reason: String?

    /// A closing with this code and reason.
    public init(code: Int, reason: String?) {
        self.code = code
        self.reason = reason
    }
}

/// Writes text messages on an open stream.
public protocol StreamWriter: Sendable {
    /// Sends one text message.
    func write(_ text: String) async throws
}

/// Opens the live stream (a WebSocket) and runs a session on it.
public protocol StreamTransport: Sendable {
    /// Connects to `url` and runs `session` with the connection's incoming text messages (binary ones are dropped; a
    /// message over `maximumMessageSize` bytes ends the connection) and a writer. The connection closes when
    /// `session` returns or throws, or when the server closes it (then `inbound` ends). Returns how the server closed
    /// it, if it did.
    ///
    /// - Throws: ``TransportError`` when the connection could not be made; what `session` threw.
    func connect(
        to url: URL, maximumMessageSize: Int,
        session: @escaping @Sendable (_ inbound: AsyncThrowingStream<String, any Error>, _ outbound: any StreamWriter) async throws -> Void
    ) async throws -> StreamClosing?
}
