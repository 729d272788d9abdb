import AsyncHTTPClient
import Foundation
import HeraldTransport
import HummingbirdWSClient
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

extension ClientTransport {
    /// HTTP over AsyncHTTPClient (`httpClient`: the process-wide shared one by default) and the stream over
    /// hummingbird-websocket's client, on SwiftNIO: what Herald's Linux clients use (`herald chat`, a backend).
    public static func nio(httpClient: HTTPClient = .shared, logger: Logger = Logger(label: "herald-client")) -> ClientTransport {
        ClientTransport(http: AsyncHTTPClientTransport(httpClient: httpClient), stream: WebSocketClientTransport(logger: logger))
    }
}

/// The API's requests over AsyncHTTPClient.
public struct AsyncHTTPClientTransport: HTTPTransport {
    private let http: HTTPClient

    /// A transport on `httpClient` (the process-wide shared one by default).
    public init(httpClient: HTTPClient = .shared) {
        http = httpClient
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        do {
            let response = try await http.execute(outgoing, timeout: TimeAmount(request.timeout))
            let bytes = try await response.body.collect(upTo: TransportResponse.maximumBodySize)
            return TransportResponse(status: Int(response.status.code), body: Data(bytes.readableBytesView))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw TransportError(reason: NIOErrorReason.of(error))
        }
    }
}

/// The stream over hummingbird-websocket's client.
public struct WebSocketClientTransport: StreamTransport {
    private let logger: Logger

    /// A transport logging to `logger`.
    public init(logger: Logger = Logger(label: "herald-client")) {
        self.logger = logger
    }

    public func connect(
        to url: URL, maximumMessageSize: Int,
        session: @escaping @Sendable (_ inbound: AsyncThrowingStream<String, any Error>, _ outbound: any StreamWriter) async throws -> Void
    ) async throws -> StreamClosing? {
        let close: WebSocketCloseFrame?
        do {
            close = try await WebSocketClient.connect(
                url: url.absoluteString, configuration: .init(maxFrameSize: maximumMessageSize), logger: logger
            ) { inbound, outbound, _ in
                let (messages, sink) = AsyncThrowingStream<String, any Error>.makeStream()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        do {
                            for try await message in inbound.messages(maxSize: maximumMessageSize) {
                                if case .text(let text) = message { sink.yield(text) }
                            }
                            sink.finish()
                        } catch {
                            sink.finish(throwing: error)
                        }
                    }
                    defer { group.cancelAll() }
                    try await session(messages, Writer(outbound: outbound))
                }
            }
        } catch let error as IOError {
            throw TransportError(reason: NIOErrorReason.of(error))
        } catch let error as NIOConnectionError {
            throw TransportError(reason: NIOErrorReason.of(error))
        } catch ChannelError.connectTimeout {
            throw TransportError(reason: "timed out")
        }
        return close.map { StreamClosing(code: Int(UInt16(webSocketErrorCode: $0.closeCode)), reason: $0.reason) }
    }

    private struct Writer: StreamWriter {
        let outbound: WebSocketOutboundWriter

        func write(_ text: String) async throws {
            try await outbound.write(.text(text))
        }
    }
}

/// NIO's errors in the words people read: "connection refused", "timed out".
enum NIOErrorReason {
    static func of(_ error: any Error) -> String {
        switch error {
        case let io as IOError:
            return String(cString: strerror(io.errnoCode)).lowercased()
        case let connection as NIOConnectionError:
            if let first = connection.connectionErrors.first { return of(first.error) }
            if connection.dnsAError != nil || connection.dnsAAAAError != nil { return "the host name cannot be resolved" }
            return "no address to connect to"
        case ChannelError.connectTimeout:
            return "timed out"
        case let http as HTTPClientError where http == .connectTimeout || http == .deadlineExceeded || http == .readTimeout:
            return "timed out"
        case let http as HTTPClientError:
            return http.description
        default:
            return String(describing: error)
        }
    }
}
