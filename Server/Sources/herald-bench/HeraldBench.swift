import ArgumentParser
import Foundation
import HeraldBenchmarks
import HeraldServer

/// `herald-bench`: benchmarks that print figures. An executable of its own, so that `herald` (what is deployed)
/// carries no benchmark; those that run a server run the `herald` built beside it.
@main
struct HeraldBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench",
        abstract: "Benchmarks that print figures; build with -c release for meaningful numbers.",
        subcommands: [Engine.self, Stream.self, Peers.self, Instructions.self, Post.self, Connections.self, List.self, Push.self, Flood.self, Away.self]
    )

    /// `herald-bench engine`.
    struct Engine: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decisions a second and bytes a waiting banner, on one device."
        )

        @Option(help: "How many messages to decide.")
        var messages = 1_000_000

        @Option(help: "How many conversations they are spread over (also the number of waiting banners measured).")
        var conversations = 10_000

        @Option(help: "How many times to run it from scratch; the median is reported.")
        var rounds = 5

        func validate() throws {
            guard messages > 0, conversations > 0, rounds > 0 else { throw ValidationError("counts must be positive") }
        }

        func run() {
            noteDebugBuild("engine")
            print(EngineBenchmark.run(messages: messages, conversations: conversations, rounds: rounds).text)
        }
    }

    /// The fan-out workload's shape, shared by `stream` and `peers`.
    struct FanOutOptions: ParsableArguments {
        @Option(help: "Connected clients, one user each.")
        var clients = 1_000

        @Option(help: "Members of each group conversation.")
        var groupSize = 10

        @Option(help: "Messages posted a second.")
        var rate = 1_000

        @Option(help: "Seconds of posting.")
        var seconds = 10

        @Flag(inversion: .prefixedNo, help: "Whether Herald's clients confirm what they receive (received frames), as the real clients do.")
        var confirm = true

        @Flag(help: "Herald's database in a file (in a temporary folder), as deployed, rather than in memory.")
        var file = false

        func validate() throws {
            guard clients > 0, groupSize > 0, rate > 0, seconds > 0 else {
                throw ValidationError("every number must be positive")
            }
        }

        var options: StreamBenchmark.Options {
            var options = StreamBenchmark.Options()
            options.clients = clients
            options.groupSize = groupSize
            options.rate = rate
            options.duration = .seconds(seconds)
            options.confirms = confirm
            options.databaseFile = file
            return options
        }
    }

    /// `herald-bench stream`.
    struct Stream: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Many WebSocket clients in groups: latency, deliveries a second, server CPU and memory.",
            discussion: """
                With --postgres, the same on one node with SQLite, one node with PostgreSQL and --nodes nodes sharing \
                it, with posts a second for each (scripts/bench-nodes starts a throwaway PostgreSQL and runs this).
                """
        )

        @OptionGroup var shape: FanOutOptions

        @Option(help: ArgumentHelp(
            "A PostgreSQL server whose user may create databases: compare one node on SQLite, one on PostgreSQL and --nodes on PostgreSQL.",
            valueName: "url"))
        var postgres: String?

        @Option(help: "With --postgres: the nodes sharing it in the last configuration.")
        var nodes = 3

        @Option(help: "With --postgres: connections posting as fast as answered, for posts a second.")
        var connections = 64

        func validate() throws {
            guard nodes > 0, connections > 0 else { throw ValidationError("every number must be positive") }
        }

        func run() async throws {
            noteDebugBuild("stream")
            guard let postgres else {
                print(try await StreamBenchmark.run(shape.options).text)
                return
            }
            var options = ClusterBenchmark.Options()
            options.stream = shape.options
            options.posting.connections = connections
            options.posting.duration = shape.options.duration
            options.postgresURL = postgres
            options.nodes = nodes
            let report = try await ClusterBenchmark.run(options) { print($0) }
            print(report.text)
        }
    }

    /// `herald-bench peers`.
    struct Peers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The stream workload against Herald and against a running Mosquitto, with the ratios.",
            discussion: "scripts/bench-peers installs and starts Mosquitto with a WebSocket listener and runs this."
        )

        @OptionGroup var shape: FanOutOptions

        @Option(help: "The port of Mosquitto's WebSocket listener.")
        var mosquittoPort: Int

        @Option(help: "Mosquitto's process id, to read its CPU time and memory.")
        var mosquittoPid: Int32

        func run() async throws {
            noteDebugBuild("peers")
            let herald = try await StreamBenchmark.run(shape.options, target: .herald)
            print(herald.text)
            let mosquitto = try await StreamBenchmark.run(
                shape.options, target: .mosquitto(port: mosquittoPort, pid: mosquittoPid))
            print(mosquitto.text)
            func ratio(_ a: Double?, _ b: Double?) -> String {
                guard let a, let b, b > 0 else { return "unknown" }
                return String(format: "%.2f", a / b)
            }
            print("""
                herald / mosquitto:
                  server CPU per delivery: \(ratio(herald.cpuPerDelivery?.seconds, mosquitto.cpuPerDelivery?.seconds))
                  latency p50: \(ratio(herald.p50.seconds, mosquitto.p50.seconds)), \
                p99: \(ratio(herald.p99.seconds, mosquitto.p99.seconds))
                  memory per idle connection: \(ratio(herald.bytesPerConnection, mosquitto.bytesPerConnection))
                """)
        }
    }

    /// `herald-bench instructions`.
    struct Instructions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Instructions per delivery and per post under callgrind, Herald's and a Mosquitto's, against a budget.",
            discussion: """
                scripts/bench-instructions installs Valgrind and Mosquitto, starts the broker under callgrind and runs \
                this. Herald runs under callgrind here, on a database file in a temporary folder.
                """
        )

        @Option(help: "Connected streams, one user each.")
        var clients = 100

        @Option(help: "Members of each group conversation.")
        var groupSize = 10

        @Option(help: "Messages posted, one at a time.")
        var posts = 200

        @Option(help: "Posts before the counting starts, so that each path's first run (Swift's runtime resolving types, caches filling) is not counted.")
        var warmUp = 10

        @Option(help: "The valgrind program.")
        var valgrind = "valgrind"

        @Option(help: ArgumentHelp(
            "The herald to count (the one beside herald-bench without it): Valgrind 3.19 reads no DWARF 5, so a copy without debug information.",
            valueName: "path"))
        var herald: String?

        @Option(help: "The port of a Mosquitto's WebSocket listener, the broker running under callgrind.")
        var mosquittoPort: Int?

        @Option(help: "That Mosquitto's process id.")
        var mosquittoPid: Int32?

        @Option(help: ArgumentHelp("The file that Mosquitto's callgrind writes (its --callgrind-out-file).", valueName: "path"))
        var mosquittoOut: String?

        @Option(help: ArgumentHelp("A budget file (delivery <n>, post <n>): fail when Herald is over it by more than 5%.", valueName: "path"))
        var budget: String?

        @Option(help: ArgumentHelp("Where to keep Herald's callgrind profile of the posts, for callgrind_annotate.", valueName: "path"))
        var profile: String?

        func validate() throws {
            guard clients > 0, groupSize > 0, posts > 0 else { throw ValidationError("every number must be positive") }
            guard warmUp >= 0 else { throw ValidationError("--warm-up cannot be negative") }
            let mosquitto = [mosquittoPort != nil, mosquittoPid != nil, mosquittoOut != nil]
            guard mosquitto.allSatisfy({ $0 }) || mosquitto.allSatisfy({ !$0 }) else {
                throw ValidationError("--mosquitto-port, --mosquitto-pid and --mosquitto-out go together")
            }
        }

        func run() async throws {
            noteDebugBuild("instructions")
            let limits = try budget.map { try InstructionBudget(parsing: String(contentsOfFile: $0, encoding: .utf8)) }
            var options = InstructionsBenchmark.Options()
            options.clients = clients
            options.groupSize = groupSize
            options.posts = posts
            options.warmUp = warmUp
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-instructions-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let herald = try await InstructionsBenchmark.run(options, target: .herald(valgrind: valgrind, folder: folder, executable: herald.map { URL(fileURLWithPath: $0) }))
            print(herald.text)
            if let profile {
                try? FileManager.default.removeItem(atPath: profile)
                try FileManager.default.copyItem(
                    at: folder.appendingPathComponent(InstructionsBenchmark.heraldProfile), to: URL(fileURLWithPath: profile))
                print("  profile: \(profile) (callgrind_annotate \(profile))")
            }
            if let mosquittoPort, let mosquittoPid, let mosquittoOut {
                let mosquitto = try await InstructionsBenchmark.run(
                    options, target: .mosquitto(port: mosquittoPort, pid: mosquittoPid, outFile: URL(fileURLWithPath: mosquittoOut)))
                print(mosquitto.text)
                print("herald / mosquitto, instructions per delivery: \(String(format: "%.2f", herald.perDelivery / mosquitto.perDelivery))")
            }
            guard let limits, let budget else { return }
            let overruns = limits.overruns(herald)
            if overruns.isEmpty {
                print("within the budget of \(budget) (delivery \(limits.delivery), post \(limits.post), 5% allowed)")
                return
            }
            for overrun in overruns { print("over budget: \(overrun)") }
            print("""
                Make it cheaper, or raise the budget in \(budget) with a comment on the line that says why the \
                change is worth it.
                """)
            throw ExitCode.failure
        }
    }

    /// `herald-bench post`.
    struct Post: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Durable posts a second over HTTP, several connections at once, database in a file."
        )

        @Option(help: "Client connections posting at once.")
        var connections = 64

        @Option(help: "Seconds of posting.")
        var seconds = 10

        @Flag(inversion: .prefixedNo, help: "Whether Herald's clients confirm what they receive (received frames), as the real clients do.")
        var confirm = true

        func validate() throws {
            guard connections > 0, seconds > 0 else { throw ValidationError("every number must be positive") }
        }

        func run() async throws {
            noteDebugBuild("post")
            var options = PostBenchmark.Options()
            options.connections = connections
            options.duration = .seconds(seconds)
            print(try await PostBenchmark.run(options).text)
        }
    }

    /// `herald-bench connections`.
    struct Connections: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The server's memory per idle stream, and its growth over streams opened and closed."
        )

        @Option(help: "Streams open at once in each round.")
        var clients = 1_000

        @Option(help: "Rounds of opening and closing them.")
        var rounds = 5

        @Option(help: "Members of the group that gets one message at the end, spread over the clients.")
        var group = 1_000

        func validate() throws {
            guard clients > 0, rounds > 0, group > 0 else { throw ValidationError("every number must be positive") }
        }

        func run() async throws {
            noteDebugBuild("connections")
            var options = ConnectionsBenchmark.Options()
            options.clients = clients
            options.rounds = rounds
            options.groupSize = group
            print(try await ConnectionsBenchmark.run(options).text)
        }
    }

    /// `herald-bench list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A poster's latency while one user in many conversations lists them all, several times at once."
        )

        @Option(help: "Conversations the listing user is in.")
        var conversations = 20_000

        @Option(help: "Full listings running at once.")
        var listers = 4

        @Option(help: "Posts measured, with and without the listings.")
        var posts = 300

        func validate() throws {
            guard conversations > 0, listers > 0, posts > 0 else { throw ValidationError("every number must be positive") }
        }

        func run() async throws {
            noteDebugBuild("list")
            var options = ListBenchmark.Options()
            options.conversations = conversations
            options.listers = listers
            options.posts = posts
            print(try await ListBenchmark.run(options).text)
        }
    }
}

extension HeraldBench {
    /// `herald-bench push`.
    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A message to a group of members all away: time to decide and queue their pushes, and sends a second."
        )

        @Option(help: "Members of the group, besides the sender.")
        var members = 1_000

        @Option(help: "Phones each member has.")
        var devices = 2

        @Option(help: "Messages, one after another; medians are reported.")
        var messages = 5

        @Option(help: "Pushes sent at once.")
        var concurrency = 32

        @Option(help: "Pairs of messages for the delivery trail's cost (on for one, off for the other), pushes only logged.")
        var trailPairs = 10

        func validate() throws {
            guard members > 0, devices > 0, messages > 0, concurrency > 0, trailPairs > 0 else {
                throw ValidationError("counts must be positive")
            }
        }

        func run() async throws {
            noteDebugBuild("push")
            var options = PushBenchmark.Options()
            options.members = members
            options.devicesPerMember = devices
            options.messages = messages
            options.concurrency = concurrency
            options.trailPairs = trailPairs
            print(try await PushBenchmark.run(options).text)
        }
    }
}

extension HeraldBench {
    /// `herald-bench away`.
    struct Away: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A phone in the background: how soon it hears of a message with its stream closed, kept and suspended, kept and running."
        )

        @Option(help: "Messages each way; medians are reported.")
        var messages = 3

        @Option(help: "The server's HERALD_CONFIRM_WITHIN, in seconds.")
        var grace = 5.0

        func validate() throws {
            guard messages > 0 else { throw ValidationError("--messages must be positive") }
            let range = PushSettings.confirmWithinRange
            guard range.contains(grace) else {
                throw ValidationError("--grace is from \(Int(range.lowerBound)) to \(Int(range.upperBound)) seconds (HERALD_CONFIRM_WITHIN's range)")
            }
        }

        func run() async throws {
            noteDebugBuild("away")
            var options = AwayBenchmark.Options()
            options.messages = messages
            options.grace = .milliseconds(Int64((grace * 1000).rounded()))
            print(try await AwayBenchmark.run(options).text)
        }
    }
}

extension HeraldBench {
    /// `herald-bench flood`.
    struct Flood: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A poster's latency while another user floods stream frames: with the frame budgets, and without."
        )

        @Option(help: "The flooding user's streams.")
        var streams = 4

        @Option(help: "Posts measured, with and without the flood.")
        var posts = 300

        @Option(help: "Pace the flood: this many frames every 100 ms from each stream (0: as fast as the sockets take them).")
        var paced = 0

        @Flag(help: "Measure with the frame budgets only, not again without them (for a debug build).")
        var budgetsOnly = false

        func validate() throws {
            guard streams > 0, posts > 0, paced >= 0 else { throw ValidationError("counts must be positive") }
        }

        func run() async throws {
            // (In a debug build too: how far a flood holds up others on a slow server is the point of that run.)
            noteDebugBuild("flood")
            var options = FloodBenchmark.Options()
            options.streams = streams
            options.posts = posts
            options.paced = paced
            options.withoutBudgets = !budgetsOnly
            print(try await FloodBenchmark.run(options).text)
        }
    }
}

/// Says, in a debug build, that the figures mean little and which command gives real ones.
private func noteDebugBuild(_ benchmark: String) {
    #if DEBUG
    print("note: this is a debug build; use `swift build -c release` and `.build/release/herald-bench \(benchmark)` for real figures")
    #endif
}
