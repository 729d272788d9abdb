import HeraldCore
import HeraldProtocol
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
@testable import HeraldServer

/// A stream's handler in its pipeline, driven frame by frame on an embedded channel: the WebSocket protocol, the
/// refusal, the catch-up's hand-over to live frames, the bounded queue, and the keep-alive.
@Suite("A stream lives in its channel's pipeline")
struct StreamHandlerTests {
    @Test("a frame made once for every stream is a whole WebSocket text frame, as NIO's decoder reads it, at each length encoding")
    func outboundFrameWire() throws {
        for length in [0, 1, 125, 126, 127, 65_535, 65_536, 70_000] {
            let text = String(repeating: "é", count: length / 2) + String(repeating: "a", count: length % 2)
            let frame = OutboundFrame(seq: 7, text: text)
            let reader = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
            try reader.writeInbound(frame.wire)
            let read = try #require(try reader.readInbound(as: WebSocketFrame.self))
            #expect(read.fin && read.opcode == .text && read.maskKey == nil)
            #expect(String(buffer: read.data) == text, "length \(length)")
            #expect(String(buffer: frame.bytes) == text)
            let header = length <= 125 ? 2 : length <= 65_535 ? 4 : 10
            #expect(frame.size == header + text.utf8.count, "the shortest length encoding (RFC 6455 §5.2)")
            #expect(try reader.readInbound(as: WebSocketFrame.self) == nil, "one frame, nothing after it")
        }
    }

    @Test("a refusal waits for the client's first frame (or a second), then an error frame and a close 1008 with the code")
    func refusal() throws {
        let stream = try Pipeline()
        stream.handler.refuse(APIError(.unauthorized, .invalidToken, "bad token"))
        #expect(try stream.next() == nil, "not before the client has shown it reads")
        try stream.send(.text, "{\"type\":\"ping\"}")
        #expect(try stream.nextText()?.contains("\"code\":\"invalid_token\"") == true)
        #expect(try stream.nextClose() == "1008 invalid_token")
        #expect(!stream.channel.isActive)

        let silent = try Pipeline()
        silent.handler.refuse(APIError(.unauthorized, .invalidToken, "bad token"))
        silent.channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(try silent.next() == nil)
        silent.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(try silent.nextText()?.contains("invalid_token") == true, "a client that sends nothing is told after a second")
        #expect(try silent.nextClose()?.hasPrefix("1008 ") == true)
    }

    @Test("the WebSocket protocol: ping gets pong, fragments are joined up to the limit, bad UTF-8 is 1007, a close is answered")
    func webSocketProtocol() throws {
        let stream = try Pipeline()
        try stream.channel.writeInbound(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "hi")))
        let pong = try stream.next()
        #expect(pong?.opcode == .pong && pong.map { String(buffer: $0.data) } == "hi")

        var limits = ServerLimits()
        limits.maxAcceptedFrameBytes = 8
        let small = try Pipeline(limits: limits)
        try small.channel.writeInbound(WebSocketFrame(fin: false, opcode: .text, data: ByteBuffer(string: "12345")))
        try small.channel.writeInbound(WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(string: "6789")))
        #expect(try small.nextClose()?.hasPrefix("1009 ") == true, "a message over the limit, however it is cut, closes with 1009")

        let garbled = try Pipeline()
        try garbled.channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: [0x7B, 0xFF, 0x7D])))
        #expect(try garbled.nextClose()?.hasPrefix("1007 ") == true)

        let closing = try Pipeline()
        var code = ByteBuffer()
        code.write(webSocketErrorCode: .goingAway)
        try closing.channel.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: code))
        #expect(try closing.nextClose() == "1001 ", "the client's close is answered with its code")
        #expect(!closing.channel.isActive)
    }

    @Test("a ping every period; a client that answers nothing a period after one is cut")
    func keepAlive() throws {
        var timeouts = ServerTimeouts()
        timeouts.ping = .seconds(30)
        let stream = try Pipeline(timeouts: timeouts)
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(try stream.next()?.opcode == .ping)
        try stream.channel.writeInbound(WebSocketFrame(fin: true, opcode: .pong, data: ByteBuffer()))
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(try stream.next()?.opcode == .ping, "it answered: pinged again")
        #expect(stream.channel.isActive)
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(!stream.channel.isActive, "silent for a period after a ping")
    }

    @Test("catch-up pages, then ready, then what came meanwhile that the catch-up did not send; each loop's deliveries take one flush; a pong after what was handed on before its ping")
    func catchUpThenLive() async throws {
        try await TestServer.run { server in
            let stream = try Pipeline()
            try stream.start(server)
            // Live frames arrive while the catch-up is still writing: they wait.
            stream.lane.add([(stream.peer, message(seq: 2)), (stream.peer, message(seq: 3))])
            stream.loop.run()
            #expect(try stream.next() == nil)
            let page = stream.handler.writeCatchUp([OutboundFrame(seq: nil, text: "catch-up 1"), OutboundFrame(seq: nil, text: "catch-up 2")])
            #expect(page != nil)
            #expect(try stream.nextText() == "catch-up 1")
            #expect(try stream.nextText() == "catch-up 2")
            stream.handler.goLive(through: 2, horizon: nil)
            #expect(try stream.nextText()?.contains("\"ready\"") == true)
            #expect(try stream.nextText()?.contains("seq 3") == true, "seq 2 came with the catch-up; seq 3 after ready")
            #expect(try stream.next() == nil)
            #expect(stream.handler.writtenThrough == 3)

            // Live: everything handed to the loop before it runs is one trip and one flush.
            let before = stream.flushes.count
            stream.lane.add((4...8).map { (stream.peer, message(seq: Int64($0))) })
            stream.lane.add([(stream.peer, message(seq: 9))])
            stream.loop.run()
            #expect(stream.flushes.count == before + 1)
            for seq in 4...9 { #expect(try stream.nextText()?.contains("seq \(seq)") == true) }

            // A ping read while a message waits in the lane is answered after it: a pong follows every frame handed
            // to the stream before its ping was read.
            stream.lane.add([(stream.peer, message(seq: 10))])
            try stream.send(.text, #"{"type":"ping"}"#)
            stream.loop.run()
            #expect(try stream.nextText()?.contains("seq 10") == true)
            #expect(try stream.nextText()?.contains("\"pong\"") == true)
            stream.close()
        }
    }

    @Test("a socket that takes no more: frames queue; past the queue's budget, what was queued is written, then a close 1008")
    func slowSocket() async throws {
        try await TestServer.run { server in
            var limits = ServerLimits()
            limits.streamBufferFrames = 3
            let stream = try Pipeline(limits: limits)
            try stream.start(server)
            stream.handler.goLive(through: 0, horizon: nil)
            _ = try stream.next()  // ready

            stream.channel.isWritable = false
            stream.lane.add((1...3).map { (stream.peer, message(seq: Int64($0))) })
            stream.loop.run()
            #expect(try stream.next() == nil, "queued while the socket takes no more")
            stream.lane.add([(stream.peer, message(seq: 4))])
            stream.loop.run()
            #expect(try stream.next() == nil)

            stream.channel.isWritable = true
            stream.channel.pipeline.fireChannelWritabilityChanged()
            for seq in 1...3 { #expect(try stream.nextText()?.contains("seq \(seq)") == true) }
            #expect(try stream.nextClose() == "1008 too slow: reconnect with after", "the fourth overflowed the queue")
            stream.close()
        }
    }

    @Test("focus and app frames reach the hub as the stream's presence")
    func presence() async throws {
        try await TestServer.run { server in
            let stream = try Pipeline()
            try stream.start(server)
            try stream.send(.text, #"{"type":"focus","conversation":"team"}"#)
            try stream.send(.text, #"{"type":"app","state":"background"}"#)
            let presence = server.environment.hub.presence(of: "ann")
            #expect(presence.map(\.focus) == ["team"])
            #expect(presence.map(\.appState) == [.background])
            stream.close()
            #expect(server.environment.hub.presence(of: "ann").isEmpty, "closed: gone from the hub")
        }
    }
}

/// A stream handler in an embedded channel, with a lane on the channel's loop.
private struct Pipeline {
    let channel = EmbeddedChannel()
    let handler: StreamHandler
    let flushes = FlushCounter()
    let lane: DeliveryLane
    let peer: StreamPeer

    /// The bytes the pipeline gave the socket, not yet read back as frames.
    let written = Written()

    init(limits: ServerLimits = ServerLimits(), timeouts: ServerTimeouts = ServerTimeouts()) throws {
        handler = StreamHandler(rules: StreamRules(limits: limits, timeouts: timeouts), logger: .init(label: "test"))
        // As after a real upgrade: NIO's encoder before the handler (which writes its own frames past it).
        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        try channel.pipeline.syncOperations.addHandler(flushes)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        lane = DeliveryLane(eventLoop: channel.embeddedEventLoop)
        peer = StreamPeer(handler, lane: lane)
    }

    var loop: EmbeddedEventLoop { channel.embeddedEventLoop }

    /// Registers the stream as ann's with `server`'s hub and starts it.
    func start(_ server: TestServer) throws {
        let environment = server.environment
        let connection = try #require(environment.hub.register(userID: "ann", peer: peer, limit: 10))
        handler.start(StreamHandler.Session(
            identity: Identity(userID: "ann", name: "Ann"), device: nil, connection: connection, peer: peer,
            services: environment.streams.streams, work: environment.streamWork))
    }

    /// Closes the connection: the stream leaves the hub.
    func close() {
        channel.close(promise: nil)
        loop.run()
    }

    func send(_ opcode: WebSocketOpcode, _ text: String) throws {
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: opcode, data: ByteBuffer(string: text)))
    }

    /// The next frame the server wrote, read back from the bytes given to the socket: frames made by the handler
    /// come whole, the others through NIO's encoder (header and data apart).
    func next() throws -> WebSocketFrame? {
        while let bytes = try channel.readOutbound(as: ByteBuffer.self) { written.bytes.writeImmutableBuffer(bytes) }
        return written.nextFrame()
    }

    func nextText() throws -> String? {
        guard let frame = try next() else { return nil }
        #expect(frame.opcode == .text)
        return String(buffer: frame.data)
    }

    /// The next frame, which must be a close: its code and reason, as "1008 reason".
    func nextClose() throws -> String? {
        guard let frame = try next() else { return nil }
        #expect(frame.opcode == .connectionClose)
        var data = frame.data
        guard let code = data.readWebSocketErrorCode() else { return nil }
        return "\(UInt16(webSocketErrorCode: code)) \(String(buffer: data))"
    }
}

/// Bytes a server wrote, read back frame by frame (RFC 6455 §5.2; a server's frames are not masked).
private final class Written {
    var bytes = ByteBuffer()

    func nextFrame() -> WebSocketFrame? {
        var rest = bytes
        guard let first = rest.readInteger(as: UInt8.self), let second = rest.readInteger(as: UInt8.self) else { return nil }
        #expect(second & 0x80 == 0, "a server's frame is not masked")
        var length = Int(second & 0x7F)
        if length == 126 {
            guard let long = rest.readInteger(as: UInt16.self) else { return nil }
            length = Int(long)
        } else if length == 127 {
            guard let long = rest.readInteger(as: UInt64.self) else { return nil }
            length = Int(long)
        }
        guard let data = rest.readSlice(length: length),
              let opcode = WebSocketOpcode(encodedWebSocketOpcode: first & 0x0F) else { return nil }
        bytes = rest
        return WebSocketFrame(fin: first & 0x80 != 0, opcode: opcode, data: data)
    }
}

private func message(seq: Int64) -> StreamDelivery {
    .frame(OutboundFrame(seq: seq, text: "seq \(seq)"))
}

private final class FlushCounter: ChannelOutboundHandler {
    typealias OutboundIn = WebSocketFrame
    private(set) var count = 0

    func flush(context: ChannelHandlerContext) {
        count += 1
        context.flush()
    }
}
