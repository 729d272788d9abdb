import ArgumentParser
import Foundation
import HeraldServer
import NIOCore
import NIOPosix

/// `herald`: the command line. Each subcommand parses its arguments and calls a library.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald: tells chat users about messages in the conversations they are not looking at.",
        version: "herald \(HeraldVersion.current)",
        subcommands: [ServeCommand.self, ChatCommand.self, TokenCommand.self, ReplayCommand.self, HealthCommand.self, DatabaseCommand.self, ExplainCommand.self]
    )

    /// Runs the command. The server first tries to make SwiftNIO's event loop threads Swift Concurrency's global
    /// executor, so a task that writes to a connection runs where the connection's I/O runs. It can where the Swift
    /// runtime is linked dynamically (`swift run`, the tests); in the deploy build (`--static-swift-stdlib`) NIO
    /// cannot find the runtime's hook, and tasks keep the concurrency pool's threads.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "bench" {
            Console.error("""
                Error: the benchmarks are an executable of their own, built beside herald: herald-bench
                  (swift build -c release, then .build/release/herald-bench --help)

                """)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        if let first = arguments.first, let suggestion = suggestion(for: first) {
            Console.error("""
                Error: Unknown command '\(first)'. Did you mean '\(suggestion)'?
                Usage: herald <subcommand>
                  See 'herald --help' for more information.

                """)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        if arguments.first == "serve" {
            NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        }
        await main(arguments)
    }

    /// The subcommand `word` looks like a slip of, when it is no subcommand (nor an option): one or two letters
    /// off (`serv`, `chta`), or the start of one.
    static func suggestion(for word: String) -> String? {
        guard !word.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.map { $0._commandName }
        guard !names.contains(word), word != "help" else { return nil }
        if let started = names.first(where: { $0.hasPrefix(word) }), word.count >= 2 { return started }
        let close = names.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= 2 }.min { $0.1 < $1.1 }
        return close?.0
    }

    /// Insertions, deletions, substitutions and swaps of neighbours to turn `a` into `b`.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
