import ArgumentParser
import Foundation
import HeraldProtocol
import HeraldServer

/// `herald token USER`: a token signed with the server's secret, as an app's backend would mint one.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a token for USER, signed with the server's secret (HERALD_JWT_SECRET or <database>.secret; never made here)."
    )

    @Argument(help: "The user id (the token's sub).")
    var user: String

    @Option(help: "The display name (default: the user id).")
    var name: String?

    @Option(help: "A picture URL.")
    var picture: String?

    @Option(help: "The server's SQLite file, beside which its secret is kept (default ./herald.sqlite).")
    var database: String?

    @Option(help: "How many hours the token is valid.")
    var hours = 24 * 30

    func validate() throws {
        if let problem = HeraldID.problem(with: user) { throw ValidationError("USER \(problem)") }
        if let name, let problem = DisplayText.problem(with: name) { throw ValidationError("--name \(problem)") }
        guard hours > 0 else { throw ValidationError("--hours must be positive") }
    }

    func run() async throws {
        var settings = try ServerConfiguration.fromEnvironment()
        if let database { settings.databasePath = database }
        let authority = await TokenAuthority(secret: try settings.secretForTools())
        print(try await authority.token(
            userID: user, name: name ?? user, picture: picture, lifetime: .seconds(hours * 3600)))
    }
}
