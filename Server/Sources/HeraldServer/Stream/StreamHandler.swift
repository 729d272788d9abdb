import HeraldCore
import HeraldProtocol
import HeraldRecords
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
///
/// Those rules are ``StreamMachine``'s, tested alone; the handler carries out what it says (the writes, the timers,
/// the keep-alive's period) and handles what the client asks (parsing, the hub, the push, the messenger).
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
        /// The stream as the hub reaches it: what the committing thread hands a `send`'s answer to.
        let peer: StreamPeer
        let services: StreamServices
        let work: StreamWork
    }

    /// How the server ends a stream once what is queued is written.
    typealias Closing = StreamMachine.Closing

    /// The users already warned that a stream of theirs without `device` went to the background.
    static let deviceless = OnceEach(limit: 10_000)
    /// How long a client has to answer the server's close before it is cut.
    static let closeTimeout = StreamMachine.closeTimeout

    private let rules: StreamRules
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var session: Session?
    /// The stream's rules and state; the handler carries out what it says.
    private var machine: StreamMachine
    private let opened = ContinuousClock.now
    /// Whether the lane's trip running now has touched this stream (``DeliveryLane``): it flushes each stream once.
    var inTrip = false
    /// The catch-up waiting for the socket to take more.
    private var socketWaiters: [EventLoopPromise<Void>] = []
    /// NIO's WebSocket encoder's place in the pipeline: frames made here (``OutboundFrame``, header included) are
    /// written from there, so they go to the socket as they are; control frames go through the encoder.
    private var wire: ChannelHandlerContext?
    private var cut: Scheduled<Void>?
    private var keepAlive: RepeatedTask?

    init(rules: StreamRules, logger: Logger) {
        self.rules = rules
        self.logger = logger
        machine = StreamMachine(limits: rules.limits, overflowDrain: rules.timeouts.overflowDrain)
    }

    private var limits: ServerLimits { rules.limits }
    private var timeouts: ServerTimeouts { rules.timeouts }

    /// How far the client can have taken in messages: what was written through.
    var writtenThrough: Int64 { machine.writtenThrough }

    // MARK: Pipeline events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        wire = try? context.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        keepAlive = context.eventLoop.scheduleRepeatedTask(initialDelay: TimeAmount(timeouts.ping), delay: TimeAmount(timeouts.ping)) { _ in
            handler.value.tick()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        ended()
        self.context = nil
        wire = nil
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
            perform(machine.writable())
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if machine.readRequested() { context.read() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        perform(machine.received(frame, at: opened.duration(to: .now), writable: context.channel.isWritable))
    }

    // MARK: Called by the opening, the hub and the lanes (on the event loop)

    /// The stream is registered: the client's frames are handled from now on.
    func start(_ session: Session) {
        guard let actions = machine.start() else {
            // It closed while opening.
            session.services.hub.unregister(session.connection)
            return
        }
        self.session = session
        perform(actions)
    }

    /// Writes a page of the catch-up with one flush; the future completes once the socket can take more (fails once
    /// the stream closed or is closing).
    func writeCatchUp(_ frames: [OutboundFrame]) -> EventLoopFuture<Void>? {
        guard let context, let actions = machine.catchUp(frames) else { return nil }
        perform(actions)
        if context.channel.isWritable { return context.eventLoop.makeSucceededVoidFuture() }
        let promise = context.eventLoop.makePromise(of: Void.self)
        socketWaiters.append(promise)
        return promise.futureResult
    }

    /// The catch-up wrote everything through `through`: `ready`, then what queued meanwhile (after `through`).
    func goLive(through: Int64, horizon: Int64?) {
        guard context != nil else { return }
        perform(machine.goLive(through: through, horizon: horizon))
    }

    /// Takes a frame for the client (written now, or queued), or ends the stream.
    func deliver(_ delivery: StreamDelivery) {
        switch delivery {
        case .frame(let frame):
            enqueue(frame)
        case .close(let closing):
            guard context != nil else { return }
            perform(machine.close(closing))
        case .answer(let answer):
            sent(answer)
        }
    }

    /// Flushes what ``deliver(_:)`` wrote.
    func flush() {
        guard let context else { return }
        if machine.takeFlush() { context.flush() }
    }

    /// Refuses the stream: an `error` frame with the code, then a close (1008) with the code as reason.
    ///
    /// Not at once: a client library may drop frames that arrive in the same read as the upgrade's 101 response
    /// (swift-websocket's client did, and then waited for ever), so the refusal goes out once the client has shown it
    /// is reading (its first frame; Herald's clients send `focus` and `app` on every connection), or after a second
    /// for a client that sends nothing. Then nothing more is read from it.
    func refuse(_ error: APIError) {
        guard context != nil else { return }
        perform(machine.refuse(error))
    }

    /// Ends the stream at once, without the closing handshake (its catch-up failed).
    func abort() {
        context?.close(promise: nil)
    }

    // MARK: Carrying out the machine's actions

    /// Writes a frame made here as its finished bytes, past NIO's encoder (in the same order as everything written
    /// through it: both go straight on to the socket's queue). A pipeline without the encoder (only in tests) gets the
    /// frame's bytes from this handler as they are.
    private func write(_ frame: OutboundFrame, on context: ChannelHandlerContext) {
        (wire ?? context).write(NIOAny(frame.wire), promise: nil)
    }

    private func perform(_ actions: [StreamMachine.Action]) {
        guard let context else { return }
        for action in actions {
            switch action {
            case .write(let frame):
                write(frame, on: context)
            case .flush:
                context.flush()
            case .writeQueued:
                while context.channel.isWritable, let frame = machine.nextQueued() {
                    write(frame, on: context)
                }
                perform(machine.queueWritten())
            case .handleFrames:
                while let text = machine.nextFrame() {
                    if let session { handle(text, session: session) }
                }
                perform(machine.framesHandled())
            case .read:
                context.read()
            case .pong(let data):
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: data)), promise: nil)
            case .ping:
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())), promise: nil)
            case .sendClose(let closing):
                sendClose(closing, context: context)
            case .answerClose(let code):
                var payload = context.channel.allocator.buffer(capacity: 2)
                payload.write(webSocketErrorCode: code)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)))
                    .whenComplete { _ in channel.close(promise: nil) }
            case .cut(let after, let noting):
                cut?.cancel()
                let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
                let logger = logger
                let metadata = metadata
                cut = context.eventLoop.scheduleTask(in: TimeAmount(after)) {
                    guard let context = handler.value.context else { return }
                    if noting {
                        guard context.channel.isActive else { return }
                        logger.notice("stream dropped: client stopped reading", metadata: metadata)
                    }
                    context.close(promise: nil)
                }
            case .close:
                context.close(promise: nil)
            case .refuseLater(let after):
                let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: TimeAmount(after)) {
                    handler.value.perform(handler.value.machine.refusalDue())
                }
            case .note(.flooding):
                HeraldMetrics.streamsClosedForFlooding.increment()
                logger.notice("stream closed: it kept sending past its frame budget", metadata: metadata)
            case .note(.tooSlow):
                HeraldMetrics.slowReadersDropped.increment()
                logger.notice("stream dropped: client too slow", metadata: metadata)
            }
        }
    }

    /// Writes the server's close; a client not to be read any more is closed once it is written.
    private func sendClose(_ closing: Closing, context: ChannelHandlerContext) {
        var payload = context.channel.allocator.buffer(capacity: 2 + closing.reason.utf8.count)
        payload.write(webSocketErrorCode: closing.code)
        payload.writeString(closing.reason)
        let written = context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)))
        guard closing.stopReading else { return }
        // Nothing the client sends is read any more; the connection closes once the close is written.
        let channel = context.channel
        written.whenComplete { _ in
            ClosingInput.stopReading(channel)
            channel.close(promise: nil)
        }
    }

    /// Takes a frame for the client, written now or queued.
    private func enqueue(_ frame: OutboundFrame, flushing: Bool = false) {
        guard let context else { return }
        if !flushing {
            // A live stream's usual case without a list of actions: one delivery in each lane's trip.
            switch machine.enqueueDirectly(frame, writable: context.channel.isWritable) {
            case .write(let frame):
                write(frame, on: context)
                return
            case .skip:
                return
            case .decide:
                break
            }
        }
        perform(machine.enqueue(frame, flushing: flushing, writable: context.channel.isWritable))
    }

    // MARK: The client's frames

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
                // Through the lane, behind whatever was handed to this stream before the ping was read (a message
                // committed meanwhile whose lane has not run yet): a `pong` follows every frame handed on before it.
                session.peer.lane.add(CollectionOfOne((session.peer, .frame(OutboundFrame(text: ServerFrame.pong.text)))))
            case .received(let through):
                guard through >= 0 else { throw APIError(.badRequest, .invalidRequest, "through must be a seq (0 or more)") }
                HeraldMetrics.confirmations.increment()
                // No further than this stream has written: a device cannot have taken in more, and a confirmation from
                // the future would hold back the pushes of messages it never saw.
                let through = min(through, writtenThrough)
                guard through > 0 else { return }
                session.services.push.confirmed(userID: session.identity.userID, device: session.device ?? "", through: through)
            case .send(let conversationID, let id, let text, let imageURL, let mentions, let mentionsAll):
                // The frame's `id` is its reference: no second reading of the text.
                let ref: String? = id
                let mentions = Mentions(ids: mentions, all: mentionsAll)
                let logger = logger
                // Straight to the group commit when the conversation is in memory (usually committed here and now): its
                // answer comes back with the message's deliveries, in the same trip of this loop's lane (no task on
                // the way).
                let queued = try session.services.messenger.postNow(
                    to: conversationID, clientID: id, text: text, imageURL: imageURL, mentions: mentions, by: session.identity
                ) { [peer = session.peer, identity = session.identity] outcome in
                    let answer = Self.answer(to: outcome, id: id, ref: ref, from: identity, logger: logger)
                    peer.lane.add(CollectionOfOne((peer, .answer(answer))))
                }
                if queued {
                    machine.sending()
                    return
                }
                send(session: session, id: id, ref: ref) { messenger, identity in
                    try await messenger.post(
                        to: conversationID, clientID: id, text: text, imageURL: imageURL, mentions: mentions, by: identity)
                }
            }
        } catch {
            enqueue(refusalFrame(APIError(error), ref: ClientFrame.reference(in: frameText)), flushing: true)
        }
    }

    /// Stores a `send` on ``StreamWork`` (its conversation had to be read first); the frames after it wait for its
    /// answer.
    private func send(
        session: Session, id: String, ref: String?, _ post: @escaping @Sendable (Messenger, Identity) async throws -> PostOutcome
    ) {
        guard let context else { return }
        machine.sending()
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        let logger = logger
        let queued = session.work.submit {
            let outcome: Result<PostOutcome, any Error>
            do {
                outcome = .success(try await post(session.services.messenger, session.identity))
            } catch {
                outcome = .failure(error)
            }
            let frame = Self.answer(to: outcome, id: id, ref: ref, from: session.identity, logger: logger)
            loop.execute {
                handler.value.sent(frame)
            }
        }
        if !queued { context.close(promise: nil) }
    }

    /// The frame that answers a `send` with client id `id`: `ack` with its seq, or the refusal (an internal error
    /// logged).
    private static func answer(
        to outcome: Result<PostOutcome, any Error>, id: String, ref: String?, from identity: Identity, logger: Logger
    ) -> OutboundFrame {
        switch outcome {
        case .success(.stored(let message)), .success(.existing(let message)):
            return OutboundFrame(text: ServerFrame.ack(id: id, seq: message.seq ?? 0).text)
        case .failure(let error):
            let refusal = APIError(error)
            if refusal.code == .internalError {
                logger.error("stream frame failed", metadata: ["user": "\(identity.userID)", "error": "\(error)"])
            }
            return OutboundFrame(text: ServerFrame.refusal(refusal, ref: ref).text)
        }
    }

    /// A `send`'s answer: it goes out, and the frames after it are handled.
    private func sent(_ answer: OutboundFrame) {
        guard let context else { return }
        perform(machine.sent(answer, writable: context.channel.isWritable))
    }

    private func refusalFrame(_ error: APIError, ref: String?) -> OutboundFrame {
        if error.code == .internalError {
            logger.error("stream frame failed", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
        return OutboundFrame(text: ServerFrame.refusal(error, ref: ref).text)
    }

    private func tick() {
        guard context != nil else { return }
        perform(machine.tick())
    }

    private func ended() {
        guard machine.ended() else { return }
        keepAlive?.cancel()
        cut?.cancel()
        let waiters = socketWaiters
        socketWaiters = []
        waiters.forEach { $0.fail(ChannelError.ioOnClosedChannel) }
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
    /// The answer to the stream's `send`: it goes out, and the client's frames after it are handled.
    case answer(OutboundFrame)
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
