import NIOConcurrencyHelpers

/// A frame waiting to be written to one connection; `seq` is set for message frames.
struct OutboundFrame: Sendable {
    var seq: Int64?
    var text: String
}

/// The bounded queue of frames for one connection.
///
/// Publishing never waits on a connection: a frame is added or, when the queue is full, the queue is closed and
/// marked overflowed, and the connection is dropped (the client resumes with `after`). So a slow reader cannot
/// hold up anyone else.
final class Outbox: Sendable {
    let frames: AsyncStream<OutboundFrame>
    /// Yields once, when the queue overflows.
    let overflows: AsyncStream<Void>
    private let sink: AsyncStream<OutboundFrame>.Continuation
    private let overflowSink: AsyncStream<Void>.Continuation
    private let overflow = NIOLockedValueBox(false)

    init(limit: Int) {
        (frames, sink) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(max(1, limit)))
        (overflows, overflowSink) = AsyncStream.makeStream()
    }

    /// Queues `frame`, or closes the queue if it is full.
    func send(_ frame: OutboundFrame) {
        if case .dropped = sink.yield(frame) {
            overflow.withLockedValue { $0 = true }
            sink.finish()
            overflowSink.yield()
            overflowSink.finish()
        }
    }

    /// Whether the queue overflowed.
    var overflowed: Bool { overflow.withLockedValue { $0 } }

    /// Ends the queue; frames already in it are still delivered.
    func finish() {
        sink.finish()
        overflowSink.finish()
    }
}
