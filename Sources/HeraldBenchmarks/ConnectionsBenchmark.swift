import Foundation
import HeraldServer
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers

/// What idle stream connections cost the server in memory, and whether it reuses what closed ones held: a fresh
/// `herald serve` in a child process; rounds of opening many streams (one user each), holding them idle, and closing
/// them all; its resident memory read from `/proc` at each step.
public enum ConnectionsBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Streams open at once in each round.
        public var clients = 1_000
        /// Rounds of opening and closing them.
        public var rounds = 5

        /// 1,000 streams, 5 rounds.
        public init() {}
    }

    /// What one run measured.
    public struct Report: Sendable {
        /// The shape.
        public var options: Options
        /// Resident bytes before any stream was opened.
        public var baseline: Int
        /// Resident bytes with every stream of each round open, and after each round's streams closed.
        public var open: [Int], closed: [Int]

        /// Bytes per idle stream: the first round's growth over the fresh server's memory.
        public var bytesPerConnection: Double {
            Double((open.first ?? baseline) - baseline) / Double(Swift.max(1, options.clients))
        }

        /// Growth from the first round's close to the last's, per stream opened in between.
        public var growthPerConnection: Double {
            guard closed.count > 1, let first = closed.first, let last = closed.last else { return 0 }
            return Double(last - first) / Double(options.clients * (closed.count - 1))
        }

        /// The report, for a terminal.
        public var text: String {
            func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
            return """
                connections: \(options.clients) idle streams (one user each), opened and closed \(options.rounds) times
                  server resident memory: \(mib(baseline)) before; open \(open.map(mib).joined(separator: ", ")); \
                closed \(closed.map(mib).joined(separator: ", "))
                  per idle stream: \(String(format: "%.1f KiB", bytesPerConnection / 1024))
                  growth per stream opened and closed after the first round: \(String(format: "%.2f KiB", growthPerConnection / 1024))
                """
        }
    }

    /// Runs the benchmark.
    public static func run(_ options: Options) async throws -> Report {
        _ = FileDescriptorLimit.raise()
        var logger = Logger(label: "herald-bench")
        logger.logLevel = .error
        let server = try await ServerChild(database: ":memory:")
        do {
            let report = try await measure(options, server: server, logger: logger)
            await server.stop()
            return report
        } catch {
            await server.stop()
            throw error
        }
    }

    private static func measure(_ options: Options, server: ServerChild, logger: Logger) async throws -> Report {
        let tokens = await TokenAuthority(secret: server.secret)
        var clients: [String] = []
        for index in 0..<options.clients {
            clients.append(try await tokens.token(userID: "idle-\(index)", name: "Idle \(index)"))
        }
        // A fresh server: memory freed when streams close stays with the allocator and is reused by the next ones, so
        // only the first round's growth shows what a stream holds (after that, growth shows what is not reused).
        try await settle()
        guard let baseline = server.usage.residentBytes() else { throw BenchmarkError("no /proc to read memory from") }
        var open: [Int] = [], closed: [Int] = []
        for _ in 0..<options.rounds {
            try await round(clients, port: server.port, logger: logger) {
                try await settle()
                open.append(server.usage.residentBytes() ?? 0)
            }
            try await settle()
            closed.append(server.usage.residentBytes() ?? 0)
        }
        return Report(options: options, baseline: baseline, open: open, closed: closed)
    }

    private static func settle() async throws {
        try await Task.sleep(for: .seconds(1))
    }

    /// Opens a stream for each token, waits until every one is `ready`, runs `whileOpen`, then closes them all and
    /// waits until they are closed.
    private static func round(
        _ tokens: [String], port: Int, logger: Logger, whileOpen: () async throws -> Void
    ) async throws {
        let (readiness, readySink) = AsyncStream<Void>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (closeAll, closeSink) = AsyncStream<Void>.makeStream()
            let broadcast = Broadcast()
            group.addTask {
                for await _ in closeAll { break }
                broadcast.fire()
            }
            for token in tokens {
                group.addTask {
                    try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/v1/stream?token=\(token)", logger: logger) { inbound, outbound, _ in
                        var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                        while let message = try await messages.next() {
                            if case .text(let text) = message, text.contains(#""type":"ready""#) { break }
                        }
                        readySink.yield()
                        await broadcast.wait()
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                }
            }
            try await awaitReady(tokens.count, readiness, readySink)
            try await whileOpen()
            closeSink.yield()
            closeSink.finish()
            try await group.waitForAll()
        }
    }
}

/// Waits until `count` clients said they are ready, for at most two minutes.
func awaitReady(_ count: Int, _ readiness: AsyncStream<Void>, _ sink: AsyncStream<Void>.Continuation) async throws {
    let watchdog = Task {
        try await Task.sleep(for: .seconds(120))
        sink.finish()
    }
    defer { watchdog.cancel() }
    var ready = 0
    for await _ in readiness {
        ready += 1
        if ready == count { break }
    }
    guard ready == count else { throw BenchmarkError("only \(ready) of \(count) clients were ready within 2 minutes") }
}

/// Wakes every waiter at once, including those that start waiting after it fired.
private final class Broadcast: Sendable {
    private let state = NIOLockedValueBox<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLockedValue { state -> Bool in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func fire() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
