import AsyncHTTPClient
import Foundation
import HeraldClient
import HeraldNIOTransport
import HeraldServer
import NIOConcurrencyHelpers

/// Durable posts through the real HTTP path: `herald serve` in a child process with its database in a file (as in
/// production), several client connections each posting as fast as it is answered. How many posts a second are
/// stored and acknowledged, how long each waits, and the server's CPU time per post.
public enum PostBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Client connections posting at once, one user each.
        public var connections = 64
        /// Members of each conversation the posters write to (the posters and people who never connect).
        public var groupSize = 10
        /// How long they post.
        public var duration: Duration = .seconds(10)

        /// 64 connections, groups of 10, 10 s.
        public init() {}
    }

    /// What one run measured.
    public struct Report: Sendable {
        /// What was measured.
        public var target = "one node, database in a file"
        /// The shape.
        public var options: Options
        /// Posts acknowledged (201) and refused.
        public var stored: Int, failed: Int
        /// Wall time of the run.
        public var elapsed: Duration
        /// Time from sending a post to its answer.
        public var p50: Duration, p99: Duration, max: Duration
        /// The server's CPU time (user and system) over the run.
        public var serverCPU: Duration?

        /// Posts stored a second.
        public var postsPerSecond: Double { Double(stored) / Swift.max(elapsed.seconds, 1e-9) }

        /// The report, for a terminal.
        public var text: String {
            func ms(_ duration: Duration) -> String { String(format: "%.2f ms", duration.seconds * 1000) }
            let cpu = serverCPU.flatMap { stored > 0 ? $0 / stored : nil }.map { String(format: "%.1f µs", $0.seconds * 1e6) }
            return """
                post (\(target)): \(options.connections) connections posting over HTTP for \
                \(String(format: "%.0f", options.duration.seconds)) s
                  stored \(stored) (\(failed) refused): \(String(format: "%.0f", postsPerSecond)) posts a second
                  latency post to answer: p50 \(ms(p50)), p99 \(ms(p99)), max \(ms(max))
                  server CPU per post: \(cpu ?? "unknown (no /proc)")
                """
        }
    }

    /// Runs the benchmark.
    public static func run(_ options: Options) async throws -> Report {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-post-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await ServerChild(database: folder.appendingPathComponent("herald.sqlite").path)
        do {
            let report = try await run(options, nodes: [server])
            await server.stop()
            return report
        } catch {
            await server.stop()
            throw error
        }
    }

    /// The posting against Herald nodes already running (their tokens signed with one secret): connection `i`
    /// posts to node `i % nodes.count`. The server CPU is the nodes' added up.
    static func run(_ options: Options, nodes: [ServerChild]) async throws -> Report {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: options.connections)
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            let report = try await measure(options, nodes: nodes, http: http)
            try await http.shutdown()
            return report
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    private static func measure(_ options: Options, nodes: [ServerChild], http: HTTPClient) async throws -> Report {
        guard let first = nodes.first else { throw BenchmarkError("no node to measure") }
        let tokens = await TokenAuthority(secret: first.secret)
        let usage = ProcessUsage(pids: nodes.flatMap(\.usage.pids))
        let groupSize = Swift.max(1, options.groupSize)
        var posters: [(api: HeraldAPI, conversation: String)] = []
        for index in 0..<options.connections {
            let token = try await tokens.token(userID: "poster-\(index)", name: "Poster \(index)")
            let node = nodes[index % nodes.count]
            let api = HeraldAPI(configuration: ClientConfiguration(server: node.url, token: token, transport: .nio(httpClient: http)))
            let others = (1..<groupSize).map { "reader-\(index)-\($0)" }
            try await SignIn.users(others, tokens: tokens, at: node.url, http: http)
            let conversation = try await api.createConversation(kind: .group, title: "Posts \(index)", members: others).id
            // One post each first, so every connection is open before the clock starts.
            try await api.postMessage(in: conversation, text: "warm up", id: "warm-\(index)")
            posters.append((api, conversation))
        }

        let recorder = LatencyRecorder()
        let failures = NIOLockedValueBox(0)
        let clock = ContinuousClock()
        let origin = clock.now
        let cpuBefore = usage.cpuTime()
        let start = clock.now
        let end = start + options.duration
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, poster) in posters.enumerated() {
                group.addTask {
                    var sequence = 0
                    while clock.now < end {
                        sequence += 1
                        let sentAt = clock.now
                        do {
                            try await poster.api.postMessage(in: poster.conversation, text: "post \(sequence)", id: "p\(index)-\(sequence)")
                            let answeredAt = clock.now
                            recorder.record(sentAt.duration(to: answeredAt), at: origin.duration(to: answeredAt))
                        } catch {
                            failures.withLockedValue { $0 += 1 }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = start.duration(to: clock.now)
        let cpuAfter = usage.cpuTime()
        let summary = recorder.summary()
        var serverCPU: Duration?
        if let cpuBefore, let cpuAfter { serverCPU = cpuAfter - cpuBefore }
        return Report(
            options: options, stored: summary.count, failed: failures.withLockedValue { $0 }, elapsed: elapsed,
            p50: summary.p50, p99: summary.p99, max: summary.max, serverCPU: serverCPU)
    }
}
