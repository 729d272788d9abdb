import ArgumentParser
import HeraldBenchmarks

/// `herald bench`: benchmarks that print figures.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks that print figures; build with -c release for meaningful numbers.",
        subcommands: [Engine.self]
    )

    /// `herald bench engine`.
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
            #if DEBUG
            print("note: this is a debug build; use `swift run -c release herald bench engine` for real figures")
            #endif
            print(EngineBenchmark.run(messages: messages, conversations: conversations, rounds: rounds).text)
        }
    }
}
