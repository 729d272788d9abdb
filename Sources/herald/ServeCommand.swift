import ArgumentParser
import Foundation
import HeraldServer
import Logging

/// `herald serve`: the server, with its embedded database.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the Herald server (SQLite embedded). Stops gracefully on SIGTERM and SIGINT.",
        discussion: """
            Settings come from these options, else from HERALD_HOST, HERALD_PORT, HERALD_DATABASE, \
            HERALD_JWT_SECRET, HERALD_SQLITE_SYNC and HERALD_DEMO, else the defaults. Without HERALD_JWT_SECRET \
            the token secret is generated on first start and kept in <database>.secret. LOG_LEVEL sets the log level.
            """
    )

    @Option(help: "The address to listen on (default 127.0.0.1).")
    var host: String?

    @Option(help: "The port to listen on; 0 picks a free one (default 8080).")
    var port: Int?

    @Option(help: "The SQLite file, or :memory: (default ./herald.sqlite).")
    var database: String?

    @Flag(help: "Create the demo users (alice, bob, charlie), chats and messages, and print a token for each.")
    var demo = false

    func run() async throws {
        var settings = ServerConfiguration.fromEnvironment()
        if let host { settings.host = host }
        if let port { settings.port = port }
        if let database { settings.databasePath = database }
        if demo { settings.demo = true }

        let logger = Logger.herald(label: "herald")
        let environment = try await ServerEnvironment.make(settings, logger: logger)
        let announced = settings
        let app = buildApplication(environment, logger: logger) { port in
            await Self.announce(announced, port: port, tokens: environment.tokens)
        }
        try await app.runService()
    }

    private static func announce(_ settings: ServerConfiguration, port: Int, tokens: TokenAuthority) async {
        var lines = ["Herald is listening on http://\(settings.host):\(port) (database: \(settings.databasePath))"]
        if settings.demo {
            lines.append("Demo tokens (valid 30 days):")
            for person in DemoData.people {
                let token = (try? await tokens.token(userID: person.id, name: person.displayName)) ?? "?"
                lines.append("  \(person.id.padding(toLength: 8, withPad: " ", startingAt: 0)) \(token)")
            }
            lines.append("Try: curl -H \"Authorization: Bearer <token>\" http://\(settings.host):\(port)/v1/conversations")
        }
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }
}

extension Logger {
    /// A logger writing to standard error at `LOG_LEVEL` (default info).
    static func herald(label: String) -> Logger {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        return logger
    }
}
