import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// A frame waiting to be written to one connection; `seq` is set for message frames.
///
/// The text is kept as the bytes that go on the wire, encoded once: a message published to a thousand connections is
/// one buffer that all their queues share (a `ByteBuffer` is copied on write, and nobody writes to it).
struct OutboundFrame: Sendable {
    var seq: Int64?
    var bytes: ByteBuffer

    /// A frame of `text`.
    init(seq: Int64? = nil, text: String) {
        self.seq = seq
        bytes = ByteBuffer(string: text)
    }

    /// The WebSocket text frame that carries it.
    var webSocketFrame: WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: bytes)
    }
}

/// The bounded queue of frames for one connection, bounded both in frames and in bytes.
///
/// Publishing never waits on a connection: a frame is added or, when the queue is full, the queue is closed and
/// marked overflowed, and the connection is dropped (the client resumes with `after`). So a slow reader cannot
/// hold up anyone else, and a connection that stops reading holds at most its byte limit of memory.
final class Outbox: Sendable {
    private struct State {
        var bytes = 0
        var overflowed = false
    }

    let frames: AsyncStream<OutboundFrame>
    /// Yields once, when the queue overflows.
    let overflows: AsyncStream<Void>
    private let sink: AsyncStream<OutboundFrame>.Continuation
    private let overflowSink: AsyncStream<Void>.Continuation
    private let maxBytes: Int
    private let state = NIOLockedValueBox(State())

    init(frameLimit: Int, byteLimit: Int) {
        (frames, sink) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(max(1, frameLimit)))
        (overflows, overflowSink) = AsyncStream.makeStream()
        maxBytes = max(1, byteLimit)
    }

    /// Queues `frame`, or closes the queue if it is full.
    func send(_ frame: OutboundFrame) {
        let size = frame.bytes.readableBytes
        let fits = state.withLockedValue { state -> Bool in
            guard !state.overflowed else { return false }
            guard state.bytes + size <= maxBytes else {
                state.overflowed = true
                return false
            }
            state.bytes += size
            return true
        }
        guard fits else { return overflow() }
        if case .dropped = sink.yield(frame) {
            state.withLockedValue { $0.overflowed = true }
            overflow()
        }
    }

    /// The writer took `frame` off the queue: its bytes no longer count.
    func taken(_ frame: OutboundFrame) {
        let size = frame.bytes.readableBytes
        state.withLockedValue { $0.bytes -= size }
    }

    private func overflow() {
        sink.finish()
        overflowSink.yield()
        overflowSink.finish()
    }

    /// Whether the queue overflowed.
    var overflowed: Bool { state.withLockedValue { $0.overflowed } }

    /// Ends the queue; frames already in it are still delivered.
    func finish() {
        sink.finish()
        overflowSink.finish()
    }
}
