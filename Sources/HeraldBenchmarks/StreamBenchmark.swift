import Foundation
import HeraldCore
import HeraldServer
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers

/// Many connected clients in group conversations, messages at a steady rate: how long from post to receipt,
/// and how many deliveries a second. The server runs in this process on a free port with an in-memory database.
public enum StreamBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Connected clients, one user each.
        public var clients = 1_000
        /// Members of each group conversation (clients / groupSize groups).
        public var groupSize = 10
        /// Messages posted a second, spread evenly.
        public var rate = 1_000
        /// How long messages are posted.
        public var duration: Duration = .seconds(10)

        /// The issue's target shape: 1,000 clients in 100 groups of 10, 1,000 messages a second, for 10 s.
        public init() {}
    }

    /// What one run measured.
    public struct Report: Sendable {
        /// The shape.
        public var options: Options
        /// Messages posted (through the stream's `send`).
        public var sent: Int
        /// Message frames received by all clients.
        public var delivered: Int
        /// Deliveries expected (each message to every member's connection, the sender's included).
        public var expected: Int
        /// Post-to-receive latency percentiles.
        public var p50: Duration, p99: Duration, max: Duration
        /// The file descriptors this process may open, and so the most clients it could have run.
        public var descriptors = 0, maximumClients = 0
        /// Wall time from the first post to the last delivery.
        public var elapsed: Duration

        /// Deliveries a second.
        public var deliveriesPerSecond: Double { Double(delivered) / Swift.max(elapsed.seconds, 1e-9) }

        /// The report, for a terminal.
        public var text: String {
            func ms(_ duration: Duration) -> String { String(format: "%.2f ms", duration.seconds * 1000) }
            return """
                stream: \(options.clients) clients in \(options.clients / options.groupSize) groups of \(options.groupSize), \
                \(options.rate) messages a second for \(String(format: "%.0f", options.duration.seconds)) s
                  sent \(sent), delivered \(delivered) of \(expected)
                  latency post to receive: p50 \(ms(p50)), p99 \(ms(p99)), max \(ms(max))
                  deliveries: \(String(format: "%.0f", deliveriesPerSecond)) a second
                  file descriptors: \(descriptors) allowed, enough for \(maximumClients) clients
                """
        }
    }

    /// How many clients a process allowed `descriptors` open files can run: each client needs two (its socket and the
    /// in-process server's end), and the server and the clients' side each keep ``FileDescriptorLimit/reserve``.
    public static func maximumClients(descriptors: Int) -> Int {
        Swift.max(0, (descriptors - 2 * FileDescriptorLimit.reserve) / 2)
    }

    /// Runs the benchmark.
    ///
    /// - Throws: ``BenchmarkError``, before connecting anyone, when more clients are asked for than the process's
    ///   descriptor limit allows (raised to its hard limit first): it says how many can run.
    public static func run(_ options: Options) async throws -> Report {
        let descriptors = FileDescriptorLimit.raise()
        let most = maximumClients(descriptors: descriptors)
        guard options.clients <= most else {
            throw BenchmarkError(
                "\(options.clients) clients need about \(2 * options.clients + 2 * FileDescriptorLimit.reserve) file "
                    + "descriptors, and this process may open \(descriptors) (ulimit -n, at its hard limit): at most "
                    + "\(most) clients here. Raise the hard limit or run fewer.")
        }
        var logger = Logger(label: "herald-bench")
        logger.logLevel = .error
        var configuration = ServerConfiguration()
        configuration.databasePath = ":memory:"
        var report = try await BenchmarkServer.run(configuration, logger: logger) { [logger] port, environment in
            try await measure(options, port: port, environment: environment, logger: logger)
        }
        report.descriptors = descriptors
        report.maximumClients = most
        return report
    }

    private static func measure(
        _ options: Options,
        port: Int,
        environment: ServerEnvironment,
        logger: Logger
    ) async throws -> Report {
        let groupSize = Swift.max(1, options.groupSize)
        let users = (0..<options.clients).map { "user-\($0)" }
        var groups: [(id: String, members: [Int])] = []
        for start in stride(from: 0, to: users.count, by: groupSize) {
            let members = Array(start..<Swift.min(start + groupSize, users.count))
            let record = try await environment.store.createConversation(
                kind: .group, title: "Group \(start / groupSize)", memberIDs: members.map { users[$0] }).record
            groups.append((record.conversation.id, members))
        }
        let recorder = LatencyRecorder()
        let writers = NIOLockedValueBox<[Int: WebSocketOutboundWriter]>([:])
        let (readiness, readySink) = AsyncStream<Void>.makeStream()
        let clock = ContinuousClock()
        let origin = clock.now

        return try await withThrowingTaskGroup(of: Void.self) { clients in
            for (index, user) in users.enumerated() {
                let token = try await environment.tokens.token(userID: user, name: "User \(index)")
                clients.addTask {
                    try await WebSocketClient.connect(
                        url: "ws://127.0.0.1:\(port)/v1/stream?token=\(token)", logger: logger
                    ) { inbound, outbound, _ in
                        writers.withLockedValue { $0[index] = outbound }
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            guard case .text(let text) = message else { continue }
                            if text.contains(#""type":"ready""#) {
                                readySink.yield()
                            } else if let sentAt = Self.sentAt(in: text) {
                                let receivedAt = origin.duration(to: clock.now)
                                recorder.record(receivedAt - .nanoseconds(sentAt), at: receivedAt)
                            }
                        }
                    }
                }
            }
            var ready = 0
            for await _ in readiness {
                ready += 1
                if ready == users.count { break }
            }

            let interval = Duration.seconds(1) / Swift.max(1, options.rate)
            let total = Int(options.duration.seconds * Double(options.rate))
            let writersByClient = writers.withLockedValue { $0 }
            var generator = SystemRandomNumberGenerator()
            let start = clock.now
            for sequence in 0..<total {
                try await clock.sleep(until: start + interval * sequence, tolerance: nil)
                let group = groups[sequence % groups.count]
                let sender = group.members[Int.random(in: 0..<group.members.count, using: &generator)]
                let sentAt = origin.duration(to: clock.now)
                let nanos = sentAt.components.seconds * 1_000_000_000 + sentAt.components.attoseconds / 1_000_000_000
                let frame = #"{"type":"send","conversation":"\#(group.id)","id":"b\#(sequence)","text":"t=\#(nanos);"}"#
                try await writersByClient[sender]?.write(.text(frame))
            }
            let expected = (0..<total).reduce(0) { $0 + groups[$1 % groups.count].members.count }
            let settle = clock.now + .seconds(10)
            while recorder.count < expected, clock.now < settle {
                try await clock.sleep(for: .milliseconds(20), tolerance: nil)
            }
            let elapsed = start.duration(to: recorder.lastAt.map { origin + $0 } ?? clock.now)
            clients.cancelAll()
            let summary = recorder.summary()
            return Report(
                options: options, sent: total, delivered: summary.count, expected: expected,
                p50: summary.p50, p99: summary.p99, max: summary.max, elapsed: elapsed
            )
        }
    }

    /// The send time stamped in a message frame's text (`t=<nanoseconds>;`).
    private static func sentAt(in frame: String) -> Int64? {
        guard let marker = frame.range(of: "t=") else { return nil }
        let digits = frame[marker.upperBound...].prefix { $0.isNumber }
        return Int64(digits)
    }
}

/// Latencies from many connections.
final class LatencyRecorder: Sendable {
    private let samples = NIOLockedValueBox<(values: [Duration], last: Duration?)>(([], nil))

    func record(_ latency: Duration, at receivedAt: Duration) {
        samples.withLockedValue {
            $0.values.append(latency)
            $0.last = Swift.max($0.last ?? receivedAt, receivedAt)
        }
    }

    var count: Int { samples.withLockedValue { $0.values.count } }
    var lastAt: Duration? { samples.withLockedValue { $0.last } }

    func summary() -> (count: Int, p50: Duration, p99: Duration, max: Duration) {
        let sorted = samples.withLockedValue { $0.values }.sorted()
        guard !sorted.isEmpty else { return (0, .zero, .zero, .zero) }
        func at(_ fraction: Double) -> Duration { sorted[Swift.min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
        return (sorted.count, at(0.5), at(0.99), sorted[sorted.count - 1])
    }
}

/// A benchmark that could not run.
public struct BenchmarkError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    init(_ description: String) { self.description = description }
}
