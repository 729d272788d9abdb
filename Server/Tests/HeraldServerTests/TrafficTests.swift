import Foundation
import NIOCore
import HeraldServer
import HeraldTestSupport
import Testing

/// Slow, silent and malformed HTTP traffic is answered or closed, never left holding the server.
@Suite("Malformed and slow HTTP traffic is refused or timed out; the server keeps answering", .timeLimit(.minutes(3)))
struct TrafficTests {
    @Test("300 half-sent requests and silent connections: /health still answers, and each is closed after the header timeout")
    func halfOpenRequests() async throws {
        try await TestServer.run(configure: { $0.timeouts.header = .seconds(3) }) { server in
            var connections: [RawConnection] = []
            for index in 0..<300 {
                let connection = try await RawConnection(port: server.port)
                // Half a head, or (one in ten) nothing at all.
                if index % 10 != 0 {
                    try await connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                }
                connections.append(connection)
            }
            let health = try await server.request("GET", "/health")
            #expect(health.status == 200, "the server answers others while 300 requests hang")

            // Every one is closed by the server: reading to the end returns (the suite's time limit bounds it).
            let closed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for connection in connections {
                    group.addTask {
                        _ = try await connection.readToEnd()
                        return connection.closedByServer
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(closed == 300)
        }
    }

    @Test("a kept-alive connection that goes quiet is closed after the idle timeout; one in use is not")
    func idleTimeout() async throws {
        try await TestServer.run(configure: { $0.timeouts.idle = .seconds(2) }) { server in
            let connection = try await RawConnection(port: server.port)
            try await connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            while !connection.text.contains("\r\n\r\n") { try await connection.read() }
            #expect(connection.text.hasPrefix("HTTP/1.1 200"))
            _ = try await connection.readToEnd()
            #expect(connection.closedByServer)
        }
    }

    @Test("oversized headers get 431, unparseable requests 400, each with a JSON error and a close")
    func malformedRequests() async throws {
        try await TestServer.run { server in
            let big = String(repeating: "a", count: 40 * 1024)
            let tlsClientHello: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0xA5, 0x01, 0x00, 0x00, 0xA1, 0x03, 0x03] + Array(repeating: 0x42, count: 64)
            let cases: [(name: String, bytes: [UInt8], status: String, code: String)] = [
                ("a huge header", Array("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: \(big)\r\n\r\n".utf8), "431", "too_large"),
                ("many headers", Array(("GET /health HTTP/1.1\r\nHost: x\r\n" + (0..<2_000).map { "X-\($0): \(big.prefix(20))\r\n" }.joined() + "\r\n").utf8), "431", "too_large"),
                ("two Content-Lengths", Array("POST /v1/conversations HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}".utf8), "400", "invalid_request"),
                ("Content-Length with Transfer-Encoding", Array("POST /v1/conversations HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8), "400", "invalid_request"),
                ("TLS on the plain port", tlsClientHello, "400", "invalid_request"),
                ("garbage", Array("\u{1}\u{2}\u{3} nonsense\r\n\r\n".utf8), "400", "invalid_request"),
            ]
            for (name, bytes, status, code) in cases {
                let connection = try await RawConnection(port: server.port)
                try await connection.send(bytes)
                let response = String(decoding: try await connection.readToEnd(), as: UTF8.self)
                #expect(response.hasPrefix("HTTP/1.1 \(status)"), "\(name): \(response.prefix(80))")
                #expect(response.lowercased().contains("connection: close"), "\(name)")
                #expect(response.contains(#""code":"\#(code)""#), "\(name)")
                #expect(connection.closedByServer, "\(name)")
            }
            #expect(try await server.request("GET", "/health").status == 200)
        }
    }
}

/// The stream's own rules against what a client sends and how fast it reads.
@Suite("The stream: after clamped, invalid UTF-8 closed with 1007, a slow reader with 1008, no gap at ready", .timeLimit(.minutes(3)))
struct StreamEdgeTests {
    @Test("an after beyond the latest seq is taken as the latest: ready says where the server is, and nothing is skipped")
    func afterIsClamped() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            try await server.post(alice, to: chat, text: "one")
            let latest = try await server.post(alice, to: chat, text: "two").seq
            let socket = try await server.stream(bob, after: 1_000_000)
            var frames = FrameReader(socket)
            let (caughtUp, ready) = try await frames.untilReady()
            #expect(caughtUp.isEmpty)
            #expect(ready.seq == latest)
            let next = try await server.post(alice, to: chat, text: "three")
            let live = try await frames.next()
            #expect(live.message?.seq == next.seq, "the next message arrives, not skipped as already seen")
            socket.close()
        }
    }

    @Test("the server pings every period; a client that answers stays, one that sends nothing is cut a period later")
    func keepAlive() async throws {
        // A period long enough for a client in a loaded test process to answer within it (1 s was not, once, with
        // every suite at once on CI's 2 cores).
        try await TestServer.run(configure: { $0.timeouts.ping = .seconds(3) }) { server in
            let alice = try await server.token("alice")
            let silent = try await RawWebSocket(port: server.port, path: "/v1/stream?token=\(alice)")
            let opened = ContinuousClock.now
            let frames = try await silent.untilClose()
            let lasted = ContinuousClock.now - opened
            #expect(frames.contains { $0.opcode == 0x9 }, "pinged")
            #expect(lasted > .seconds(3), "not cut at the ping, but a period after it: \(lasted)")
            await silent.close()

            let answering = try await RawWebSocket(port: server.port, path: "/v1/stream?token=\(alice)")
            var pings = 0
            while pings < 3 {
                guard let frame = try await answering.next() else { break }
                if frame.opcode == 0x9 {
                    pings += 1
                    try await answering.send(opcode: 0xA, frame.payload)
                }
            }
            #expect(pings == 3, "still open after three periods")
            await answering.close()
        }
    }

    @Test("HERALD_PING_INTERVAL sets the ping period in seconds; 30 without it; nothing but a positive number is taken")
    func pingSetting() throws {
        #expect(try ServerConfiguration.fromEnvironment([:]).timeouts.ping == .seconds(30))
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_PING_INTERVAL": "3600"]).timeouts.ping == .seconds(3600))
        for bad in ["0", "-5", "soon", "86401"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                _ = try ServerConfiguration.fromEnvironment(["HERALD_PING_INTERVAL": bad])
            }
        }
    }

    @Test("a text frame that is not UTF-8 closes the connection with 1007; the server carries on")
    func invalidUTF8() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let socket = try await RawWebSocket(port: server.port, path: "/v1/stream?token=\(alice)")
            let ready = try await socket.next()
            #expect(ready?.text.contains(#""ready""#) == true)
            try await socket.send(Array(#"{"type": "ping", "x": ""#.utf8) + [0xC3, 0x28, 0xFF] + Array(#""}"#.utf8))
            let frames = try await socket.untilClose()
            #expect(frames.last?.closeCode == 1007)
            await socket.close()
            let other = try await server.stream(alice)
            var reader = FrameReader(other)
            _ = try await reader.untilReady()
            other.close()
        }
    }

    @Test("a reader that falls behind by more than its byte budget is closed with 1008 after what was queued, and resumes")
    func slowReaderIsClosedWith1008() async throws {
        try await TestServer.run(configure: {
            $0.limits.streamBufferFrames = 1_000_000
            $0.limits.streamBufferBytes = 64 * 1024
            $0.timeouts.overflowDrain = .seconds(60)
            // Bob sends nothing, not even a pong, while Alice posts: under a busy machine's load that took over a
            // minute once, and a 30 s ping period then cut him without the close this test is about.
            $0.timeouts.ping = .seconds(600)
        }) { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let slow = try await RawWebSocket(port: server.port, path: "/v1/stream?token=\(bob)", receiveBuffer: 4096)
            #expect(try await slow.next()?.text.contains(#""ready""#) == true)

            // Alice posts far more than the socket buffers and the 64 KiB budget hold, while Bob reads nothing; in
            // rounds of 10, whose echo on her own stream (published together by one group commit) fits the budget.
            let sender = try await server.stream(alice)
            var acks = FrameReader(sender)
            _ = try await acks.untilReady()
            let text = String(repeating: "y", count: 3_900)
            let count = 1_500, batch = 10
            var last: Int64 = 0
            for start in stride(from: 0, to: count, by: batch) {
                for index in start..<(start + batch) {
                    sender.send(#"{"type": "send", "conversation": "\#(chat)", "id": "s\#(index)", "text": "\#(text)"}"#)
                }
                var acked = 0
                while acked < batch {
                    let frame = try await acks.next()
                    if frame.type == "ack" {
                        acked += 1
                        last = max(last, frame.seq ?? 0)
                    }
                }
            }
            // Now Bob reads: what was queued, in order, then the close.
            let frames = try await slow.untilClose()
            let messages = frames.filter { $0.opcode == 0x1 }.compactMap {
                try? JSONDecoder().decode(FrameJSON.self, from: Data($0.payload))
            }
            #expect(frames.last?.closeCode == 1008, "closed with the documented code")
            #expect(frames.last?.closeReason.contains("after") == true)
            let seqs = messages.compactMap { $0.message?.seq }
            #expect(seqs == seqs.sorted())
            #expect(seqs.count < count, "some were left for the resume")
            await slow.close()

            // Resuming with after gets the rest, each once.
            let resumed = try await server.stream(bob, after: seqs.last ?? 0)
            var reader = FrameReader(resumed)
            let (rest, _) = try await reader.untilReady()
            #expect(Set(seqs).isDisjoint(with: rest.compactMap { $0.message?.seq }))
            #expect(seqs.count + rest.count == count)
            #expect(rest.last?.message?.seq == last)
            resumed.close()
            sender.close()
        }
    }

    @Test("ready without after never leaves out a message stored while the connection was being set up")
    func noGapAtReady() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let poster = try await server.stream(alice)
            // Alice posts without pause while Bob connects again and again; each of Bob's connections must see every
            // message after its ready, from ready's seq + 1 on, with no gap.
            try await withBackground({ try await Self.keepPosting(poster, to: chat) }) {
                for _ in 0..<25 {
                    let socket = try await server.stream(bob)
                    var frames = FrameReader(socket)
                    let (before, ready) = try await frames.untilReady()
                    // What was stored while the connection was being set up comes before ready, up to ready's seq.
                    let caughtUp = before.compactMap { $0.message?.seq }
                    let from = ready.seq ?? -1
                    let beforeReady = caughtUp.filter { $0 > from }
                    #expect(beforeReady.isEmpty)
                    // A marker posted now has a seq after everything the connection could have missed.
                    let marker = try await server.post(bob, to: chat, text: "marker").seq
                    var live: [Int64] = []
                    while live.last != marker {
                        let frame = try await frames.next()
                        if let seq = frame.message?.seq { live.append(seq) }
                    }
                    #expect(live.first == from + 1, "the first message after ready is ready's seq + 1")
                    let all = caughtUp + live
                    #expect(all == Array((all.first ?? marker)...marker), "no gap, no duplicate")
                    socket.close()
                }
            }
            poster.close()
        }
    }

    /// Sends messages over `socket`, one after the other's ack, until cancelled.
    static func keepPosting(_ socket: TestSocket, to chat: String) async throws {
        var acks = FrameReader(socket)
        _ = try await acks.untilReady()
        var index = 0
        while !Task.isCancelled {
            socket.send(#"{"type": "send", "conversation": "\#(chat)", "id": "r\#(index)", "text": "\#(index)"}"#)
            index += 1
            if try await acks.next().type != "ack" { break }
        }
    }
}
