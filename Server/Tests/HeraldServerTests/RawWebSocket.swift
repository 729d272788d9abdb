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

/// Bytes to and from a server over one plain TCP connection, read at the test's pace.
/// (Used by one task at a time; unchecked so that a task group can own one each.)
///
/// The channel is served by a task of its own, which ends when the server closes the connection, when ``close()``
/// is called, or when the connection is released (its task is cancelled then): a connection never outlives its test.
final class RawConnection: @unchecked Sendable {
    private typealias Send = (bytes: [UInt8], written: CheckedContinuation<Void, any Error>)

    private var incoming: AsyncStream<ByteBuffer>.Iterator
    private let outgoing: AsyncStream<Send>.Continuation
    /// One element for each read the test asks for: nothing is read from the socket before, so a test that does
    /// not read pushes back on the server as a real slow client would.
    private let demands: AsyncStream<Void>.Continuation
    private let serving: Task<Void, Never>
    /// Bytes received and not yet consumed.
    private(set) var received: [UInt8] = []
    /// Whether the server closed the connection.
    private(set) var closedByServer = false

    /// Connects to `port`; with `receiveBuffer`, the socket's receive buffer is that small, so a test that stops
    /// reading soon pushes back on the server.
    init(port: Int, receiveBuffer: Int? = nil) async throws {
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if let receiveBuffer {
            bootstrap = bootstrap.channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer))
        }
        let channel = try await bootstrap.connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        let (incoming, incomingSink) = AsyncStream<ByteBuffer>.makeStream()
        let (outgoing, outgoingSink) = AsyncStream<Send>.makeStream()
        let (demands, demandSink) = AsyncStream<Void>.makeStream()
        self.incoming = incoming.makeAsyncIterator()
        self.outgoing = outgoingSink
        self.demands = demandSink
        // What arrives goes to `incoming`, what the test sends comes from `outgoing` (each send resumes once it was
        // written, so a test that floods waits for the socket); the connection closes when the server closes it, the
        // test finishes `outgoing`, or this task is cancelled.
        serving = Task {
            try? await channel.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var iterator = inbound.makeAsyncIterator()
                        for await _ in demands {
                            guard let buffer = try? await iterator.next() else { break }
                            incomingSink.yield(buffer)
                        }
                        incomingSink.finish()
                    }
                    group.addTask {
                        for await send in outgoing {
                            do {
                                try Task.checkCancellation()
                                try await outbound.write(ByteBuffer(bytes: send.bytes))
                                send.written.resume()
                            } catch {
                                send.written.resume(throwing: error)
                                throw error
                            }
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
            incomingSink.finish()
            // Sends that came too late fail rather than wait for ever.
            outgoingSink.finish()
            for await send in outgoing { send.written.resume(throwing: CancellationError()) }
        }
    }

    /// Sends `bytes`; returns once they were written to the socket. A cancelled task sends nothing.
    func send(_ bytes: [UInt8]) async throws {
        try Task.checkCancellation()
        try await withCheckedThrowingContinuation { (written: CheckedContinuation<Void, any Error>) in
            if case .terminated = outgoing.yield((bytes, written)) {
                written.resume(throwing: CancellationError())
            }
        }
    }

    func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    /// Reads once more; false when the server closed the connection.
    @discardableResult
    func read() async throws -> Bool {
        guard !closedByServer else { return false }
        demands.yield()
        guard let buffer = await incoming.next() else {
            closedByServer = true
            return false
        }
        received += buffer.readableBytesView
        return true
    }

    /// Reads until the server closes the connection; everything received.
    func readToEnd() async throws -> [UInt8] {
        while try await read() {}
        return received
    }

    /// Everything received, as text.
    var text: String { String(decoding: received, as: UTF8.self) }

    /// Takes `count` bytes off the front of what was received.
    func consume(_ count: Int) {
        received.removeFirst(count)
    }

    /// Closes the connection and waits until it is closed.
    func close() async {
        outgoing.finish()
        demands.finish()
        serving.cancel()
        await serving.value
    }

    deinit {
        outgoing.finish()
        demands.finish()
        serving.cancel()
    }
}

/// A WebSocket spoken byte by byte over a ``RawConnection``: frames sent exactly as given (invalid UTF-8 too), and
/// read only when the test asks.
final class RawWebSocket {
    let connection: RawConnection

    /// Upgrades `path` and reads the `101` response.
    init(port: Int, path: String, receiveBuffer: Int? = nil) async throws {
        connection = try await RawConnection(port: port, receiveBuffer: receiveBuffer)
        try await connection.send(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        while Self.headerEnd(connection.received) == nil {
            guard try await connection.read() else { throw TestFailure("closed before the upgrade") }
        }
        let end = Self.headerEnd(connection.received)!
        let status = String(decoding: connection.received[..<end], as: UTF8.self)
        guard status.hasPrefix("HTTP/1.1 101") else { throw TestFailure("not upgraded: \(status)") }
        connection.consume(end)
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index..<index + 4].elementsEqual([13, 10, 13, 10]) {
            return index + 4
        }
        return nil
    }

    /// Sends one masked frame with `payload` as it is.
    func send(opcode: UInt8 = 0x1, _ payload: [UInt8]) async throws {
        precondition(payload.count < 126)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        let masked = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try await connection.send([0x80 | opcode, 0x80 | UInt8(payload.count)] + mask + masked)
    }

    /// The next whole frame from the server, or nil once the connection is closed.
    func next() async throws -> RawWebSocketExchange.Frame? {
        while true {
            if let (frame, length) = Self.frame(in: connection.received) {
                connection.consume(length)
                return frame
            }
            guard try await connection.read() else { return nil }
        }
    }

    /// The frames up to and including the close frame (or the end of the connection).
    func untilClose() async throws -> [RawWebSocketExchange.Frame] {
        var frames: [RawWebSocketExchange.Frame] = []
        while let frame = try await next() {
            frames.append(frame)
            if frame.opcode == 0x8 { break }
        }
        return frames
    }

    private static func frame(in bytes: [UInt8]) -> (RawWebSocketExchange.Frame, Int)? {
        guard bytes.count >= 2 else { return nil }
        var length = Int(bytes[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            offset = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
            offset = 10
        }
        guard bytes.count >= offset + length else { return nil }
        return (RawWebSocketExchange.Frame(opcode: bytes[0] & 0x0F, payload: Array(bytes[offset..<offset + length])), offset + length)
    }

    func close() async {
        await connection.close()
    }
}
