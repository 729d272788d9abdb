import DequeModule
import HeraldCore
import HeraldProtocol
import Logging
import NIOCore
import NIOWebSocket

/// One stream, as state in its channel's pipeline: the WebSocket protocol, the client's frames, and the bounded queue
/// of frames for the client. It has no task of its own; everything here runs on the channel's event loop.
///
/// A stream goes through these phases:
/// - **opening**: the upgrade is done and the token is being checked (``StreamOpening``, on ``StreamWork``); what the
///   client sends meanwhile waits, and live frames queue.
/// - **catching up**: the stream is registered with the hub; the catch-up's pages are written as the socket takes
///   them (``writeCatchUp(_:)``), while live frames queue.
/// - **live** (after ``goLive(through:horizon:)`` wrote `ready`): live frames are written as they come, straight onto
///   the socket while it takes more, else into the queue, which is bounded in frames and bytes: a client that reads
///   too slowly is closed (1008) once what was queued before is written.
/// - **closing**: the server sent its close frame, or is writing what is queued before it does.
///
/// The client's text frames are handled in order: `focus`, `app`, `ping` and `received` at once, `send` on
/// ``StreamWork``; while a send is being stored the frames after it wait (and past a few, the socket is not read).
final class StreamHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = Never
    typealias OutboundOut = WebSocketFrame

    /// What a started stream handles the client's frames with.
    struct Session: Sendable {
        let identity: Identity
        let device: String?
        /// The stream's id in the hub.
        let connection: Int
        let services: StreamServices
        let work: StreamWork
    }

    /// How the server ends a stream once what is queued is written.
    struct Closing: Sendable {
        var code: WebSocketErrorCode
        var reason: String
        /// Read nothing more from the client (a flood, a refusal, a stop): its input is shut once the close is written.
        var stopReading: Bool
    }

    private enum Phase {
        case opening, catchingUp, live, closed
    }

    /// The users already warned that a stream of theirs without `device` went to the background.
    static let deviceless = OnceEach(limit: 10_000)
    /// Client frames held while one is being handled, before the socket is no longer read.
    static let readAhead = 16
    /// How long a client has to answer the server's close before it is cut.
    static let closeTimeout: Duration = .seconds(5)

    private let rules: StreamRules
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var phase = Phase.opening
    private var session: Session?

    // The client's side.
    private var budget: FrameBudget
    private let opened = ContinuousClock.now
    /// A message arriving in fragments: its opcode and what came so far.
    private var fragments: (opcode: WebSocketOpcode, data: ByteBuffer)?
    private var waiting: Deque<String> = []
    /// A `send` is being stored.
    private var busy = false
    /// A read was held back while `waiting` was full.
    private var heldRead = false
    /// Whether the client sent anything yet (a refusal waits for it, see ``refuse(_:)``).
    private var heard = false
    private var refusal: APIError?

    // The server's side.
    private var queue: Deque<OutboundFrame> = []
    private var queuedBytes = 0
    /// The catch-up's end: a queued live frame up to it was already written by the catch-up.
    private var caughtUpThrough: Int64 = 0
    /// How far the client can have taken in messages: what was written through.
    private(set) var writtenThrough: Int64 = 0
    private var unflushed = false
    /// The catch-up waiting for the socket to take more.
    private var socketWaiters: [EventLoopPromise<Void>] = []
    private var closing: Closing?
    private var closeSent = false
    private var cut: Scheduled<Void>?

    // Keeping the connection alive.
    private var keepAlive: RepeatedTask?
    private var heardSincePing = true
    private var pinged = false

    init(rules: StreamRules, logger: Logger) {
        self.rules = rules
        self.logger = logger
        budget = FrameBudget(burst: rules.limits.streamFrameBurst, perSecond: rules.limits.streamFramesPerSecond)
    }

    private var limits: ServerLimits { rules.limits }
    private var timeouts: ServerTimeouts { rules.timeouts }

    // MARK: Pipeline events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        keepAlive = context.eventLoop.scheduleRepeatedTask(initialDelay: TimeAmount(timeouts.ping), delay: TimeAmount(timeouts.ping)) { _ in
            handler.value.tick()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        ended()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        ended()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            let waiters = socketWaiters
            socketWaiters = []
            waiters.forEach { $0.succeed() }
            drain()
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if waiting.count >= Self.readAhead {
            heldRead = true
        } else {
            context.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        heardSincePing = true
        switch frame.opcode {
        case .connectionClose:
            closeReceived(frame)
        case .ping:
            guard !closeSent else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            break
        case .text, .binary:
            guard fragments == nil else { return fail(.protocolError, "a new message inside a fragmented one") }
            if frame.fin {
                received(opcode: frame.opcode, data: frame.unmaskedData)
            } else {
                fragments = (frame.opcode, frame.unmaskedData)
            }
        case .continuation:
            guard var message = fragments else { return fail(.protocolError, "a continuation with no message") }
            fragments = nil
            var data = frame.unmaskedData
            guard message.data.readableBytes + data.readableBytes <= limits.maxAcceptedFrameBytes else {
                return fail(.messageTooLarge, "message too large")
            }
            message.data.writeBuffer(&data)
            if frame.fin {
                received(opcode: message.opcode, data: message.data)
            } else {
                fragments = message
            }
        default:
            fail(.protocolError, "unknown opcode")
        }
    }

    // MARK: Called by the opening, the hub and the lanes (on the event loop)

    /// The stream is registered: the client's frames are handled from now on.
    func start(_ session: Session) {
        guard phase == .opening else {
            // It closed while opening.
            session.services.hub.unregister(session.connection)
            return
        }
        self.session = session
        phase = .catchingUp
        handleWaiting()
    }

    /// Writes a page of the catch-up with one flush; the future completes once the socket can take more (fails once
    /// the stream closed or is closing).
    func writeCatchUp(_ frames: [OutboundFrame]) -> EventLoopFuture<Void>? {
        guard let context, phase == .catchingUp, closing == nil else { return nil }
        for frame in frames { write(frame, context: context) }
        flush()
        if context.channel.isWritable { return context.eventLoop.makeSucceededVoidFuture() }
        let promise = context.eventLoop.makePromise(of: Void.self)
        socketWaiters.append(promise)
        return promise.futureResult
    }

    /// The catch-up wrote everything through `through`: `ready`, then what queued meanwhile (after `through`).
    func goLive(through: Int64, horizon: Int64?) {
        guard let context, phase == .catchingUp else { return }
        phase = .live
        caughtUpThrough = through
        writtenThrough = max(writtenThrough, through)
        if closing == nil {
            write(OutboundFrame(text: ServerFrame.ready(seq: through, horizon: horizon).text), context: context)
        }
        drain()
    }

    /// Takes a frame for the client (written now, or queued), or ends the stream.
    func deliver(_ delivery: StreamDelivery) {
        switch delivery {
        case .frame(let frame):
            enqueue(frame)
        case .close(let closing):
            close(closing)
        }
    }

    /// Flushes what ``deliver(_:)`` wrote.
    func flush() {
        guard unflushed, let context else { return }
        unflushed = false
        context.flush()
    }

    /// Refuses the stream: an `error` frame with the code, then a close (1008) with the code as reason.
    ///
    /// Not at once: a client library may drop frames that arrive in the same read as the upgrade's 101 response
    /// (swift-websocket's client did, and then waited for ever), so the refusal goes out once the client has shown it
    /// is reading (its first frame; Herald's clients send `focus` and `app` on every connection), or after a second
    /// for a client that sends nothing. Then nothing more is read from it.
    func refuse(_ error: APIError) {
        guard let context, phase == .opening, refusal == nil else { return }
        refusal = error
        if heard { return sendRefusal() }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .seconds(1)) { handler.value.sendRefusal() }
    }

    /// Ends the stream at once, without the closing handshake (its catch-up failed).
    func abort() {
        context?.close(promise: nil)
    }

    // MARK: The client's frames

    private func received(opcode: WebSocketOpcode, data: ByteBuffer) {
        heard = true
        if refusal != nil { return sendRefusal() }
        guard closing == nil else { return }
        // Every frame spends from the stream's budget before anything else is done with it.
        switch budget.take(at: opened.duration(to: .now)) {
        case .accept:
            break
        case .refuse(let wait):
            return enqueue(refusalFrame(APIError.rateLimited(
                "more than \(limits.streamFramesPerSecond.formatted()) frames a second (bursts of \(limits.streamFrameBurst))",
                retryAfter: wait.seconds), ref: nil), flushing: true)
        case .close:
            HeraldMetrics.streamsClosedForFlooding.increment()
            logger.notice("stream closed: it kept sending past its frame budget", metadata: metadata)
            return close(Closing(code: .policyViolation, reason: "too many frames", stopReading: true))
        }
        guard opcode == .text else {
            return enqueue(refusalFrame(APIError(.badRequest, .invalidRequest, "frames must be JSON text"), ref: nil), flushing: true)
        }
        guard let text = try? data.getUTF8ValidatedString(at: data.readerIndex, length: data.readableBytes) else {
            return fail(.dataInconsistentWithMessage, "text is not UTF-8")
        }
        waiting.append(text)
        handleWaiting()
    }

    /// Handles the frames that wait, in order, until one needs the database.
    private func handleWaiting() {
        while let session, !busy, closing == nil, let text = waiting.popFirst() {
            handle(text, session: session)
        }
        if heldRead, waiting.count < Self.readAhead, let context {
            heldRead = false
            context.read()
        }
    }

    private func handle(_ frameText: String, session: Session) {
        guard frameText.utf8.count <= limits.maxFrameBytes else {
            let error = APIError(.contentTooLarge, .tooLarge, "a frame may be at most \(limits.maxFrameBytes) bytes")
            return enqueue(refusalFrame(error, ref: nil), flushing: true)
        }
        do {
            switch try ClientFrame(parsing: frameText) {
            case .focus(let conversationID):
                let focus = try conversationID.map { try Input.id($0, field: "conversation") }
                session.services.hub.update(session.connection) { $0.focus = focus }
            case .app(let state):
                session.services.hub.update(session.connection) { $0.appState = state }
                if state == .background, session.device == nil, Self.deviceless.firstWarning(for: session.identity.userID) {
                    logger.warning(
                        """
                        a stream without `device` says its app is in the background: the server cannot tell which phone \
                        it is, so that phone is pushed too and may show a message twice (connect with ?device=<its id>, \
                        the id it registered for push); said once per user
                        """, metadata: metadata)
                }
            case .ping:
                enqueue(OutboundFrame(text: ServerFrame.pong.text), flushing: true)
            case .received(let through):
                guard through >= 0 else { throw APIError(.badRequest, .invalidRequest, "through must be a seq (0 or more)") }
                HeraldMetrics.confirmations.increment()
                // No further than this stream has written: a device cannot have taken in more, and a confirmation from
                // the future would hold back the pushes of messages it never saw.
                let through = min(through, writtenThrough)
                guard through > 0 else { return }
                session.services.push.confirmed(userID: session.identity.userID, device: session.device ?? "", through: through)
            case .send(let conversationID, let id, let text, let imageURL, let mentions, let mentionsAll):
                send(session: session, ref: ClientFrame.reference(in: frameText)) { messenger, identity in
                    let outcome = try await messenger.post(
                        to: conversationID, clientID: id, text: text, imageURL: imageURL,
                        mentions: Mentions(ids: mentions, all: mentionsAll), by: identity)
                    switch outcome {
                    case .stored(let message), .existing(let message):
                        return OutboundFrame(text: ServerFrame.ack(id: id, seq: message.seq ?? 0).text)
                    }
                }
            }
        } catch {
            enqueue(refusalFrame(APIError(error), ref: ClientFrame.reference(in: frameText)), flushing: true)
        }
    }

    /// Stores a `send` on ``StreamWork``; the frames after it wait for its answer.
    private func send(
        session: Session, ref: String?, _ post: @escaping @Sendable (Messenger, Identity) async throws -> OutboundFrame
    ) {
        guard let context else { return }
        busy = true
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        let logger = logger
        let queued = session.work.submit {
            let answer: OutboundFrame
            do {
                answer = try await post(session.services.messenger, session.identity)
            } catch {
                let refusal = APIError(error)
                if refusal.code == .internalError {
                    logger.error("stream frame failed", metadata: ["user": "\(session.identity.userID)", "error": "\(error)"])
                }
                answer = OutboundFrame(text: ServerFrame.refusal(refusal, ref: ref).text)
            }
            loop.execute {
                handler.value.busy = false
                handler.value.enqueue(answer, flushing: true)
                handler.value.handleWaiting()
            }
        }
        if !queued { context.close(promise: nil) }
    }

    private func refusalFrame(_ error: APIError, ref: String?) -> OutboundFrame {
        if error.code == .internalError {
            logger.error("stream frame failed", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
        return OutboundFrame(text: ServerFrame.refusal(error, ref: ref).text)
    }

    private func closeReceived(_ frame: WebSocketFrame) {
        guard let context else { return }
        if closeSent {
            context.close(promise: nil)
            return
        }
        // The client closes: answer with its code, and close the connection once that is written.
        var data = frame.unmaskedData
        let code = data.readWebSocketErrorCode() ?? .normalClosure
        closeSent = true
        closing = Closing(code: code, reason: "", stopReading: true)
        var payload = context.channel.allocator.buffer(capacity: 2)
        payload.write(webSocketErrorCode: code)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    // MARK: The server's frames

    private func enqueue(_ frame: OutboundFrame, flushing: Bool = false) {
        guard let context, phase != .closed, closing == nil else { return }
        if phase == .live, queue.isEmpty, context.channel.isWritable {
            write(frame, context: context)
            if flushing { flush() }
            return
        }
        let size = frame.bytes.readableBytes
        guard queue.count < limits.streamBufferFrames, queuedBytes + size <= limits.streamBufferBytes else {
            // Too slow: what was queued is still written, then the close.
            HeraldMetrics.slowReadersDropped.increment()
            logger.notice("stream dropped: client too slow", metadata: metadata)
            return close(Closing(code: .policyViolation, reason: "too slow: reconnect with after", stopReading: false))
        }
        queue.append(frame)
        queuedBytes += size
    }

    private func write(_ frame: OutboundFrame, context: ChannelHandlerContext) {
        if let seq = frame.seq {
            if phase == .live, seq <= caughtUpThrough { return }
            // Noted before the write: the client may answer before the write returns.
            writtenThrough = max(writtenThrough, seq)
        }
        context.write(wrapOutboundOut(frame.webSocketFrame), promise: nil)
        unflushed = true
    }

    /// Writes what is queued while the socket takes it; once all is written, the close, if one is due.
    private func drain() {
        guard let context, phase == .live || closing != nil else { return }
        if phase == .live {
            while context.channel.isWritable, let frame = queue.popFirst() {
                queuedBytes -= frame.bytes.readableBytes
                write(frame, context: context)
            }
        }
        flush()
        if let closing, !closeSent, queue.isEmpty || phase != .live {
            sendClose(closing)
        }
    }

    /// Ends the stream once what is queued is written: nothing more is queued, and a client that does not take it is
    /// cut after ``ServerTimeouts/overflowDrain``.
    private func close(_ closing: Closing) {
        guard let context, phase != .closed, self.closing == nil else { return }
        self.closing = closing
        waiting.removeAll()
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let logger = logger
        let metadata = metadata
        cut = context.eventLoop.scheduleTask(in: TimeAmount(timeouts.overflowDrain)) {
            guard let context = handler.value.context, context.channel.isActive else { return }
            logger.notice("stream dropped: client stopped reading", metadata: metadata)
            context.close(promise: nil)
        }
        drain()
    }

    private func sendClose(_ closing: Closing) {
        guard let context else { return }
        closeSent = true
        var payload = context.channel.allocator.buffer(capacity: 2 + closing.reason.utf8.count)
        payload.write(webSocketErrorCode: closing.code)
        payload.writeString(closing.reason)
        let written = context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)))
        if closing.stopReading {
            // Nothing the client sends is read any more; the connection closes once the close is written.
            let channel = context.channel
            written.whenComplete { _ in
                ClosingInput.stopReading(channel)
                channel.close(promise: nil)
            }
        } else {
            // The client answers the close; one that does not is cut.
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            cut?.cancel()
            cut = context.eventLoop.scheduleTask(in: TimeAmount(Self.closeTimeout)) { handler.value.context?.close(promise: nil) }
        }
    }

    private func sendRefusal() {
        guard let context, let refusal, !closeSent else { return }
        write(OutboundFrame(text: ServerFrame.refusal(refusal, ref: nil).text), context: context)
        sendClose(Closing(code: .policyViolation, reason: refusal.code.rawValue, stopReading: true))
    }

    /// A protocol error: the close, with nothing more read.
    private func fail(_ code: WebSocketErrorCode, _ reason: String) {
        fragments = nil
        guard !closeSent else { return }
        let failure = Closing(code: code, reason: reason, stopReading: true)
        closing = failure
        sendClose(failure)
    }

    private func tick() {
        guard let context else { return }
        if pinged, !heardSincePing {
            context.close(promise: nil)
            return
        }
        pinged = true
        heardSincePing = false
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())), promise: nil)
    }

    private func ended() {
        guard phase != .closed else { return }
        phase = .closed
        keepAlive?.cancel()
        cut?.cancel()
        let waiters = socketWaiters
        socketWaiters = []
        waiters.forEach { $0.fail(ChannelError.ioOnClosedChannel) }
        queue.removeAll()
        waiting.removeAll()
        if let session {
            session.services.hub.unregister(session.connection)
            logger.debug("stream closed", metadata: metadata)
        }
    }

    private var metadata: Logger.Metadata {
        session.map { ["user": "\($0.identity.userID)"] } ?? [:]
    }
}

/// What the hub hands a stream.
enum StreamDelivery: Sendable {
    /// A frame for the client.
    case frame(OutboundFrame)
    /// The end of the stream, once what is queued is written.
    case close(StreamHandler.Closing)
}

/// How a stream the server closes because of what its client did (a flood of frames, a refused stream) stops
/// listening: once the close frame is written, the input side of the connection is shut, so the server does not read,
/// decode and throw away whatever the client goes on sending.
enum ClosingInput {
    /// Shuts `channel`'s input.
    static func stopReading(_ channel: any Channel) {
        channel.close(mode: .input, promise: nil)
    }
}
