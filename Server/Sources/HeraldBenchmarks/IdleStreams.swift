import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// Many stream clients from one process, each a NIO channel and nothing more (no task): it upgrades, counts `ready`
/// and `message` frames, and answers pings. Light enough that a hundred thousand fit beside the server.
///
/// Loopback has about 28,000 ephemeral ports per source address, so the clients spread over source addresses
/// 127.0.0.2, 127.0.0.3, … (every 127/8 address is local on Linux), 25,000 each.
final class IdleStreams: Sendable {
    /// What the clients received, all together.
    struct Tally: Sendable {
        var ready = 0
        var messages = 0
        var closed = 0
    }

    static let perSourceAddress = 25_000
    /// Linux's `IP_BIND_ADDRESS_NO_PORT`: a socket bound to a source address gets its port at `connect`, for the
    /// whole address and port pair, rather than at `bind` by a search of every port in use (which makes tens of
    /// thousands of connections from one address slower and slower).
    static let bindWithoutPort = ChannelOptions.Types.SocketOption(level: .ip, name: NIOBSDSocket.Option(rawValue: 24))

    private let tally = NIOLockedValueBox(Tally())
    private let channels = NIOLockedValueBox<[any Channel]>([])
    private let port: Int

    /// Clients of the server on `port` of 127.0.0.1.
    init(port: Int) {
        self.port = port
    }

    /// What was received so far.
    var received: Tally { tally.withLockedValue { $0 } }

    /// Opens a stream with each of `tokens`, `parallel` connecting at a time; returns once each is connected (not
    /// yet `ready`: see ``waitUntil(timeout:_:)``).
    func open(_ tokens: [String], parallel: Int = 256) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let offset = channels.withLockedValue { $0.count }
        try await withThrowingTaskGroup(of: Void.self) { connecting in
            for (index, token) in tokens.enumerated() {
                if index >= parallel { try await connecting.next() }
                let source = try SocketAddress(ipAddress: "127.0.0.\(2 + (offset + index) / Self.perSourceAddress)", port: 0)
                connecting.addTask { [port, tally, channels] in
                    let upgraded = try await ClientBootstrap(group: group)
                        .channelOption(Self.bindWithoutPort, value: 1)
                        .bind(to: source)
                        .connect(host: "127.0.0.1", port: port) { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try Self.configure(channel, token: token, port: port, tally: tally)
                            }
                        }
                    guard let channel = try await upgraded.get() else { throw BenchmarkError("a stream was not upgraded") }
                    channels.withLockedValue { $0.append(channel) }
                }
            }
            try await connecting.waitForAll()
        }
    }

    /// Waits until `condition` holds for what was received, checking every 50 ms, for at most `timeout`.
    func waitUntil(timeout: Duration, _ condition: @Sendable (Tally) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(received) {
            guard ContinuousClock.now < deadline else {
                let tally = received
                throw BenchmarkError("timed out after \(timeout): \(tally.ready) ready, \(tally.messages) messages, \(tally.closed) closed")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Closes every stream (a close frame, then the connection) and waits until all are closed.
    func closeAll() async throws {
        let open = channels.withLockedValue { channels in
            defer { channels = [] }
            return channels
        }
        let closedBefore = received.closed
        for channel in open {
            var code = channel.allocator.buffer(capacity: 2)
            code.write(webSocketErrorCode: .normalClosure)
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: code), promise: nil)
        }
        try await waitUntil(timeout: .seconds(120)) { $0.closed - closedBefore >= open.count }
        tally.withLockedValue { $0 = Tally(ready: 0, messages: 0, closed: 0) }
    }

    private static func configure(
        _ channel: any Channel, token: String, port: Int, tally: NIOLockedValueBox<Tally>
    ) throws -> EventLoopFuture<(any Channel)?> {
        let upgrader = NIOTypedWebSocketClientUpgrader<(any Channel)?>(maxFrameSize: 1 << 20) { channel, _ in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(IdleStreamHandler(tally: tally))
                return channel
            }
        }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "127.0.0.1:\(port)")
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/v1/stream?token=\(token)", headers: headers)
        var configuration = NIOUpgradableHTTPClientPipelineConfiguration(
            upgradeConfiguration: NIOTypedHTTPClientUpgradeConfiguration(
                upgradeRequestHead: head, upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(nil) }))
        // A frame may come in the same read as the 101.
        configuration.leftOverBytesStrategy = .forwardBytes
        return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: configuration)
    }
}

/// One idle client: counts what it receives, answers pings, and goes when the server closes.
private final class IdleStreamHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let tally: NIOLockedValueBox<IdleStreams.Tally>

    init(tally: NIOLockedValueBox<IdleStreams.Tally>) {
        self.tally = tally
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            let text = String(buffer: frame.data)
            if text.contains(#""type":"ready""#) {
                tally.withLockedValue { $0.ready += 1 }
            } else if text.contains(#""type":"message""#) {
                tally.withLockedValue { $0.messages += 1 }
            }
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.data)), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        tally.withLockedValue { $0.closed += 1 }
        context.fireChannelInactive()
    }
}
