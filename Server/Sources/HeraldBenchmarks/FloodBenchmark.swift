import Foundation
import HeraldClient
import HeraldNIOTransport
import HeraldServer
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// One user floods the server with stream frames (pings, written as fast as the sockets take them, reconnecting
/// whenever a stream is closed) while another user posts: how long the poster waits for each post, against the same posts with
/// nobody flooding. Run twice in one go, on `herald serve` in a child process: with the frame budgets as shipped,
/// and with them lifted (as the server was before it had them), so the two are measured on the same machine at the
/// same time.
public enum FloodBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// The flooding user's streams.
        public var streams = 4
        /// Posts measured in each phase, one after another.
        public var posts = 300
        /// Frames each stream writes every 100 ms; 0 for as fast as its socket takes them. A paced flood takes each
        /// token of the frame budget as it is earned back, so it is refused most frames without ever pausing.
        public var paced = 0
        /// Whether the same posts are measured again with the budgets lifted (the server before it had them): the
        /// peer figure. Off, for a debug build, where an unbudgeted flood makes each post take seconds.
        public var withoutBudgets = true

        /// 4 flooding streams (a user may have 20), 300 posts.
        public init() {}
    }

    /// What one server configuration measured.
    public struct Phase: Sendable {
        /// The configuration's name.
        public var name: String
        /// Post latency with nobody flooding, and during the flood: p50, p99, max.
        public var quiet: (p50: Duration, p99: Duration, max: Duration)
        public var flooded: (p50: Duration, p99: Duration, max: Duration)
        /// Frames the flooding streams wrote (the sockets took) while the posts were measured.
        public var framesSent: Int
        /// Times a flooding stream was closed or refused and connected again.
        public var reconnects: Int
    }

    /// What a run measured.
    public struct Report: Sendable {
        /// The shape.
        public var options: Options
        /// With the budgets, then without.
        public var phases: [Phase]

        /// The report, for a terminal.
        public var text: String {
            func ms(_ duration: Duration) -> String { String(format: "%.2f", duration.seconds * 1000) }
            let pace = options.paced > 0 ? "\(options.paced) ping frames every 100 ms" : "ping frames as fast as their sockets take them"
            var lines = [
                "flood: one user's \(options.streams) streams write \(pace), "
                    + "reconnecting when closed, while another posts \(options.posts) messages one after another "
                    + "(server in a child process)",
                "  configuration                      quiet p50/p99 ms   flooded p50/p99 ms   frames written    reconnects",
            ]
            for phase in phases {
                lines.append(
                    "  " + phase.name.padding(toLength: 35, withPad: " ", startingAt: 0)
                        + "\(ms(phase.quiet.p50)) / \(ms(phase.quiet.p99))".padding(toLength: 19, withPad: " ", startingAt: 0)
                        + "\(ms(phase.flooded.p50)) / \(ms(phase.flooded.p99))".padding(toLength: 21, withPad: " ", startingAt: 0)
                        + String(phase.framesSent).padding(toLength: 18, withPad: " ", startingAt: 0)
                        + String(phase.reconnects))
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Runs the benchmark: the shipped budgets, then none.
    public static func run(_ options: Options) async throws -> Report {
        let shipped = ServerLimits()
        let budgets = [
            ("frame budgets (as shipped)", [
                "HERALD_LIMIT_STREAM_FRAMES_PER_SECOND": String(shipped.streamFramesPerSecond),
                "HERALD_LIMIT_STREAM_FRAME_BURST": String(shipped.streamFrameBurst),
                "HERALD_LIMIT_STREAM_OPENS_PER_MINUTE": String(shipped.streamOpensPerMinute),
            ]),
            ("no frame budgets (as before)", [:]),
        ].prefix(options.withoutBudgets ? 2 : 1)
        var phases: [Phase] = []
        for (name, environment) in budgets {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-flood-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let server = try await ServerChild(
                database: folder.appendingPathComponent("herald.sqlite").path, environment: environment)
            do {
                phases.append(try await measure(options, name: name, server: server))
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
        }
        return Report(options: options, phases: phases)
    }

    private static func measure(_ options: Options, name: String, server: ServerChild) async throws -> Phase {
        let tokens = await TokenAuthority(secret: server.secret)
        let poster = HeraldAPI(configuration: ClientConfiguration(
            server: server.url, token: try await tokens.token(userID: "poster", name: "Poster"), transport: .nio()))
        let flooder = try await tokens.token(userID: "flooder", name: "Flooder")
        try await SignIn.users(["friend"], tokens: tokens, at: server.url)
        let conversation = try await poster.createConversation(kind: .direct, members: ["friend"]).id

        _ = try await Latencies.posts(20, by: poster, to: conversation, tag: "warm-up")
        let quiet = try await Latencies.posts(options.posts, by: poster, to: conversation, tag: "quiet")

        let counts = NIOLockedValueBox((stop: false, sent: 0, reconnects: 0))
        // Masked ping frames (1,000, or the pace's), written as one buffer again and again.
        let ping = Array(#"{"type":"ping"}"#.utf8)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        let frame = [0x81, 0x80 | UInt8(ping.count)] + mask + ping.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        let perChunk = options.paced > 0 ? options.paced : 1_000
        let chunk = ByteBuffer(bytes: Array(repeating: frame, count: perChunk).flatMap { $0 })
        let pause: Duration? = options.paced > 0 ? .milliseconds(100) : nil
        let upgrade = ByteBuffer(string:
            "GET /v1/stream?token=\(flooder) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        let port = server.port
        return try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<options.streams {
                group.addTask {
                    while !counts.withLockedValue({ $0.stop }) {
                        // A plain TCP connection writing frames as fast as the socket takes them (an attacker's
                        // client, which need not be a WebSocket library), reading and dropping what comes back.
                        try? await flood(port: port, upgrade: upgrade, chunk: chunk, pause: pause) {
                            counts.withLockedValue { state in
                                state.sent += perChunk
                                return state.stop
                            }
                        }
                        guard !counts.withLockedValue({ $0.stop }) else { break }
                        counts.withLockedValue { $0.reconnects += 1 }
                        // A refused reconnection (too many opened a minute) is tried again shortly.
                        try await Task.sleep(for: .milliseconds(20))
                    }
                }
            }
            // The flood gets going before the posts are measured.
            try await Task.sleep(for: .milliseconds(500))
            let sentBefore = counts.withLockedValue { $0.sent }
            let flooded = try await Latencies.posts(options.posts, by: poster, to: conversation, tag: "flooded")
            let sent = counts.withLockedValue { state in
                state.stop = true
                return state.sent - sentBefore
            }
            try await group.waitForAll()
            return Phase(
                name: name, quiet: Latencies.summary(quiet), flooded: Latencies.summary(flooded), framesSent: sent,
                reconnects: counts.withLockedValue { $0.reconnects })
        }
    }

    /// Connects, upgrades to the stream, and writes `chunk` (then waits `pause`, if any) until `wrote()` says stop or
    /// the server closes.
    private static func flood(
        port: Int, upgrade: ByteBuffer, chunk: ByteBuffer, pause: Duration?, wrote: @escaping @Sendable () -> Bool
    ) async throws {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(upgrade)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { for try await _ in inbound {} }
                group.addTask {
                    while true {
                        try await outbound.write(chunk)
                        if wrote() { return }
                        if let pause { try await Task.sleep(for: pause) }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }
}
