import Foundation
import HeraldPostgres
import HeraldServer
import Logging

/// The same workloads on one node with SQLite, one node with PostgreSQL, and several nodes sharing PostgreSQL, in
/// one run: how many posts a second are stored (``PostBenchmark``, connections spread over the nodes) and how long
/// a message takes from post to every member's stream (``StreamBenchmark``, clients spread over the nodes, so most
/// deliveries cross from one node to another through the database's notifications).
public enum ClusterBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// The fan-out measured for latency.
        public var stream = StreamBenchmark.Options()
        /// The posting measured for posts a second.
        public var posting = PostBenchmark.Options()
        /// A PostgreSQL server whose user may create databases: each configuration gets a new one, dropped after.
        public var postgresURL = ""
        /// Nodes in the last configuration.
        public var nodes = 3

        /// The stream and post benchmarks' own defaults, three nodes.
        public init() {}
    }

    /// One configuration's figures.
    public struct Row: Sendable {
        /// What ran: "1 node, SQLite", "3 nodes, PostgreSQL".
        public var name: String
        /// The posting figures.
        public var posting: PostBenchmark.Report
        /// The fan-out figures.
        public var stream: StreamBenchmark.Report
    }

    /// What one run measured.
    public struct Report: Sendable {
        /// The shape.
        public var options: Options
        /// One row a configuration, in the order they ran.
        public var rows: [Row]

        /// The summary table, for a terminal.
        public var text: String {
            func ms(_ duration: Duration) -> String { String(format: "%.2f ms", duration.seconds * 1000) }
            let stream = options.stream
            var lines = [
                "nodes: posts a second (\(options.posting.connections) connections posting over HTTP as fast as answered) "
                    + "and post to receive (\(stream.clients) streams in groups of \(stream.groupSize), "
                    + "\(stream.rate) messages a second), clients spread over the nodes",
                "  " + "configuration".padding(toLength: 22, withPad: " ", startingAt: 0)
                    + "posts/s".leftPadded(9) + "p50".leftPadded(11) + "p99".leftPadded(11) + "delivered".leftPadded(18),
            ]
            for row in rows {
                lines.append(
                    "  " + row.name.padding(toLength: 22, withPad: " ", startingAt: 0)
                        + String(format: "%.0f", row.posting.postsPerSecond).leftPadded(9)
                        + ms(row.stream.p50).leftPadded(11) + ms(row.stream.p99).leftPadded(11)
                        + "\(row.stream.delivered)/\(row.stream.expected)".leftPadded(18))
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Runs the three configurations one after the other, each on a new database, calling `progress` with each
    /// benchmark's full report as it finishes.
    public static func run(_ options: Options, progress: @Sendable (String) -> Void = { _ in }) async throws -> Report {
        guard options.nodes > 0 else { throw BenchmarkError("at least one node") }
        _ = try StreamBenchmark.descriptorLimit(for: options.stream)
        var logger = Logger(label: "herald-bench")
        logger.logLevel = .error
        let secret = ServerChild.randomSecret()
        var rows: [Row] = []

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-nodes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = folder.appendingPathComponent("herald.sqlite").path
        rows.append(try await measure("1 node, SQLite", options, progress: progress) {
            [try await ServerChild(database: sqlite, secret: secret)]
        })

        for count in options.nodes == 1 ? [1] : [1, options.nodes] {
            let name = count == 1 ? "1 node, PostgreSQL" : "\(count) nodes, PostgreSQL"
            let row = try await PostgresStore.withScratchDatabase(on: options.postgresURL, prefix: "herald_bench_", logger: logger) { url in
                try await measure(name, options, progress: progress) {
                    var nodes: [ServerChild] = []
                    do {
                        for index in 0..<count {
                            nodes.append(try await ServerChild(
                                database: folder.appendingPathComponent("unused-\(index).sqlite").path, secret: secret,
                                environment: ["HERALD_POSTGRES_URL": url]))
                        }
                    } catch {
                        for node in nodes { await node.stop() }
                        throw error
                    }
                    return nodes
                }
            }
            rows.append(row)
        }
        return Report(options: options, rows: rows)
    }

    /// Starts the nodes `start` makes, runs both benchmarks on them, and stops them.
    private static func measure(
        _ name: String, _ options: Options, progress: @Sendable (String) -> Void,
        start: () async throws -> [ServerChild]
    ) async throws -> Row {
        let nodes = try await start()
        do {
            let stream = try await StreamBenchmark.run(options.stream, nodes: nodes, name: name)
            progress(stream.text)
            var posting = try await PostBenchmark.run(options.posting, nodes: nodes)
            posting.target = name
            progress(posting.text)
            for node in nodes { await node.stop() }
            return Row(name: name, posting: posting, stream: stream)
        } catch {
            for node in nodes { await node.stop() }
            throw error
        }
    }
}

extension String {
    /// The string with spaces before it to `width` characters.
    fileprivate func leftPadded(_ width: Int) -> String {
        String(repeating: " ", count: Swift.max(0, width - count)) + self
    }
}
