import NIOCore
import NIOWebSocket

/// A frame waiting to be written to one connection; `seq` is set for message frames.
///
/// It is kept as the bytes that go on the wire, the WebSocket frame's header included, made once: a message published
/// to a thousand connections is one buffer that all of them write (a `ByteBuffer` is copied on write, and nobody
/// writes to it). A server's frames are not masked, so the same bytes serve every connection; NIO's encoder would
/// write a header of its own for each, as a second buffer (it cannot prepend to a shared one).
struct OutboundFrame: Sendable {
    var seq: Int64?
    /// The whole text frame: its header (FIN, the text opcode, the length), then the text's UTF-8 bytes.
    let wire: ByteBuffer
    /// Where the text starts in ``wire``, past the header.
    private let headerLength: Int

    /// A frame of `text`.
    init(seq: Int64? = nil, text: String) {
        self.seq = seq
        let length = text.utf8.count
        // RFC 6455 §5.2: a 7-bit length, or 126 and 16 bits, or 127 and 64 bits; no mask from a server.
        headerLength = length <= 125 ? 2 : length <= Int(UInt16.max) ? 4 : 10
        var wire = ByteBufferAllocator().buffer(capacity: headerLength + length)
        wire.writeInteger(UInt8(0x80) | UInt8(webSocketOpcode: .text))
        switch headerLength {
        case 2:
            wire.writeInteger(UInt8(length))
        case 4:
            wire.writeInteger(UInt8(126))
            wire.writeInteger(UInt16(length))
        default:
            wire.writeInteger(UInt8(127))
            wire.writeInteger(UInt64(length))
        }
        wire.writeString(text)
        self.wire = wire
    }

    /// The text's bytes.
    var bytes: ByteBuffer {
        wire.getSlice(at: wire.readerIndex + headerLength, length: wire.readableBytes - headerLength) ?? ByteBuffer()
    }

    /// What the frame takes on the wire, in bytes: what a stream's queue counts against its bound.
    var size: Int { wire.readableBytes }
}
