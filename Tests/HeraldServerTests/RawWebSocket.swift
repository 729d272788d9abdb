import Foundation
import NIOCore
import NIOPosix

/// A plain TCP connection to `port` on loopback, for tests that need to control every byte.
func connectTCP(port: Int) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
    try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
}

/// What a server put on the wire in answer to a WebSocket upgrade, read with a plain TCP connection: the status
/// line, then each frame's opcode and payload. For checking exactly what a refused stream sends.
struct RawWebSocketExchange {
    struct Frame {
        var opcode: UInt8
        var payload: [UInt8]
        var text: String { String(decoding: payload, as: UTF8.self) }
        /// A close frame's code.
        var closeCode: UInt16? { opcode == 0x8 && payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil }
        /// A close frame's reason.
        var closeReason: String { String(decoding: payload.dropFirst(2), as: UTF8.self) }
    }

    var statusLine: String
    var frames: [Frame]

    /// Upgrades `path` on `port` and reads until the server closes the connection (or `limit` bytes).
    static func run(port: Int, path: String, limit: Int = 1 << 16) async throws -> RawWebSocketExchange {
        let channel = try await connectTCP(port: port)
        var received: [UInt8] = []
        try await channel.executeThenClose { inbound, outbound in
            let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
            try await outbound.write(ByteBuffer(string: request))
            for try await buffer in inbound {
                received += buffer.readableBytesView
                if received.count > limit || Self.hasClose(received) { break }
            }
        }
        return try Self.parse(received)
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index..<index + 4].elementsEqual([13, 10, 13, 10]) {
            return index + 4
        }
        return nil
    }

    private static func hasClose(_ bytes: [UInt8]) -> Bool {
        guard let start = headerEnd(bytes), let frames = try? frames(in: Array(bytes[start...])) else { return false }
        return frames.contains { $0.opcode == 0x8 }
    }

    private static func parse(_ bytes: [UInt8]) throws -> RawWebSocketExchange {
        guard let start = headerEnd(bytes) else { throw TestFailure("no HTTP response") }
        let header = String(decoding: bytes[..<start], as: UTF8.self)
        let statusLine = header.components(separatedBy: "\r\n").first ?? ""
        return RawWebSocketExchange(statusLine: statusLine, frames: try frames(in: Array(bytes[start...])))
    }

    /// Unmasked server frames, each whole; a partial frame at the end is left out.
    private static func frames(in bytes: [UInt8]) throws -> [Frame] {
        var frames: [Frame] = []
        var index = 0
        while index + 2 <= bytes.count {
            let opcode = bytes[index] & 0x0F
            var length = Int(bytes[index + 1] & 0x7F)
            var offset = index + 2
            if length == 126 {
                guard offset + 2 <= bytes.count else { break }
                length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                offset += 2
            } else if length == 127 {
                throw TestFailure("unexpectedly large frame")
            }
            guard offset + length <= bytes.count else { break }
            frames.append(Frame(opcode: opcode, payload: Array(bytes[offset..<offset + length])))
            index = offset + length
        }
        return frames
    }
}
