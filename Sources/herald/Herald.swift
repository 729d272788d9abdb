import ArgumentParser

/// `herald`: the command line. Each subcommand parses its arguments and calls a library.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald: tells chat users about messages in the conversations they are not looking at.",
        subcommands: [ServeCommand.self, ChatCommand.self, TokenCommand.self, ReplayCommand.self, BenchCommand.self]
    )
}
