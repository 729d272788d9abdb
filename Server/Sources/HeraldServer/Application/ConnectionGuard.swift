import Foundation
import HeraldProtocol
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// The HTTP server's child channel with a guard on every connection: ``HTTPRequestGuard`` and its
/// ``RequestBytesWatcher``, added in front of what `Inner` sets up.
///
/// Hummingbird adds its own idle handling only after a first complete, non-upgrade request; a connection that sends
/// nothing, half a request head, or bytes the HTTP parser refuses would otherwise be held open for ever.
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    /// A connection: set up by `Inner`, or (nil) turned away at the connection limit with a 503, then closed.
    struct Value: ServerChildChannelValue {
        let channel: any Channel
        let admitted: Inner.Value?
    }

    let inner: Inner
    let timeouts: ServerTimeouts
    let gate: ConnectionGate

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let timeouts = timeouts
        guard gate.admit(channel) else {
            // Full: answer 503 as soon as the connection is active, and close, rather than leave it unanswered.
            logger.debug("connection turned away", metadata: ["limit": "\(gate.limit)"])
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(BusyResponder())
                return Value(channel: channel, admitted: nil)
            }
        }
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // A connection keeps its last read buffer for the next read: small to start with (a request head, a
            // stream's frames), it grows as reads fill it (a large body) and shrinks back.
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.reads)
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let requestGuard = HTTPRequestGuard(timeouts: timeouts, logger: logger)
            let watcher = RequestBytesWatcher(requestGuard)
            try pipeline.addHandler(requestGuard, position: .after(decoder))
            try pipeline.addHandler(watcher, position: .first)
            return Value(channel: channel, admitted: value)
        }
    }

    /// The read buffers: from 512 bytes, up to 64 KiB.
    static var reads: AdaptiveRecvByteBufferAllocator { AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65_536) }

    func handle(value: Value, logger: Logger) async {
        if let admitted = value.admitted {
            await inner.handle(value: admitted, logger: logger)
        }
    }
}

/// The first handler of a connection: it tells the guard that bytes arrived, before the HTTP parser sees them, so
/// a request whose head is still incomplete is known to have started.
final class RequestBytesWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var requestGuard: HTTPRequestGuard?

    init(_ requestGuard: HTTPRequestGuard) {
        self.requestGuard = requestGuard
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        requestGuard?.bytesArrived()
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        requestGuard = nil
    }
}

/// Times out slow and silent HTTP clients, and answers requests the parser refuses, on one connection.
///
/// - A new connection, and a request whose first bytes have arrived, must deliver a whole head within the header
///   timeout.
/// - A kept-alive connection may wait for its next request, and a request body may stall, for the idle timeout.
/// - Nothing times out while the server is working on a response.
/// - A head over the size limit is answered 431, any other unparseable request (two `Content-Length`s, one with
///   `Transfer-Encoding`, TLS on the plain port) 400; both with `Connection: close`, and the connection is closed.
/// - A request target that is not Herald's one spelling of a path (``RequestTarget``) is answered 404 (an empty,
///   `.` or `..` segment, a trailing `/`) or 400 (control characters, bad percent-encoding), and closed likewise.
/// - On graceful shutdown, a connection with no request in flight is closed at once.
///
/// It sits right after the HTTP decoder and leaves when a request asks for a protocol upgrade (the WebSocket has
/// its own pings and close timeout).
final class HTTPRequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let timeouts: ServerTimeouts
    private let logger: Logger
    private var context: ChannelHandlerContext?
    /// When the connection times out, and after how long a wait; nil while a response is being made.
    private var deadline: (due: NIODeadline, timeout: Duration)?
    /// The one timer, due at or before ``deadline``.
    private var timer: Scheduled<Void>?
    private var timerDue: NIODeadline?
    /// A head was read and its end not yet.
    private var readingRequest = false
    /// Requests whose response has not ended.
    private var pendingResponses = 0
    /// Bytes arrived since the last head was read (or since the connection opened).
    private var requestStarted = false
    /// No request has been read yet.
    private var fresh = true
    private var closeWhenIdle = false
    private var closing = false

    init(timeouts: ServerTimeouts, logger: Logger) {
        self.timeouts = timeouts
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { arm() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimer()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        arm()
        context.fireChannelActive()
    }

    /// Called by ``RequestBytesWatcher`` before the parser sees the bytes.
    func bytesArrived() {
        guard !readingRequest, !requestStarted else { return }
        requestStarted = true
        arm()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            if let problem = RequestTarget.problem(with: head.uri) {
                // Before the router, the files and the upgrade: refused, and the connection closed once answered.
                closing = true
                stopTimer()
                refuse(context, status: problem.notFound ? .notFound : .badRequest,
                       code: problem.notFound ? "not_found" : "invalid_request", message: problem.message)
                return
            }
            if head.headers.contains(name: "upgrade") {
                // The upgrade handler takes over; once it answers, what follows is not HTTP.
                context.fireChannelRead(data)
                leave(context: context)
                return
            }
            readingRequest = true
            requestStarted = false
            fresh = false
            pendingResponses += 1
        case .body:
            break
        case .end:
            readingRequest = false
        }
        arm()
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        pendingResponses = max(0, pendingResponses - 1)
        context.write(data, promise: promise)
        if closeWhenIdle, pendingResponses == 0, !readingRequest {
            context.flush()
            end(context)
        } else {
            arm()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        guard !closing else { return }
        closing = true
        stopTimer()
        logger.debug("HTTP request refused", metadata: ["error": "\(parserError)"])
        // A response already under way cannot be followed by another: then the connection just closes.
        guard pendingResponses == 0 else {
            end(context)
            return
        }
        let (status, code, message): (HTTPResponseStatus, String, String) = switch parserError {
        case .headerOverflow: (.requestHeaderFieldsTooLarge, "too_large", "the request's headers are too large")
        default: (.badRequest, "invalid_request", "the request is not valid HTTP/1.1")
        }
        refuse(context, status: status, code: code, message: message)
    }

    /// Answers with the error `code` (no request of this connection is answered after it), then closes.
    private func refuse(_ context: ChannelHandlerContext, status: HTTPResponseStatus, code: String, message: String) {
        let body = WireJSON.string(WireError(code: code, message: message))
        var head = HTTPResponseHead(version: .http1_1, status: status)
        head.headers.add(name: "content-type", value: "application/json; charset=utf-8")
        head.headers.add(name: "content-length", value: String(body.utf8.count))
        head.headers.add(name: "connection", value: "close")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            self.end(context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            if pendingResponses == 0, !readingRequest {
                end(context)
                return
            }
            closeWhenIdle = true
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Sets the deadline for what the connection is doing now (none while a response is being made).
    ///
    /// Requests come and go far more often than anything times out, so the one timer is not moved with every
    /// deadline: a later deadline leaves it alone, and when it fires early it waits again for what is left. Only a
    /// deadline before the timer's (a header after an idle wait) sets it anew.
    private func arm() {
        guard let context, !closing else { return }
        let timeout: Duration
        if readingRequest {
            timeout = timeouts.idle
        } else if pendingResponses > 0 {
            deadline = nil
            return
        } else if fresh || requestStarted {
            timeout = timeouts.header
        } else {
            timeout = timeouts.idle
        }
        let due = NIODeadline.now() + .nanoseconds(timeout.nanoseconds)
        deadline = (due, timeout)
        if let timerDue, timerDue <= due { return }
        timer?.cancel()
        schedule(at: due, context)
    }

    private func stopTimer() {
        timer?.cancel()
        timer = nil
        timerDue = nil
        deadline = nil
    }

    private func schedule(at due: NIODeadline, _ context: ChannelHandlerContext) {
        timerDue = due
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: due) { [self] in
            timer = nil
            timerDue = nil
            guard let deadline, !closing, self.context != nil else { return }
            guard deadline.due <= .now() else {
                schedule(at: deadline.due, context)
                return
            }
            logger.debug("HTTP connection timed out", metadata: ["after": "\(deadline.timeout)"])
            closing = true
            end(context)
        }
    }

    /// Closes the connection. Before its first request, the WebSocket upgrade handler further on is still waiting
    /// to see one: it is told the input ended, so it gives up quietly rather than reporting a failed upgrade.
    private func end(_ context: ChannelHandlerContext) {
        if fresh {
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        context.close(promise: nil)
    }

    private func leave(context: ChannelHandlerContext) {
        stopTimer()
        let pipeline = context.pipeline.syncOperations
        if let watcher = try? pipeline.handler(type: RequestBytesWatcher.self) {
            pipeline.removeHandler(watcher, promise: nil)
        }
        pipeline.removeHandler(context: context, promise: nil)
    }
}

extension Duration {
    /// This duration in whole nanoseconds.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
