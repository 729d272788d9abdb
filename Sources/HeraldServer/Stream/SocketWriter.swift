import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// Writes a stream's frames straight to its WebSocket channel: a batch of frames is one trip to the channel's event
/// loop and one flush, however many frames it holds.
///
/// One batch at a time is on its way to the event loop: ``write(_:)-([OutboundFrame])`` hands a batch over and
/// returns, and the next call first waits until the previous batch was written and the channel can take more. So the
/// writer never waits for the loop while there is nothing else to send, and what arrives meanwhile goes out as the
/// next, larger batch.
///
/// WebSocket's own traffic (pings, pongs, the closing handshake) still goes through Hummingbird's handler on the
/// same channel; frames are whole, so the two never mix inside a frame.
struct SocketWriter: Sendable {
    /// The upgraded connection.
    let channel: any Channel
    private let watcher: NIOLoopBound<StreamConnectionHandler>
    private var previous: EventLoopFuture<Void>?
    /// Whether `previous` may still be pending; cleared on the loop when a batch is taken at once, so the usual
    /// case costs the writer no trip to the loop to learn it.
    private let inFlight = NIOLockedValueBox(false)

    private init(channel: any Channel, watcher: NIOLoopBound<StreamConnectionHandler>) {
        self.channel = channel
        self.watcher = watcher
    }

    /// A writer for the upgraded `channel`, which it watches for writability and keeps alive: a ping every
    /// `pingEvery`, and the connection closed when nothing at all came back a period after a ping.
    static func attach(to channel: any Channel, pingEvery: Duration = .seconds(30)) async throws -> SocketWriter {
        try await channel.eventLoop.submit {
            let handler = StreamConnectionHandler(pingEvery: TimeAmount(pingEvery))
            try channel.pipeline.syncOperations.addHandler(handler, position: .first)
            return SocketWriter(channel: channel, watcher: NIOLoopBound(handler, eventLoop: channel.eventLoop))
        }.get()
    }

    /// Writes `frames` in order with one flush, once the previous batch is written and the channel's buffer is under
    /// NIO's high-water mark (or has drained below the low-water mark): a client that reads slowly makes its writer
    /// wait and its outbox fill. A wait ends when the connection closes (see ``close()``), not when the task is
    /// cancelled: the closing handshake may still be going out.
    mutating func write(_ frames: [OutboundFrame]) async throws {
        guard !frames.isEmpty else { return }
        try await drain()
        let accepted = channel.eventLoop.makePromise(of: Void.self)
        inFlight.withLockedValue { $0 = true }
        if channel.eventLoop.inEventLoop {
            write(frames, accepted: accepted)
        } else {
            channel.eventLoop.execute { [self] in write(frames, accepted: accepted) }
        }
        previous = accepted.futureResult
    }

    /// Writes one frame, flushed.
    mutating func write(_ frame: OutboundFrame) async throws {
        try await write([frame])
    }

    /// Waits until the last batch is written and the channel can take more.
    mutating func drain() async throws {
        guard let previous else { return }
        self.previous = nil
        guard inFlight.withLockedValue({ $0 }) else { return }
        try await previous.get()
    }

    /// Closes the connection at once, without the closing handshake.
    func close() {
        channel.close(promise: nil)
    }

    /// Reads nothing more from the client (see ``ClosingInput``).
    func stopReading() {
        ClosingInput.stopReading(channel)
    }

    /// Closes the connection after `delay` if it is still open then (for a client that stopped reading, whose writer
    /// waits for the socket), calling `onClose` first; nothing if it closed before.
    func close(after delay: Duration, _ onClose: @escaping @Sendable () -> Void) {
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(delay)) { [channel] in
            guard channel.isActive else { return }
            onClose()
            channel.close(promise: nil)
        }
        channel.closeFuture.whenComplete { _ in timer.cancel() }
    }

    /// On the event loop.
    private func write(_ frames: [OutboundFrame], accepted: EventLoopPromise<Void>) {
        for frame in frames.dropLast() {
            channel.write(frame.webSocketFrame, promise: nil)
        }
        channel.writeAndFlush(frames[frames.count - 1].webSocketFrame, promise: nil)
        if watcher.value.whenWritable(accepted, channel: channel) {
            inFlight.withLockedValue { $0 = false }
        }
    }
}

/// A stream connection's watcher, first in its pipeline, where writability changes and the client's bytes arrive
/// before anything else: it completes promises when the channel can take more writes (and fails them when it
/// closes), and keeps the connection alive with a timer on the event loop instead of a task per stream: a ping every
/// period, and a close when a period after a ping nothing at all came from the client (any bytes count as an answer,
/// a pong or anything else).
private final class StreamConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private var waiting: [EventLoopPromise<Void>] = []
    private var closed = false
    private let pingEvery: TimeAmount
    private var keepAlive: RepeatedTask?
    private var heardSincePing = true
    private var pinged = false

    init(pingEvery: TimeAmount) {
        self.pingEvery = pingEvery
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let channel = context.channel
        keepAlive = context.eventLoop.scheduleRepeatedTask(initialDelay: pingEvery, delay: pingEvery) { _ in
            handler.value.tick(channel)
        }
    }

    private func tick(_ channel: any Channel) {
        if pinged, !heardSincePing {
            channel.close(promise: nil)
            return
        }
        pinged = true
        heardSincePing = false
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer()), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        heardSincePing = true
        context.fireChannelRead(data)
    }

    /// Completes `promise` now if the channel is writable (and says so), or fails it if it closed; otherwise keeps
    /// it until one of those happens.
    func whenWritable(_ promise: EventLoopPromise<Void>, channel: any Channel) -> Bool {
        if closed {
            promise.fail(ChannelError.ioOnClosedChannel)
        } else if channel.isWritable {
            promise.succeed()
            return true
        } else {
            waiting.append(promise)
        }
        return false
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { release { $0.succeed() } }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        keepAlive?.cancel()
        closed = true
        release { $0.fail(ChannelError.ioOnClosedChannel) }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        keepAlive?.cancel()
        closed = true
        release { $0.fail(ChannelError.ioOnClosedChannel) }
    }

    private func release(_ complete: (EventLoopPromise<Void>) -> Void) {
        let promises = waiting
        waiting = []
        promises.forEach(complete)
    }
}

/// How a stream the server closes because of what its client did (a flood of frames, a refused stream) stops
/// listening: once the close frame is written, the input side of the connection is shut. Otherwise the closing
/// handshake would read, decode and throw away whatever the client goes on sending until its close frame or the
/// close timeout, a second or more of the server's time for every such connection, for a client that never sends one.
enum ClosingInput {
    /// Shuts `channel`'s input; the WebSocket handler then ends the handshake and closes the connection.
    static func stopReading(_ channel: any Channel) {
        channel.close(mode: .input, promise: nil)
    }
}
