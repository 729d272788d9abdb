import DequeModule
import Foundation
import HeraldProtocol
import NIOCore
import NIOWebSocket

/// The rules of one stream, with no channel in them: its phase, the client's frames (fragments, budget, the ones
/// that wait), the bounded queue of frames for the client, the keep-alive, and when and how it closes.
///
/// A pure state machine in the style of ``LogOrder``: each input returns the ``Action``s to carry out, and nothing
/// happens otherwise. ``StreamHandler`` drives it on the channel's event loop and keeps the I/O: the writes, the
/// timers, the parsing of what the client asks, the hub. Frames are values (`WebSocketFrame`, ``OutboundFrame``),
/// time is the time since the stream opened, and the socket's state comes in as `writable`.
///
/// Where an input hands over more than a list can say (what is queued, while the socket takes it; the client's frames,
/// until one needs the database), the action says to pull: ``Action/writeQueued`` asks ``nextQueued()`` until it
/// says nil, then ``queueWritten()``; ``Action/handleFrames`` asks ``nextFrame()``, then ``framesHandled()``.
struct StreamMachine {
    /// How the server ends a stream once what is queued is written.
    struct Closing: Sendable, Equatable {
        var code: WebSocketErrorCode
        var reason: String
        /// Read nothing more from the client (a flood, a refusal, a stop): its input is shut once the close is written.
        var stopReading: Bool
    }

    /// The stream's phase (see ``StreamHandler``).
    enum Phase: Sendable, Equatable {
        case opening, catchingUp, live, closed
    }

    /// Why the stream is being closed, to be counted and logged.
    enum Note: Sendable, Equatable {
        /// The client kept sending past its frame budget.
        case flooding
        /// The client reads too slowly: its queue is full.
        case tooSlow
    }

    /// What to do after an input.
    enum Action: Sendable {
        /// Write this frame (not flushed).
        case write(OutboundFrame)
        /// Flush what was written.
        case flush
        /// Write ``nextQueued()`` while the socket takes it, then say ``queueWritten()``.
        case writeQueued
        /// Handle ``nextFrame()`` until it is nil, then say ``framesHandled()``.
        case handleFrames
        /// Read from the socket (a read held back goes on).
        case read
        /// Answer a ping with this data (written and flushed).
        case pong(ByteBuffer)
        /// Send a ping (written and flushed).
        case ping
        /// Write and flush the server's close; when it `stopReading`, shut the input and close the connection once
        /// it is written.
        case sendClose(Closing)
        /// The client closed: answer with its code, and close the connection once that is written.
        case answerClose(WebSocketErrorCode)
        /// Close the connection after this long (in place of an earlier cut); `noting`: log that the client
        /// stopped reading, if it is still connected then.
        case cut(after: Duration, noting: Bool)
        /// Close the connection now.
        case close
        /// Say ``refusalDue()`` after this long.
        case refuseLater(after: Duration)
        /// Count and log why the stream is closing.
        case note(Note)
    }

    /// Client frames held while one is being handled, before the socket is no longer read.
    static let readAhead = 16
    /// How long a client has to answer the server's close before it is cut.
    static let closeTimeout: Duration = .seconds(5)
    /// How long a refusal waits for a client that sends nothing.
    static let refusalWait: Duration = .seconds(1)

    private let limits: ServerLimits
    /// How long a closing stream's client has to take what is queued.
    private let overflowDrain: Duration
    private(set) var phase = Phase.opening
    /// Whether the stream was registered and its client's frames are handled.
    private var started = false

    // The client's side.
    private var budget: FrameBudget
    /// A message arriving in fragments: its opcode and what came so far.
    private var fragments: (opcode: WebSocketOpcode, data: ByteBuffer)?
    /// The client's text frames not handled yet.
    private var waiting: Deque<String> = []
    /// A `send` is being stored.
    private(set) var busy = false
    /// A read was held back while `waiting` was full.
    private var heldRead = false
    /// Whether the client sent anything yet (a refusal waits for it).
    private var heard = false
    private(set) var refusal: APIError?

    // The server's side.
    private var queue: Deque<OutboundFrame> = []
    private var queuedBytes = 0
    /// The catch-up's end: a queued live frame up to it was already written by the catch-up.
    private var caughtUpThrough: Int64 = 0
    /// How far the client can have taken in messages: what was written through.
    private(set) var writtenThrough: Int64 = 0
    private var unflushed = false
    private(set) var closing: Closing?
    private(set) var closeSent = false

    // Keeping the connection alive.
    private var heardSincePing = true
    private var pinged = false

    /// A stream in its opening, under `limits`; a closing stream's client has `overflowDrain` to take what is queued.
    init(limits: ServerLimits, overflowDrain: Duration) {
        self.limits = limits
        self.overflowDrain = overflowDrain
        budget = FrameBudget(burst: limits.streamFrameBurst, perSecond: limits.streamFramesPerSecond)
    }

    /// The frames and bytes queued for the client.
    var queued: (frames: Int, bytes: Int) { (queue.count, queuedBytes) }

    /// The client's frames waiting to be handled.
    var waitingFrames: Int { waiting.count }

    // MARK: The socket

    /// A frame from the client arrived, `at` this long after the stream opened.
    mutating func received(_ frame: WebSocketFrame, at now: Duration, writable: Bool) -> [Action] {
        heardSincePing = true
        switch frame.opcode {
        case .connectionClose:
            if closeSent { return [.close] }
            // The client closes: answer with its code, and close the connection once that is written.
            var data = frame.unmaskedData
            let code = data.readWebSocketErrorCode() ?? .normalClosure
            closeSent = true
            closing = Closing(code: code, reason: "", stopReading: true)
            return [.answerClose(code)]
        case .ping:
            guard !closeSent else { return [] }
            return [.pong(frame.unmaskedData)]
        case .pong:
            return []
        case .text, .binary:
            guard fragments == nil else { return fail(.protocolError, "a new message inside a fragmented one") }
            if frame.fin { return message(opcode: frame.opcode, data: frame.unmaskedData, at: now, writable: writable) }
            fragments = (frame.opcode, frame.unmaskedData)
            return []
        case .continuation:
            guard var message = fragments else { return fail(.protocolError, "a continuation with no message") }
            fragments = nil
            var data = frame.unmaskedData
            guard message.data.readableBytes + data.readableBytes <= limits.maxAcceptedFrameBytes else {
                return fail(.messageTooLarge, "message too large")
            }
            message.data.writeBuffer(&data)
            if frame.fin { return self.message(opcode: message.opcode, data: message.data, at: now, writable: writable) }
            fragments = message
            return []
        default:
            return fail(.protocolError, "unknown opcode")
        }
    }

    /// The pipeline asks for a read: true to read now, false to hold it back while too many frames wait.
    mutating func readRequested() -> Bool {
        guard waiting.count >= Self.readAhead else { return true }
        heldRead = true
        return false
    }

    /// The socket takes more (after it took no more): what is queued goes on.
    mutating func writable() -> [Action] {
        drain()
    }

    /// The keep-alive's period passed: a ping, or the end of a client that answered nothing since the last one.
    mutating func tick() -> [Action] {
        if pinged, !heardSincePing { return [.close] }
        pinged = true
        heardSincePing = false
        return [.ping]
    }

    /// The connection ended: nothing more is written or handled. False if it had already ended.
    mutating func ended() -> Bool {
        guard phase != .closed else { return false }
        phase = .closed
        queue.removeAll()
        queuedBytes = 0
        waiting.removeAll()
        return true
    }

    // MARK: The opening, the hub and the lanes

    /// The stream is registered: the client's frames are handled from now on. Nil if it closed while opening.
    mutating func start() -> [Action]? {
        guard phase == .opening else { return nil }
        started = true
        phase = .catchingUp
        return [.handleFrames]
    }

    /// A page of the catch-up: written with one flush. Nil once the stream closed or is closing.
    mutating func catchUp(_ frames: [OutboundFrame]) -> [Action]? {
        guard phase == .catchingUp, closing == nil else { return nil }
        return frames.compactMap { writing($0) } + flush()
    }

    /// The catch-up wrote everything through `through`: `ready`, then what queued meanwhile (after `through`).
    mutating func goLive(through: Int64, horizon: Int64?) -> [Action] {
        guard phase == .catchingUp else { return [] }
        phase = .live
        caughtUpThrough = through
        writtenThrough = max(writtenThrough, through)
        var actions: [Action] = []
        if closing == nil, let ready = writing(OutboundFrame(text: ServerFrame.ready(seq: through, horizon: horizon).text)) {
            actions.append(ready)
        }
        return actions + drain()
    }

    /// A frame for the client: written now when the stream is live, nothing is queued and the socket takes it, else
    /// queued; past the queue's bounds, the stream closes (1008) once what was queued before is written.
    mutating func enqueue(_ frame: OutboundFrame, flushing: Bool = false, writable: Bool) -> [Action] {
        guard phase != .closed, closing == nil else { return [] }
        if phase == .live, queue.isEmpty, writable {
            var actions = writing(frame).map { [$0] } ?? []
            if flushing { actions += flush() }
            return actions
        }
        let size = frame.size
        guard queue.count < limits.streamBufferFrames, queuedBytes + size <= limits.streamBufferBytes else {
            // Too slow: what was queued is still written, then the close.
            return [.note(.tooSlow)] + close(Closing(code: .policyViolation, reason: "too slow: reconnect with after", stopReading: false))
        }
        queue.append(frame)
        queuedBytes += size
        return []
    }

    /// What ``enqueue(_:flushing:writable:)`` does without flushing, in the usual case and without making a list of
    /// actions: a live stream with nothing queued whose socket takes more writes the frame now; anything else is
    /// left to ``enqueue(_:flushing:writable:)``.
    enum Direct {
        /// Write it now.
        case write(OutboundFrame)
        /// Nothing to write: the catch-up already wrote this message.
        case skip
        /// Not the usual case: call ``enqueue(_:flushing:writable:)``.
        case decide
    }

    /// The usual case of ``enqueue(_:flushing:writable:)`` (see ``Direct``); the same state changes as it.
    mutating func enqueueDirectly(_ frame: OutboundFrame, writable: Bool) -> Direct {
        guard phase == .live, closing == nil, queue.isEmpty, writable else { return .decide }
        if case .write(let written)? = writing(frame) { return .write(written) }
        return .skip
    }

    /// Flushes what was written, if anything was.
    mutating func flush() -> [Action] {
        takeFlush() ? [.flush] : []
    }

    /// Whether anything was written since the last flush; true once, until something is written again.
    mutating func takeFlush() -> Bool {
        guard unflushed else { return false }
        unflushed = false
        return true
    }

    /// Ends the stream once what is queued is written: nothing more is queued or handled, and a client that does not
    /// take it is cut after `overflowDrain`.
    mutating func close(_ closing: Closing) -> [Action] {
        guard phase != .closed, self.closing == nil else { return [] }
        self.closing = closing
        waiting.removeAll()
        return [.cut(after: overflowDrain, noting: true)] + drain()
    }

    /// Refuses the stream while it opens: an `error` frame, then a close (1008) with the code as reason; once the
    /// client sent its first frame, or after ``refusalWait``.
    mutating func refuse(_ error: APIError) -> [Action] {
        guard phase == .opening, refusal == nil else { return [] }
        refusal = error
        if heard { return sendRefusal() }
        return [.refuseLater(after: Self.refusalWait)]
    }

    /// The refusal's wait ended.
    mutating func refusalDue() -> [Action] {
        sendRefusal()
    }

    // MARK: Pulled by the handler

    /// The next queued frame to write, once the socket takes more; nil when none is (or the stream is not live).
    mutating func nextQueued() -> OutboundFrame? {
        guard phase == .live else { return nil }
        while let frame = queue.popFirst() {
            queuedBytes -= frame.size
            if case .write(let written)? = writing(frame) { return written }
        }
        return nil
    }

    /// The socket took what it would of the queue: a flush, and once all is written, the close, if one is due.
    mutating func queueWritten() -> [Action] {
        var actions = flush()
        if let closing, !closeSent, queue.isEmpty || phase != .live {
            actions += sendClose(closing)
        }
        return actions
    }

    /// The client's next text frame to handle; nil while a `send` is stored, once closing, before the start, or
    /// when none waits.
    mutating func nextFrame() -> String? {
        guard started, !busy, closing == nil else { return nil }
        return waiting.popFirst()
    }

    /// The frames were handled as far as they could be: a read held back goes on once there is room.
    mutating func framesHandled() -> [Action] {
        guard heldRead, waiting.count < Self.readAhead else { return [] }
        heldRead = false
        return [.read]
    }

    /// The frame just handled is a `send`, being stored: the frames after it wait for its answer.
    mutating func sending() {
        busy = true
    }

    /// The `send` was stored (or refused): its answer goes out, and the frames after it are handled.
    mutating func sent(_ answer: OutboundFrame, writable: Bool) -> [Action] {
        busy = false
        return enqueue(answer, flushing: true, writable: writable) + [.handleFrames]
    }

    // MARK: Rules

    /// A whole message from the client: it spends from the budget before anything else is done with it.
    private mutating func message(opcode: WebSocketOpcode, data: ByteBuffer, at now: Duration, writable: Bool) -> [Action] {
        heard = true
        if refusal != nil { return sendRefusal() }
        guard closing == nil else { return [] }
        switch budget.take(at: now) {
        case .accept:
            break
        case .refuse(let wait):
            let error = APIError.rateLimited(
                "more than \(limits.streamFramesPerSecond.formatted()) frames a second (bursts of \(limits.streamFrameBurst))",
                retryAfter: wait.seconds)
            return enqueue(OutboundFrame(text: ServerFrame.refusal(error, ref: nil).text), flushing: true, writable: writable)
        case .close:
            return [.note(.flooding)] + close(Closing(code: .policyViolation, reason: "too many frames", stopReading: true))
        }
        guard opcode == .text else {
            let error = APIError(.badRequest, .invalidRequest, "frames must be JSON text")
            return enqueue(OutboundFrame(text: ServerFrame.refusal(error, ref: nil).text), flushing: true, writable: writable)
        }
        guard let text = try? data.getUTF8ValidatedString(at: data.readerIndex, length: data.readableBytes) else {
            return fail(.dataInconsistentWithMessage, "text is not UTF-8")
        }
        waiting.append(text)
        return [.handleFrames]
    }

    /// Writes `frame`, unless the catch-up already wrote it; noting how far the client can have read.
    private mutating func writing(_ frame: OutboundFrame) -> Action? {
        if let seq = frame.seq {
            if phase == .live, seq <= caughtUpThrough { return nil }
            // Noted before the write: the client may answer before the write returns.
            writtenThrough = max(writtenThrough, seq)
        }
        unflushed = true
        return .write(frame)
    }

    /// Writes what is queued while the socket takes it; once all is written, the close, if one is due.
    private mutating func drain() -> [Action] {
        guard phase == .live || closing != nil else { return [] }
        if phase == .live { return [.writeQueued] }
        return queueWritten()
    }

    /// The close frame: a client that is not to be read any more is closed once it is written; another answers the
    /// close, or is cut after ``closeTimeout``.
    private mutating func sendClose(_ closing: Closing) -> [Action] {
        closeSent = true
        if closing.stopReading { return [.sendClose(closing)] }
        return [.sendClose(closing), .cut(after: Self.closeTimeout, noting: false)]
    }

    private mutating func sendRefusal() -> [Action] {
        guard let refusal, !closeSent else { return [] }
        let frame = writing(OutboundFrame(text: ServerFrame.refusal(refusal, ref: nil).text)).map { [$0] } ?? []
        return frame + sendClose(Closing(code: .policyViolation, reason: refusal.code.rawValue, stopReading: true))
    }

    /// A protocol error: the close, with nothing more read.
    private mutating func fail(_ code: WebSocketErrorCode, _ reason: String) -> [Action] {
        fragments = nil
        guard !closeSent else { return [] }
        let failure = Closing(code: code, reason: reason, stopReading: true)
        closing = failure
        return sendClose(failure)
    }
}
