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
