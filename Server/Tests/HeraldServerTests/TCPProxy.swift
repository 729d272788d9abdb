import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP forwarder on loopback to `target`, that a test can cut (every connection closed, new ones refused) and
/// restore: the network between a node and its database, going away and coming back.
final class TCPProxy: Sendable {
    private let server: Channel
    private let target: Int
    private let state = NIOLockedValueBox((cut: false, open: [Channel]()))

    /// The port it listens on.
    var port: Int { server.localAddress?.port ?? 0 }

    private init(server: Channel, target: Int) {
        self.server = server
        self.target = target
    }

    /// Listens on a free loopback port, forwarding to `target` on loopback.
    static func start(to target: Int) async throws -> TCPProxy {
        let relay = NIOLockedValueBox<TCPProxy?>(nil)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Nothing is read from a client before its forwarding is in place.
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                guard let proxy = relay.withLockedValue({ $0 }) else { return inbound.close() }
                return proxy.accept(inbound)
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let proxy = TCPProxy(server: server, target: target)
        relay.withLockedValue { $0 = proxy }
        return proxy
    }

    private func accept(_ inbound: Channel) -> EventLoopFuture<Void> {
        if state.withLockedValue({ $0.cut }) { return inbound.close() }
        return ClientBootstrap(group: inbound.eventLoop)
            .connect(host: "127.0.0.1", port: target)
            .flatMap { outbound in
                self.state.withLockedValue { $0.open += [inbound, outbound] }
                return inbound.pipeline.addHandler(Forward(to: outbound)).flatMap {
                    outbound.pipeline.addHandler(Forward(to: inbound))
                }.flatMap {
                    inbound.setOption(.autoRead, value: true)
                }
            }
    }

    /// Closes every connection and refuses new ones.
    func cut() {
        let open = state.withLockedValue { state in
            state.cut = true
            defer { state.open = [] }
            return state.open
        }
        for channel in open { channel.close(promise: nil) }
    }

    /// Stops forwarding either way and closes nothing: a network gone silent (a lift, a tunnel), each end's
    /// connection open and nothing arriving.
    func stall() {
        let open = state.withLockedValue { $0.open }
        for channel in open { channel.setOption(.autoRead, value: false).whenComplete { _ in } }
    }

    /// Takes connections again.
    func restore() {
        state.withLockedValue { $0.cut = false }
    }

    func close() async {
        cut()
        try? await server.close()
    }

    /// Writes what one side reads to the other, and closes the other when one closes.
    private final class Forward: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let peer: Channel

        init(to peer: Channel) { self.peer = peer }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            peer.writeAndFlush(unwrapInboundIn(data), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            peer.close(promise: nil)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
