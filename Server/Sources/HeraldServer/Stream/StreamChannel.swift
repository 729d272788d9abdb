import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// A connection of the HTTP server: HTTP/1.1 for the API, or, after a WebSocket upgrade of `/v1/stream`, a stream.
///
/// A stream lives in its channel's pipeline (``StreamHandler``), not in a task: once the upgrade is done, the
/// connection's task ends, and the stream costs its handler's state and NIO's buffers. The HTTP side is Hummingbird's,
/// on the same port.
struct StreamUpgradeChannel: ServerChildChannel, HTTPChannelHandler {
    /// What a connection became.
    enum Upgrade: Sendable {
        /// Plain HTTP.
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// An upgrade request that was not for a stream: answered 400.
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// A stream, running in the pipeline.
        case stream
    }

    struct Value: ServerChildChannelValue {
        let upgrade: EventLoopFuture<Upgrade>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    private let http1: HTTP1Channel.Configuration
    private let maxFrameSize: Int
    private let streams: StreamController

    /// `responder` answers the API; `streams` decides and opens upgrades; a client frame (fragment) may be at most
    /// `maxFrameSize` bytes.
    init(
        responder: @escaping HTTPChannelHandler.Responder, http1: HTTP1Channel.Configuration, maxFrameSize: Int,
        streams: StreamController
    ) {
        self.responder = Self.refusingLateUpgrades(responder)
        self.http1 = http1
        self.maxFrameSize = maxFrameSize
        self.streams = streams
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let attempted = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            let upgrader = NIOTypedWebSocketServerUpgrader<Upgrade>(
                maxFrameSize: maxFrameSize,
                shouldUpgrade: { [streams] channel, head in
                    attempted.value = true
                    return channel.eventLoop.makeSucceededFuture(streams.request(head) == nil ? nil : HTTPHeaders())
                },
                upgradePipelineHandler: { [streams] channel, head in
                    channel.eventLoop.makeCompletedFuture {
                        guard let request = streams.request(head) else { throw ChannelError.inappropriateOperationForState }
                        try streams.open(request, on: channel, logger: logger)
                        return .stream
                    }
                }
            )
            let upgrades = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { [http1] channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try pipeline.addHandlers(http1.additionalChannelHandlers())
                        try pipeline.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        return attempted.value ? .refused(http) : .http(http)
                    }
                }
            )
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Upgrade>(upgradeConfiguration: upgrades)
            configuration.enablePipelining = false  // NIOAsyncChannel takes one request at a time
            configuration.enableErrorHandling = false  // Hummingbird and `HTTPRequestGuard` answer bad requests
            configuration.enableResponseHeaderValidation = false  // HTTPTypes validates
            configuration.decoderConfiguration.maxHeaderFieldSize = http1.httpDecoder.maxHeaderFieldSize
            configuration.decoderConfiguration.maxHeaderListSize = http1.httpDecoder.maxHeaderListSize
            configuration.decoderConfiguration.maxHeaderFieldCount = http1.httpDecoder.maxHeaderFieldCount
            let upgrade = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            return Value(upgrade: upgrade, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgrade.get() {
            case .http(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .refused(let http):
                try await http.executeThenClose { _, outbound in
                    let head = HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])
                    try await outbound.write(contentsOf: [.head(head), .end(nil)])
                }
            case .stream:
                // The stream runs in the pipeline: this task ends here.
                break
            }
        } catch let error as ChannelError where error == .inputClosed {
            logger.trace("connection closed before its first request")
        } catch {
            logger.debug("connection ended", metadata: ["error": "\(error)"])
        }
    }

    /// NIO upgrades only a connection's first request: a later request asking for a WebSocket is told to come again
    /// on a new connection (307 to itself, and this one closed).
    private static func refusingLateUpgrades(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        struct ClosingAfterRedirect: Error {}
        return { request, writer, channel in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                try await responder(request, writer, channel)
                return
            }
            let target = request.uri.query.map { "\(request.uri.path)?\($0)" } ?? request.uri.path
            let head = HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: target])
            try await writer.writeResponse(head)
            throw ClosingAfterRedirect()
        }
    }
}
