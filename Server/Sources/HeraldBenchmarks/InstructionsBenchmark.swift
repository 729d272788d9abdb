import Foundation
import Logging

/// A small fixed workload whose cost is counted in instructions, under Valgrind's callgrind: the same figures for the
/// same binary however busy the machine is, where CPU time moves by a third.
///
/// A server (Herald, started here under callgrind; or a Mosquitto broker the caller started under it) has `clients`
/// streams in groups of `groupSize`. The posts go one at a time, each from the next member of the next group, and the
/// next goes only once every member received the last (and, for Herald, its sender had the `ack`): so each post takes
/// the same path through the server every time, with nothing batched by chance. The server's counters are zeroed once
/// every client is connected and `warmUp` posts went, and dumped after the last post (`callgrind_control`), so the
/// figure is the posts' work alone, in a steady state: a path's first run costs more (Swift's runtime resolves generic
/// types the first time a call site needs them, tens of thousands of instructions each; caches fill). Herald's clients
/// do not confirm what they receive (confirmations go at most once a second: their number would follow the clock), and
/// its streams are pinged once an hour.
public enum InstructionsBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Connected clients, one user each.
        public var clients = 100
        /// Members of each group (`clients / groupSize` groups).
        public var groupSize = 10
        /// Messages posted, one at a time.
        public var posts = 200
        /// Posts before the counting starts, each from the next member of the next group as the counted ones.
        public var warmUp = 10

        /// The issue's shape: 100 streams in groups of ten, 200 posts, after ten not counted.
        public init() {}
    }

    /// The server counted.
    public enum Target: Sendable {
        /// `herald serve` on a database file, started under `valgrind` (the program's path or name), with its output in
        /// `folder`; `executable` is the `herald` to run (the one beside this program without it).
        case herald(valgrind: String, folder: URL, executable: URL?)
        /// A Mosquitto broker running under callgrind, with its WebSocket listener on `port`, as process `pid`, writing
        /// to `outFile`.
        case mosquitto(port: Int, pid: Int32, outFile: URL)
    }

    /// What one run counted.
    public struct Report: Sendable {
        /// The server counted.
        public var target: String
        /// The shape.
        public var options: Options
        /// Message frames received by all clients.
        public var deliveries: Int
        /// The server's instructions over the posts.
        public var instructions: Int

        /// What a run of `options` against `target` counted.
        public init(target: String, options: Options, deliveries: Int, instructions: Int) {
            self.target = target
            self.options = options
            self.deliveries = deliveries
            self.instructions = instructions
        }

        /// Instructions per delivery.
        public var perDelivery: Double { Double(instructions) / Double(max(1, deliveries)) }
        /// Instructions per post.
        public var perPost: Double { Double(instructions) / Double(max(1, options.posts)) }

        /// The report, for a terminal.
        public var text: String {
            """
            instructions (\(target)): \(options.clients) streams in groups of \(options.groupSize), \(options.posts) posts \
            one at a time (after \(options.warmUp) not counted), \(deliveries) deliveries
              instructions: \(Self.grouped(instructions))
              per delivery: \(Self.grouped(Int(perDelivery.rounded())))
              per post: \(Self.grouped(Int(perPost.rounded())))
            """
        }

        /// `1234567` as `1,234,567`.
        static func grouped(_ value: Int) -> String {
            let digits = String(value.magnitude)
            var out = ""
            for (index, digit) in digits.enumerated() {
                if index > 0, (digits.count - index) % 3 == 0 { out += "," }
                out.append(digit)
            }
            return (value < 0 ? "-" : "") + out
        }
    }

    /// The file in a `.herald` target's folder that holds Herald's profile of the posts.
    public static let heraldProfile = "herald.callgrind.1"

    /// Runs the workload against `target` and reads what callgrind counted.
    public static func run(_ options: Options, target: Target) async throws -> Report {
        guard options.clients > 0, options.groupSize > 0, options.posts > 0 else {
            throw BenchmarkError("every number must be positive")
        }
        guard options.warmUp >= 0 else { throw BenchmarkError("the warm-up cannot be negative") }
        var shape = StreamBenchmark.Options()
        shape.clients = options.clients
        shape.groupSize = options.groupSize
        shape.confirms = false
        _ = try StreamBenchmark.descriptorLimit(for: shape)
        switch target {
        case .herald(let valgrind, let folder, let executable):
            let outFile = folder.appendingPathComponent("herald.callgrind")
            let server = try await ServerChild(
                database: folder.appendingPathComponent("herald.sqlite").path,
                environment: ["HERALD_PING_INTERVAL": "3600"],
                launcher: [valgrind, "--tool=callgrind", "--compress-strings=no", "--callgrind-out-file=\(outFile.path)"],
                startLimit: .seconds(300), executable: executable)
            do {
                let (clients, groups) = try await StreamBenchmark.prepare(shape, nodes: [server])
                let deliveries = try await count(options, clients: clients, groups: groups, pid: server.pid, acks: true)
                await server.stop()
                return Report(target: "herald", options: options, deliveries: deliveries, instructions: try dumped(outFile))
            } catch {
                await server.stop()
                throw error
            }
        case .mosquitto(let port, let pid, let outFile):
            let clients = (0..<options.clients).map { FanOutClient(wire: .mqtt(clientID: "i\($0)"), port: port) }
            let groups = StreamBenchmark.groups(shape).enumerated().map { ("herald-bench/i\($0.offset)", $0.element) }
            let deliveries = try await count(options, clients: clients, groups: groups, pid: pid, acks: false)
            return Report(target: "mosquitto", options: options, deliveries: deliveries, instructions: try dumped(outFile))
        }
    }

    /// Connects every client, zeroes the server's counters, posts one at a time, and dumps the counters: the
    /// deliveries.
    private static func count(
        _ options: Options, clients: [FanOutClient], groups: [(channel: String, members: [Int])], pid: Int32, acks: Bool
    ) async throws -> Int {
        let logger = BenchmarkLogger.quiet
        let (arrivals, arrivalSink) = AsyncStream<Void>.makeStream()

        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            let connections = try await FanOutClient.connectAll(
                clients, groups: groups, in: &tasks, logger: logger, onAck: { arrivalSink.yield() }
            ) { _ in arrivalSink.yield() }
            var arrived = 0, expected = 0
            var waiting = arrivals.makeAsyncIterator()
            // Posts the `index`th message (a warm-up one when negative) and waits for its deliveries.
            func post(_ index: Int) async throws {
                let turn = index + options.warmUp
                let group = groups[turn % groups.count]
                let sender = group.members[(turn / groups.count) % group.members.count]
                guard let connection = connections[sender] else { throw BenchmarkError("client \(sender) is not connected") }
                expected += group.members.count + (acks ? 1 : 0)
                // Bounded: a post whose deliveries do not all come within a minute ends the run.
                let watchdog = Task {
                    try await Task.sleep(for: .seconds(60))
                    arrivalSink.finish()
                }
                try await connection.publish(id: "i\(turn)", text: "t=\(turn);")
                while arrived < expected, await waiting.next() != nil { arrived += 1 }
                watchdog.cancel()
                guard arrived == expected else {
                    let which = index < 0 ? "warm-up post \(index + options.warmUp)" : "post \(index)"
                    throw BenchmarkError("\(which): \(arrived) of \(expected) deliveries and answers within a minute")
                }
            }
            for warmUp in -options.warmUp..<0 { try await post(warmUp) }
            try await callgrind(["--zero"], pid: pid)
            for index in 0..<options.posts { try await post(index) }
            try await callgrind(["--dump=posts"], pid: pid)
            tasks.cancelAll()
            return (0..<options.posts).reduce(0) { $0 + groups[($1 + options.warmUp) % groups.count].members.count }
        }
    }

    /// Runs `callgrind_control` with `arguments` on process `pid`.
    private static func callgrind(_ arguments: [String], pid: Int32) async throws {
        let process = Process()
        process.executableURL = try ServerChild.program("callgrind_control")
        process.arguments = arguments + ["\(pid)"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Bounded: callgrind answers within its next scheduling round.
        let deadline = ContinuousClock.now + .seconds(120)
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                process.terminate()
                throw BenchmarkError("callgrind_control \(arguments.joined(separator: " ")) \(pid) did not finish in 2 minutes")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        guard process.terminationStatus == 0 else {
            throw BenchmarkError("callgrind_control \(arguments.joined(separator: " ")) \(pid) failed (\(process.terminationStatus))")
        }
    }

    /// The instructions in the first dump callgrind wrote beside `outFile` (`<outFile>.1`).
    static func dumped(_ outFile: URL) throws -> Int {
        let dump = URL(fileURLWithPath: outFile.path + ".1")
        guard let text = try? String(contentsOf: dump, encoding: .utf8) else {
            throw BenchmarkError("callgrind wrote no dump at \(dump.path)")
        }
        guard let instructions = totals(in: text) else { throw BenchmarkError("no totals in \(dump.path)") }
        return instructions
    }

    /// The `totals:` line of a callgrind file (its first event, `Ir`: instructions).
    public static func totals(in callgrindFile: String) -> Int? {
        for line in callgrindFile.split(separator: "\n") where line.hasPrefix("totals:") {
            return line.dropFirst("totals:".count).split(separator: " ").first.flatMap { Int($0) }
        }
        return nil
    }
}

/// The instructions a delivery and a post may cost (`scripts/bench-instructions.budget`), and the check of a run
/// against them: a change that makes either dearer by more than ``tolerance`` fails until the budget is raised, with
/// a line that says why.
public struct InstructionBudget: Sendable, Equatable {
    /// Instructions per delivery.
    public var delivery: Int
    /// Instructions per post.
    public var post: Int

    /// How much dearer than the budget a run may be: 5%.
    public static let tolerance = 0.05

    /// A budget of `delivery` and `post` instructions.
    public init(delivery: Int, post: Int) {
        self.delivery = delivery
        self.post = post
    }

    /// Reads a budget file: `delivery <n>` and `post <n>` lines; `#` starts a comment (the reasons).
    public init(parsing text: String) throws {
        var values: [String: Int] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: \.isWhitespace)
            guard !words.isEmpty else { continue }
            guard words.count == 2, ["delivery", "post"].contains(words[0]),
                  let value = Int(words[1].filter { $0 != "," && $0 != "_" }), value > 0 else {
                throw BenchmarkError("budget line \(number + 1): \"\(raw)\" is not `delivery <n>` or `post <n>`")
            }
            guard values.updateValue(value, forKey: String(words[0])) == nil else {
                throw BenchmarkError("budget line \(number + 1): \(words[0]) is set twice")
            }
        }
        guard let delivery = values["delivery"], let post = values["post"] else {
            throw BenchmarkError("a budget needs both `delivery <n>` and `post <n>`")
        }
        self.init(delivery: delivery, post: post)
    }

    /// What is over budget in `report` by more than ``tolerance``, in words; empty when it holds.
    public func overruns(_ report: InstructionsBenchmark.Report) -> [String] {
        var found: [String] = []
        for (name, measured, allowed) in [("delivery", report.perDelivery, delivery), ("post", report.perPost, post)]
        where measured > Double(allowed) * (1 + Self.tolerance) {
            let over = (measured / Double(allowed) - 1) * 100
            found.append("a \(name) costs \(Int(measured.rounded())) instructions, \(String(format: "%.1f", over))% over its budget of \(allowed)")
        }
        return found
    }
}
