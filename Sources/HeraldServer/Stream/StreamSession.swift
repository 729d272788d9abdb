import Foundation
import HeraldCore
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOWebSocket
import HeraldProtocol
import ServiceLifecycle

/// One stream connection: catch up after `after`, say `ready`, then live messages; meanwhile read the client's
/// focus, app state, sends and pings.
///
/// The connection registers with the hub before it reads the latest `seq`, so every message stored after that
/// reading waits in its outbox; the catch-up sends what is stored up to it, and the outbox what came after,
/// skipping any the catch-up already sent: no gap and no duplicate. Without `after`, the catch-up starts at the
/// latest `seq` read before registering, so nothing stored while the connection was being set up is missed.
struct StreamSession {
    /// The users already warned that a stream of theirs without `device` went to the background.
    static let deviceless = OnceEach(limit: 10_000)

    let identity: Identity
    let after: Int64?
    /// The app's id for the device, from the `device` parameter: while it is connected, its pushes wait for its
    /// confirmation (`received`), and it is told which messages were pushed to it (`pushed`).
    let device: String?
    let services: StreamServices
    let logger: Logger

    private var limits: ServerLimits { services.limits }
    private var timeouts: ServerTimeouts { services.timeouts }

    /// Runs the stream on an upgraded connection: `socket` writes its frames, `outbound` closes it.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, socket: SocketWriter) async throws {
        // An `after` beyond the latest seq is taken as the latest: `ready` tells the client where it really is.
        let latest = try await services.store.latestSeq()
        let start = min(after ?? latest, latest)
        // After an overflow the writer drains what was queued and closes with 1008. A client that stopped reading
        // altogether leaves the writer waiting on the socket; after ``ServerTimeouts/overflowDrain`` the connection
        // is cut, which ends the writer and the session (a timer on the event loop, not a task per stream).
        let outbox = Outbox(frameLimit: limits.streamBufferFrames, byteLimit: limits.streamBufferBytes) { [logger, identity, timeouts] in
            socket.close(after: timeouts.overflowDrain) {
                logger.notice("stream dropped: client stopped reading", metadata: ["user": "\(identity.userID)"])
            }
        }
        do {
            try services.userLimits.openStream(by: identity.userID)
        } catch let refusal as APIError {
            try await StreamController.refuse(refusal, inbound: inbound, outbound: outbound, channel: socket.channel)
            return
        }
        guard let connection = services.hub.register(userID: identity.userID, device: device, outbox: outbox, limit: limits.streamsPerUser) else {
            let refusal = APIError.rateLimited("a user has at most \(limits.streamsPerUser) streams open", retryAfter: 10)
            try await StreamController.refuse(refusal, inbound: inbound, outbound: outbound, channel: socket.channel)
            return
        }
        defer { services.hub.unregister(connection) }
        services.webhooks.connected(identity.userID, latest: latest)
        if let device {
            // The device has what it resumes after (nothing, without `after`), and from now on the server remembers
            // what it pushes to it, for its next catch-up's `pushed` frames.
            services.push.confirmed(userID: identity.userID, device: device, through: after == nil ? 0 : start)
        }
        logger.debug("stream opened", metadata: ["user": "\(identity.userID)", "after": "\(start)"])

        // The writer is a task of its own and the reader is this one (a task less to keep for every idle stream).
        // When the client goes away the reader ends, and the writer is cancelled; when the writer ends first (it fell
        // too far behind and closed with 1008, or failed), the connection closes, which ends the reader.
        //
        // A graceful stop (SIGTERM) ends the stream at once: hummingbird-websocket sends the close (1000), nothing more
        // is queued, and nothing more the client sends is read (a client flooding frames would otherwise keep the
        // server busy to the end of its grace period); a client that does not answer the close is cut after
        // ``ServerTimeouts/overflowDrain``.
        try await withGracefulShutdownHandler {
            try await serve(connection: connection, outbox: outbox, socket: socket, inbound: inbound, outbound: outbound, after: start)
        } onGracefulShutdown: { [timeouts] in
            outbox.finish()
            socket.stopReading()
            socket.close(after: timeouts.overflowDrain) {}
        }
    }

    /// The reader (this task) and the writer (a child task) of an open stream, until either ends.
    private func serve(
        connection: Int, outbox: Outbox, socket: SocketWriter, inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter, after start: Int64
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await write(socket, closing: outbound, after: start, outbox: outbox)
                } catch {
                    socket.close()
                    throw error
                }
            }
            defer { group.cancelAll() }
            if try await read(inbound, connection: connection, outbox: outbox, socket: socket) == .closing {
                // The server ends the stream: the writer sends what is queued, then the close; what the client goes
                // on sending is not read.
                try await group.next()
                socket.stopReading()
            }
        }
    }

    /// How the reading ended.
    private enum ReadEnd {
        /// The client closed, or the connection ended.
        case ended
        /// The server is closing the stream (``Outbox/finish(closing:)``).
        case closing
    }

    private func write(
        _ socket: SocketWriter, closing outbound: WebSocketOutboundWriter, after start: Int64, outbox: Outbox
    ) async throws {
        // Everything stored up to `through` is read from the database, a window of seqs at a time, so that a long
        // catch-up is many short queries and never holds the database from other users' posts.
        var socket = socket
        let through = try await services.store.latestSeq()
        var cursor = start
        var caughtUp = 0
        // What was pushed to this device meanwhile: each such message comes after a `pushed` frame, so the device
        // does not notify it a second time.
        var pushed: Set<Int64> = []
        if let device, start < through {
            pushed = try await services.store.pushedSeqs(userID: identity.userID, device: device, after: start, through: through)
        }
        while cursor < through {
            let upper = min(through, cursor + limits.catchUpWindow)
            let page = try await services.store.entries(
                for: identity.userID, after: cursor, through: upper, limit: limits.catchUpPageSize)
            try await socket.write(page.flatMap { entry -> [OutboundFrame] in
                let message = OutboundFrame(text: ServerFrame.message(entry).text)
                guard let seq = entry.message.seq, pushed.contains(seq) else { return [message] }
                let notice = ServerFrame.pushed(conversationID: entry.conversation.id, messageID: entry.message.id, seq: seq)
                return [OutboundFrame(text: notice.text), message]
            })
            caughtUp += page.count
            cursor = page.count == limits.catchUpPageSize ? (page.last?.message.seq ?? upper) : upper
        }
        HeraldMetrics.catchUp.record(caughtUp)
        // With retention, a catch-up from before the horizon missed entries that are gone: `ready` says so.
        var horizon: Int64?
        if !services.keepsEverything, start < through {
            let kept = try await services.store.retentionHorizon()
            if start < kept { horizon = kept }
        }
        // Noted before the write: the client may answer before the write returns.
        outbox.written(through: through)
        try await socket.write(OutboundFrame(text: ServerFrame.ready(seq: through, horizon: horizon).text))
        // Live frames: whatever queued while the last batch was written goes out as the next, with one flush.
        while true {
            let batch = await outbox.nextBatch()
            if batch.isEmpty { break }
            if let last = batch.compactMap(\.seq).max() { outbox.written(through: last) }
            try await socket.write(batch.filter { frame in frame.seq.map { $0 > through } ?? true })
        }
        try await socket.drain()
        if outbox.overflowed {
            HeraldMetrics.slowReadersDropped.increment()
            logger.notice("stream dropped: client too slow", metadata: ["user": "\(identity.userID)"])
            try await outbound.close(.policyViolation, reason: "too slow: reconnect with after")
        } else if let reason = outbox.closeReason {
            try await outbound.close(.policyViolation, reason: reason)
        }
    }

    private func read(
        _ inbound: WebSocketInboundStream, connection: Int, outbox: Outbox, socket: SocketWriter
    ) async throws -> ReadEnd {
        // Every frame spends from the stream's budget before anything else is done with it.
        var budget = FrameBudget(burst: limits.streamFrameBurst, perSecond: limits.streamFramesPerSecond)
        let clock = ContinuousClock()
        let opened = clock.now
        for try await message in inbound.messages(maxSize: limits.maxAcceptedFrameBytes) {
            switch budget.take(at: opened.duration(to: clock.now)) {
            case .accept:
                break
            case .refuse(let wait):
                outbox.send(error(APIError.rateLimited(
                    "more than \(limits.streamFramesPerSecond.formatted()) frames a second (bursts of \(limits.streamFrameBurst))",
                    retryAfter: wait.seconds), ref: nil))
                continue
            case .close:
                HeraldMetrics.streamsClosedForFlooding.increment()
                logger.notice("stream closed: it kept sending past its frame budget", metadata: ["user": "\(identity.userID)"])
                outbox.finish(closing: "too many frames")
                // A sender that does not read either would hold the writer on a full socket: cut it after a while.
                socket.close(after: timeouts.overflowDrain) {}
                return .closing
            }
            guard case .text(let text) = message else {
                outbox.send(error(APIError(.badRequest, .invalidRequest, "frames must be JSON text"), ref: nil))
                continue
            }
            guard text.utf8.count <= limits.maxFrameBytes else {
                let error = APIError(.contentTooLarge, .tooLarge, "a frame may be at most \(limits.maxFrameBytes) bytes")
                outbox.send(self.error(error, ref: nil))
                continue
            }
            do {
                try await handle(try ClientFrame(parsing: text), connection: connection, outbox: outbox)
            } catch {
                outbox.send(self.error(APIError(error), ref: ClientFrame.reference(in: text)))
            }
        }
        outbox.finish()
        return .ended
    }

    private func handle(_ frame: ClientFrame, connection: Int, outbox: Outbox) async throws {
        switch frame {
        case .focus(let conversationID):
            let focus = try conversationID.map { try Input.id($0, field: "conversation") }
            services.hub.update(connection) { $0.focus = focus }
        case .app(let state):
            services.hub.update(connection) { $0.appState = state }
            if state == .background, device == nil, Self.deviceless.firstWarning(for: identity.userID) {
                logger.warning(
                    """
                    a stream without `device` says its app is in the background: the server cannot tell which phone \
                    it is, so that phone is pushed too and may show a message twice (connect with ?device=<its id>, \
                    the id it registered for push); said once per user
                    """, metadata: ["user": "\(identity.userID)"])
            }
        case .ping:
            outbox.send(OutboundFrame(text: ServerFrame.pong.text))
        case .received(let through):
            guard through >= 0 else { throw APIError(.badRequest, .invalidRequest, "through must be a seq (0 or more)") }
            HeraldMetrics.confirmations.increment()
            // No further than this stream has written: a device cannot have taken in more, and a confirmation from
            // the future would hold back the pushes of messages it never saw.
            let through = min(through, outbox.writtenThrough)
            guard through > 0 else { return }
            services.push.confirmed(userID: identity.userID, device: device ?? "", through: through)
        case .send(let conversationID, let id, let text, let imageURL, let mentions, let mentionsAll):
            let outcome = try await services.messenger.post(
                to: conversationID, clientID: id, text: text, imageURL: imageURL,
                mentions: Mentions(ids: mentions, all: mentionsAll), by: identity)
            switch outcome {
            case .stored(let message), .existing(let message):
                outbox.send(OutboundFrame(text: ServerFrame.ack(id: id, seq: message.seq ?? 0).text))
            }
        }
    }

    private func error(_ error: APIError, ref: String?) -> OutboundFrame {
        if error.code == .internalError {
            logger.error("stream frame failed", metadata: ["user": "\(identity.userID)", "error": "\(error)"])
        }
        return OutboundFrame(text: ServerFrame.refusal(error, ref: ref).text)
    }
}

/// What every stream uses: the entries it catches up on, the hub it registers with, the push dispatcher it confirms
/// to, the webhooks it tells of a connection, the messenger it posts with, and the limits.
struct StreamServices: Sendable {
    let store: any EntryStore & PushOutbox
    let hub: Hub
    let push: PushDispatcher
    let webhooks: WebhookDispatcher
    let messenger: Messenger
    let userLimits: UserLimits
    let limits: ServerLimits
    let timeouts: ServerTimeouts
    /// No retention (`HERALD_RETENTION`): a catch-up never starts before what is kept.
    let keepsEverything: Bool
}

/// Says whether something is the first for a key, each key once, for up to `limit` keys (then never again): a
/// warning per user that cannot fill the log or memory.
final class OnceEach: Sendable {
    private let seen = NIOLockedValueBox<Set<String>>([])
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// True the first time `key` is asked about, while fewer than `limit` keys were.
    func firstWarning(for key: String) -> Bool {
        seen.withLockedValue { seen in
            guard seen.count < limit, !seen.contains(key) else { return false }
            seen.insert(key)
            return true
        }
    }
}
