import Foundation
import HeraldClient
import HeraldNIOTransport
import HeraldServer
import Logging
import NIOConcurrencyHelpers

/// What idle stream connections cost the server, and whether it reuses what closed ones held: a fresh `herald serve`
/// in a child process; rounds of opening many streams (one user each) from this process (``IdleStreams``: a NIO
/// channel per client, no task), holding them idle, and closing them all; the server's resident memory read from
/// `/proc`, and its heap in use (the allocator's own count, from its `/metrics`), at each step. In the first round, once
/// its memory is read, one message to a group whose members are spread across the streams.
public enum ConnectionsBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Streams open at once in each round.
        public var clients = 1_000
        /// Rounds of opening and closing them.
        public var rounds = 5
        /// Members of the group the message goes to, spread evenly over the clients (at most the clients).
        public var groupSize = 1_000

        /// 1,000 streams, 5 rounds, a group of 1,000.
        public init() {}
    }

    /// What one run measured.
    public struct Report: Sendable {
        /// The shape.
        public var options: Options
        /// Streams open at once: the clients, or fewer where the descriptor limit would not allow them.
        public var streams: Int
        /// Why there are fewer streams than clients, if there are.
        public var limited: String?
        /// Resident bytes, and heap bytes in use, before any stream was opened.
        public var baseline: Int, baselineHeap: Int?
        /// Resident and heap bytes with every stream of each round open, and after each round's streams closed.
        public var open: [Int], closed: [Int], openHeap: [Int?], closedHeap: [Int?]
        /// From the first connection to the last stream's `ready`, each round.
        public var connectTimes: [Duration]
        /// From the group message's post to its last delivery.
        public var groupDelivery: Duration?
        /// The group's members (each with one stream).
        public var groupMembers: Int

        /// Resident bytes per idle stream: the first round's growth over the fresh server's memory.
        public var bytesPerConnection: Double {
            Double((open.first ?? baseline) - baseline) / Double(Swift.max(1, streams))
        }

        /// Heap bytes per idle stream, by the allocator's count: the first round's growth.
        public var heapPerConnection: Double? {
            guard let before = baselineHeap, let after = openHeap.first ?? nil else { return nil }
            return Double(after - before) / Double(Swift.max(1, streams))
        }

        /// Growth from the first round's close to the last's, per stream opened in between.
        public var growthPerConnection: Double {
            guard closed.count > 1, let first = closed.first, let last = closed.last else { return 0 }
            return Double(last - first) / Double(streams * (closed.count - 1))
        }

        /// Heap growth from the first round's close to the last's, per stream opened in between.
        public var heapGrowthPerConnection: Double? {
            guard closedHeap.count > 1, let first = closedHeap.first ?? nil, let last = closedHeap.last ?? nil else { return nil }
            return Double(last - first) / Double(streams * (closedHeap.count - 1))
        }

        /// The report, for a terminal.
        public var text: String {
            func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
            func mib(_ bytes: Int?) -> String { bytes.map { mib($0) } ?? "?" }
            var lines = [
                "connections: \(streams) idle streams (one user each), opened and closed \(options.rounds) times",
                "  server resident memory: \(mib(baseline)) before; open \(open.map(mib).joined(separator: ", ")); "
                    + "closed \(closed.map(mib).joined(separator: ", "))",
                "  server heap in use: \(mib(baselineHeap)) before; open \(openHeap.map(mib).joined(separator: ", ")); "
                    + "closed \(closedHeap.map(mib).joined(separator: ", "))",
                String(format: "  per idle stream: %.1f KiB resident, %@ heap", bytesPerConnection / 1024,
                       heapPerConnection.map { String(format: "%.1f KiB", $0 / 1024) } ?? "?"),
                String(format: "  growth per stream opened and closed after the first round: %.2f KiB resident, %@ heap",
                       growthPerConnection / 1024, heapGrowthPerConnection.map { String(format: "%.2f KiB", $0 / 1024) } ?? "?"),
                "  time to connect them all (to the last ready): "
                    + connectTimes.map { String(format: "%.1f s", $0.seconds) }.joined(separator: ", "),
            ]
            if let groupDelivery {
                lines.append(String(format: "  one message to a group of %d spread across them: all delivered in %.1f ms",
                                    groupMembers, groupDelivery.seconds * 1000))
            }
            if let limited { lines.append("  note: \(limited)") }
            return lines.joined(separator: "\n")
        }
    }

    /// Runs the benchmark.
    public static func run(_ options: Options) async throws -> Report {
        // Each stream takes a descriptor here and one in the server (which inherits this process's hard limit).
        let (streams, limited) = DescriptorBudget.streams(wanted: options.clients)
        if let limited { print("connections: \(limited)") }
        let groupSize = Swift.min(options.groupSize, streams)
        let server = try await ServerChild(
            database: ":memory:",
            environment: ["HERALD_LIMIT_GROUP_MEMBERS": "\(Swift.max(2, groupSize))"])
        do {
            let report = try await measure(options, streams: streams, limited: limited, groupSize: groupSize, server: server)
            await server.stop()
            return report
        } catch {
            await server.stop()
            throw error
        }
    }

    private static func measure(
        _ options: Options, streams: Int, limited: String?, groupSize: Int, server: ServerChild
    ) async throws -> Report {
        let tokens = await TokenAuthority(secret: server.secret)
        var tokenList: [String] = []
        for index in 0..<streams {
            tokenList.append(try await tokens.token(userID: "idle-\(index)", name: "Idle \(index)"))
        }
        let clients = tokenList
        // The group's members are known to the server before anyone connects (only people who signed in can be
        // added), so the rounds measure streams alone.
        let stride = Swift.max(1, streams / Swift.max(1, groupSize))
        let members = (0..<groupSize).map { $0 * stride }
        try await SignIn.withTokens(members.map { clients[$0] }, at: server.url)
        var conversation: String?
        if members.count > 1 {
            let api = HeraldAPI(configuration: ClientConfiguration(server: server.url, token: clients[members[0]], transport: .nio()))
            conversation = try await api.createConversation(
                kind: .group, title: "Everyone", members: members.dropFirst().map { "idle-\($0)" }).id
        }
        // A fresh server: memory freed when streams close stays with the allocator and is reused by the next ones, so
        // only the first round's growth shows what a stream holds (after that, growth shows what is not reused).
        try await settle()
        guard let baseline = server.usage.residentBytes() else { throw BenchmarkError("no /proc to read memory from") }
        let baselineHeap = await server.heapBytes()
        var open: [Int] = [], closed: [Int] = [], openHeap: [Int?] = [], closedHeap: [Int?] = []
        var connectTimes: [Duration] = []
        var groupDelivery: Duration?
        let clock = ContinuousClock()
        for round in 0..<options.rounds {
            let idle = IdleStreams(port: server.port)
            let started = clock.now
            try await idle.open(clients)
            try await idle.waitUntil(timeout: .seconds(600)) { $0.ready >= clients.count }
            connectTimes.append(started.duration(to: clock.now))
            try await settle()
            open.append(server.usage.residentBytes() ?? 0)
            openHeap.append(await server.heapBytes())
            // In the first round, so that the one-off cost of a first post is not counted as growth.
            if round == 0, let conversation {
                let api = HeraldAPI(configuration: ClientConfiguration(server: server.url, token: clients[members[0]], transport: .nio()))
                let posted = clock.now
                try await api.postMessage(in: conversation, text: "hello, everyone")
                try await idle.waitUntil(timeout: .seconds(120)) { $0.messages >= members.count }
                groupDelivery = posted.duration(to: clock.now)
            }
            try await idle.closeAll()
            try await settle()
            closed.append(server.usage.residentBytes() ?? 0)
            closedHeap.append(await server.heapBytes())
        }
        return Report(
            options: options, streams: streams, limited: limited, baseline: baseline, baselineHeap: baselineHeap,
            open: open, closed: closed, openHeap: openHeap, closedHeap: closedHeap, connectTimes: connectTimes,
            groupDelivery: groupDelivery, groupMembers: members.count)
    }

    private static func settle() async throws {
        try await Task.sleep(for: .seconds(1))
    }
}

/// How many descriptors this process (and the server it starts, which inherits its hard limit) may open.
enum DescriptorBudget {
    /// Descriptors kept for everything but streams, in each process.
    static let reserve = 256

    /// How many of `wanted` streams fit: the limit is raised first, as far as the system allows (a hard limit is
    /// raised only by a privileged process, up to `fs.nr_open`); and why fewer, if so.
    static func streams(wanted: Int) -> (Int, String?) {
        let needed = wanted + reserve
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return (wanted, nil) }
        if limit.rlim_max != rlim_t.max, limit.rlim_max < rlim_t(needed) {
            var raised = limit
            raised.rlim_max = rlim_t(needed)
            raised.rlim_cur = rlim_t(needed)
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max == rlim_t.max ? rlim_t(needed) : Swift.max(limit.rlim_cur, Swift.min(limit.rlim_max, rlim_t(needed)))
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        let allowed = limit.rlim_cur == rlim_t.max ? Int.max : Int(limit.rlim_cur) - reserve
        guard allowed < wanted else { return (wanted, nil) }
        let streams = Swift.max(1, allowed)
        return (streams, """
            the descriptor limit is \(limit.rlim_cur) (hard \(limit.rlim_max)) and could not be raised to \(needed) \
            (only root may raise a hard limit, up to fs.nr_open; or run `ulimit -Hn \(needed)` in a root shell first): \
            measuring \(streams) streams instead of \(wanted)
            """)
    }

    #if os(Linux)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
