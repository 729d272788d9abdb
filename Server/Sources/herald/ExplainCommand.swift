import ArgumentParser
import Foundation
import HeraldRecords
import HeraldServer
import Logging

/// `herald explain`: why a message did or did not reach each member's devices, from the delivery trail, read from the
/// server's database (docs/push.md, "Why a phone did not ring").
struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Say what became of a message's notifications: each member, each device, each push service's answer.",
        discussion: """
            Reads the delivery trail from the server's database, named as for `herald serve` (HERALD_DATABASE, or \
            HERALD_POSTGRES_URL), beside the running server: a SQLite file is opened to read only. The trail keeps \
            HERALD_TRAIL_HOURS (default 24) hours. The same answer, as JSON, is the backend's \
            GET /v1/service/conversations/{id}/messages/{messageId}/deliveries.
            """
    )

    @Option(help: "The conversation's id.")
    var conversation: String

    @Option(help: "The message's id.")
    var message: String

    @Option(help: "Only this member (default: every member the message reached).")
    var user: String?

    @Option(help: "The server's SQLite file (default: HERALD_DATABASE, else ./herald.sqlite); ignored with HERALD_POSTGRES_URL.")
    var database: String?

    func run() async throws {
        var configuration = try ServerConfiguration.fromEnvironment()
        if let database { configuration.databasePath = database }
        var logger = try Logger.herald(label: "herald-explain")
        // The database's own notes (a migration) are not the answer: warnings and worse only, unless LOG_LEVEL says.
        if ProcessInfo.processInfo.environment["LOG_LEVEL"] == nil { logger.logLevel = .warning }
        do {
            print(try await DeliveryExplanation.explain(
                conversationID: conversation, messageID: message, userID: user, configuration: configuration, logger: logger))
        } catch let error as StorageError {
            Console.error("Error: \(error)\n")
            throw ExitCode.failure
        }
    }
}
