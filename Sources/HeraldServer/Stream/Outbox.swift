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

/// The bounded queue of frames for one connection, bounded both in frames and in bytes, taken by its writer a batch
/// at a time.
///
/// Publishing never waits on a connection: a frame is added or, when the queue is full, the queue is closed and
/// marked overflowed, and the connection is dropped (the client resumes with `after`). So a slow reader cannot
/// hold up anyone else, and a connection that stops reading holds at most its byte limit of memory.
///
/// The writer takes everything queued at once (``nextBatch()``) and writes it with one flush, so a connection that
/// receives faster than its socket is written makes fewer, larger writes rather than falling behind.
final class Outbox: Sendable {
    private struct State {
        var frames: [OutboundFrame] = []
        var bytes = 0
        var overflowed = false
        var finished = false
        /// Why the server ends the stream once what is queued is written, if it does.
        var closeReason: String?
        var writer: CheckedContinuation<[OutboundFrame], Never>?
        /// The last seq the writer has written through (``written(through:)``).
        var writtenThrough: Int64 = 0
    }

    private let maxFrames: Int
    private let maxBytes: Int
    private let onOverflow: @Sendable () -> Void
    private let state = NIOLockedValueBox(State())

    /// An empty queue; `onOverflow` runs once if it overflows (on the thread of the send that overflowed it).
    init(frameLimit: Int, byteLimit: Int, onOverflow: @escaping @Sendable () -> Void = {}) {
        maxFrames = max(1, frameLimit)
        maxBytes = max(1, byteLimit)
        self.onOverflow = onOverflow
    }

    /// The writer writes everything of the user's up to `seq` (the catch-up's end, or a live frame's seq); told just
    /// before the write, as the client may answer before the write returns.
    func written(through seq: Int64) {
        state.withLockedValue { $0.writtenThrough = max($0.writtenThrough, seq) }
    }

    /// How far the connection's client can have taken in messages: what the writer wrote through.
    var writtenThrough: Int64 { state.withLockedValue { $0.writtenThrough } }

    /// Queues `frame`, or closes the queue if it is full.
    func send(_ frame: OutboundFrame) {
        let size = frame.bytes.readableBytes
        let wake = state.withLockedValue { state -> Wake in
            guard !state.finished else { return Wake() }
            guard state.frames.count < maxFrames, state.bytes + size <= maxBytes else {
                state.overflowed = true
                var wake = Self.finish(&state)
                wake.overflowed = true
                return wake
            }
            state.bytes += size
            state.frames.append(frame)
            guard let writer = state.writer else { return Wake() }
            state.writer = nil
            return Wake(writer: writer, batch: Self.take(&state))
        }
        resume(wake)
    }

    /// Everything queued, waiting until there is something; empty once the queue has ended (finished, overflowed,
    /// or the waiting task cancelled) and everything queued before that was taken. One writer at a time.
    func nextBatch() async -> [OutboundFrame] {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let batch = state.withLockedValue { state -> [OutboundFrame]? in
                    if !state.frames.isEmpty || state.finished { return Self.take(&state) }
                    state.writer = continuation
                    return nil
                }
                if let batch { continuation.resume(returning: batch) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Whether the queue overflowed.
    var overflowed: Bool { state.withLockedValue { $0.overflowed } }

    /// Ends the queue; frames already in it are still taken by the writer.
    func finish() {
        resume(state.withLockedValue { Self.finish(&$0) })
    }

    /// Ends the queue, and asks the writer to close the stream (1008, `reason`) once it has written what is queued.
    func finish(closing reason: String) {
        resume(state.withLockedValue { state in
            if !state.finished { state.closeReason = reason }
            return Self.finish(&state)
        })
    }

    /// Why the stream is to be closed once drained, if ``finish(closing:)`` said.
    var closeReason: String? { state.withLockedValue { $0.closeReason } }

    private func resume(_ wake: Wake) {
        wake.writer?.resume(returning: wake.batch)
        if wake.overflowed { onOverflow() }
    }

    /// Who to wake once the lock is let go: the waiting writer, and whether the queue has just overflowed.
    private struct Wake {
        var writer: CheckedContinuation<[OutboundFrame], Never>?
        var batch: [OutboundFrame] = []
        var overflowed = false
    }

    private static func finish(_ state: inout State) -> Wake {
        guard !state.finished else { return Wake() }
        state.finished = true
        var wake = Wake()
        if let writer = state.writer {
            state.writer = nil
            wake.writer = writer
            wake.batch = take(&state)
        }
        return wake
    }

    private static func take(_ state: inout State) -> [OutboundFrame] {
        defer {
            state.frames = []
            state.bytes = 0
        }
        return state.frames
    }
}
