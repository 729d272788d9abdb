import ArgumentParser
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
        subcommands: [ServeCommand.self, ChatCommand.self, TokenCommand.self, ReplayCommand.self, BenchCommand.self]
    )

    /// Runs the command. The server (and the benchmarks, which run it) first make SwiftNIO's event loop threads
    /// Swift Concurrency's global executor: a task that writes to a connection then runs where the connection's
    /// I/O runs, instead of handing every frame from the concurrency pool's threads to the event loop's.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "serve" {
            NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        }
        await main(arguments)
    }
}
