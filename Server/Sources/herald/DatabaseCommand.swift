import ArgumentParser
import Foundation
import HeraldPostgres
import HeraldRecords
import HeraldServer
import Logging

/// `herald database`: what an operator does to a database beside serving it.
struct DatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "database",
        abstract: "Move a database: copy a SQLite database into PostgreSQL.",
        subcommands: [CopyCommand.self]
    )

    /// `herald database copy --from herald.sqlite --to postgres://…`.
    struct CopyCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "copy",
            abstract: "Copy a whole SQLite database into an empty PostgreSQL database.",
            discussion: """
                Stop the server first: the copy takes the lock a server holds. Everything is copied (users, devices, \
                conversations, members, messages with their seqs and tombstones, read markers, settings, both \
                outboxes, the token secret and VAPID key kept beside the file) in one transaction; the SQLite file is \
                only read. A target that holds anything is refused. Then start the nodes with HERALD_POSTGRES_URL. \
                See docs/deploy.md, "From SQLite to PostgreSQL".
                """
        )

        @Option(help: "The SQLite file (default: HERALD_DATABASE, else ./herald.sqlite).")
        var from: String?

        @Option(help: "The empty PostgreSQL database, postgres://user:password@host:5432/database (default: HERALD_POSTGRES_URL, which keeps the password out of the process list).")
        var to: String?

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            let source = from ?? environment["HERALD_DATABASE"].flatMap { $0.isEmpty ? nil : $0 } ?? "herald.sqlite"
            guard let target = to ?? environment["HERALD_POSTGRES_URL"].flatMap({ $0.isEmpty ? nil : $0 }) else {
                throw ValidationError("say where to copy to: --to postgres://user:password@host:5432/database, or HERALD_POSTGRES_URL")
            }
            let logger = try Logger.herald(label: "herald-copy")
            do {
                let report = try await DatabaseCopy.sqliteToPostgres(from: source, to: target, logger: logger)
                print("Copied \(source) to \(PostgresStore.redacted(target)):")
                print(report)
                print("Start the servers with HERALD_POSTGRES_URL set to it; \(source) was only read.")
            } catch let error as StorageError {
                Console.error("Error: \(error)\n")
                throw ExitCode.failure
            }
        }
    }
}
