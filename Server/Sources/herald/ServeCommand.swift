import ArgumentParser
import Foundation
import HeraldPostgres
import HeraldRecords
import HeraldServer
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// `herald serve`: the server, with its embedded database.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the Herald server (SQLite embedded, or PostgreSQL for several nodes). Stops gracefully on SIGTERM and SIGINT.",
        discussion: """
            Settings come from these options, else from HERALD_HOST, HERALD_PORT, HERALD_DATABASE, HERALD_POSTGRES_URL, \
            HERALD_PRESENCE_EXPIRY, \
            HERALD_JWT_SECRET, HERALD_SQLITE_SYNC, HERALD_SQLITE_COMMIT_WINDOW, HERALD_DEMO, HERALD_CORS_ORIGINS, the limits (HERALD_LIMIT_*, \
            HERALD_MAX_CONNECTIONS) and the timeouts (HERALD_HEADER_TIMEOUT, HERALD_IDLE_TIMEOUT, \
            HERALD_SHUTDOWN_TIMEOUT, HERALD_PING_INTERVAL), push (HERALD_APNS_*, HERALD_FCM_*, HERALD_EXPO_*, HERALD_PUSH_*; see \
            docs/push.md), else the defaults; docs/configuration.md lists them all. A value that cannot be used stops the server with a line saying which. Without \
            HERALD_JWT_SECRET the token secret is generated on first start and kept in <database>.secret (with \
            PostgreSQL, in the database, shared by every node). \
            LOG_LEVEL (trace, debug, info, notice, warning, error, critical) sets the log level.
            """
    )

    @Option(help: "The address to listen on (default 127.0.0.1).")
    var host: String?

    @Option(help: "The port to listen on; 0 picks a free one (default 8080).")
    var port: Int?

    @Option(help: "The SQLite file, or :memory: (default ./herald.sqlite).")
    var database: String?

    @Option(help: "A PostgreSQL database to use instead of SQLite, for several nodes: postgres://user:password@host:5432/database.")
    var postgres: String?

    @Flag(help: "Create the demo users (alice, bob, charlie), chats and messages, and print a token for each.")
    var demo = false

    func run() async throws {
        do {
            try await serve()
        } catch {
            // One clear line, never a stack of framework types: the setting, the file or the port that is wrong.
            let line = Self.describe(error).split(whereSeparator: \.isNewline).joined(separator: " ")
            Console.error("herald: \(line)\n")
            throw ExitCode.failure
        }
    }

    private func serve() async throws {
        var settings = try ServerConfiguration.fromEnvironment()
        if let host { settings.host = host }
        if let port { settings.port = port }
        if let database { settings.databasePath = database }
        if let postgres { settings.postgresURL = postgres }
        if demo { settings.demo = true }

        let logger = try Logger.herald(label: "herald")
        // A port in use is said before anything is opened or written (the database, the demo's data, its pushes).
        try await Self.checkListening(settings)
        // Before anything counts: every metric is made on first use, from this backend.
        HeraldMetrics.bootstrap()
        // What is on, secrets left out: the first lines of the log.
        for line in settings.summary { logger.info("\(line)") }
        let environment = try await ServerEnvironment.make(settings, logger: logger)
        let announced = settings
        let app = buildApplication(environment, logger: logger) { port in
            await Self.announce(announced, port: port, tokens: environment.tokens)
        }
        // A graceful stop finishes what is in flight; after the shutdown timeout, what is left is cut.
        do {
            try await runUntilSignalled(app, grace: settings.timeouts.shutdown, logger: logger)
        } catch {
            throw Self.listeningError(error, settings: settings) ?? error
        }
    }

    /// Binds the address a moment and lets it go: whether the server will be able to listen there.
    ///
    /// - Throws: ``ConfigurationError`` saying what is wrong and what to do.
    private static func checkListening(_ settings: ServerConfiguration) async throws {
        guard settings.port != 0 else { return }
        do {
            let probe = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: settings.host, port: settings.port).get()
            try await probe.close()
        } catch {
            throw listeningError(error, settings: settings) ?? error
        }
    }

    /// The line for an address that cannot be listened on, with what to do about it; nil for other errors.
    private static func listeningError(_ error: any Error, settings: ServerConfiguration) -> ConfigurationError? {
        switch error {
        case let error as IOError where error.errnoCode == EADDRINUSE:
            let next = settings.port < 65_535 ? settings.port + 1 : 8080
            return ConfigurationError(listening: settings, reason: """
                address already in use (another herald serve?); stop what uses it, or pick another port with --port \
                (or HERALD_PORT), e.g. --port \(next); --port 0 takes any free one
                """)
        case let error as IOError where [EACCES, EADDRNOTAVAIL].contains(error.errnoCode):
            return ConfigurationError(listening: settings, reason: String(cString: strerror(error.errnoCode)).lowercased())
        case let error as SocketAddressError:
            return ConfigurationError(listening: settings, reason: "\(error)")
        default:
            return nil
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case let error as CustomStringConvertible where error is ConfigurationError || error is StorageError:
            error.description
        case let error as ServiceGroupError:
            "the server did not stop in time (\(error))"
        default:
            String(describing: error)
        }
    }

    private static func announce(_ settings: ServerConfiguration, port: Int, tokens: TokenAuthority) async {
        // A wildcard address is not one a browser can open; the machine's own loopback is.
        let pageHost = switch settings.host {
        case "0.0.0.0", "::", "": "127.0.0.1"
        case let host where host.contains(":"): "[\(host)]"
        case let host: host
        }
        var lines = [
            "Open http://\(pageHost):\(port)/ in a browser",
            "Herald is listening on http://\(settings.host):\(port) (database: \(settings.postgresURL.map(PostgresStore.redacted) ?? settings.databasePath))",
        ]
        if settings.demo {
            lines.append("The page offers to continue as each demo person. Demo tokens (valid 30 days), for other clients:")
            for person in DemoData.people {
                let token = (try? await tokens.token(userID: person.id, name: person.displayName)) ?? "?"
                lines.append("  \(person.id.padding(toLength: 8, withPad: " ", startingAt: 0)) \(token)")
            }
            lines.append("Try: curl -H \"Authorization: Bearer <token>\" http://\(settings.host):\(port)/v1/conversations")
        }
        // Nobody may be reading (a closed terminal): the server goes on regardless.
        Console.out(lines.joined(separator: "\n") + "\n")
    }
}

extension Logger {
    /// A logger writing to standard error at `LOG_LEVEL` (default info).
    ///
    /// - Throws: ``ConfigurationError`` when `LOG_LEVEL` names no level.
    static func herald(label: String) throws -> Logger {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        if let text = ProcessInfo.processInfo.environment["LOG_LEVEL"], !text.isEmpty {
            guard let level = Logger.Level(rawValue: text.lowercased()) else {
                let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError("LOG_LEVEL must be one of \(levels), not \"\(text)\"")
            }
            logger.logLevel = level
        }
        return logger
    }
}
