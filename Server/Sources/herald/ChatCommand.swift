import ArgumentParser
import Foundation
import HeraldChat
import HeraldClient
import HeraldNIOTransport
import HeraldProtocol
import HeraldServer

/// `herald chat`: the terminal chat client.
struct ChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "A full-screen terminal chat with live banners.",
        discussion: """
            Keys: ↑↓ switch chats, Enter sends, PgUp/PgDn scroll the chat, ^O opens the banner's chat, ^X dismisses \
            it, ^P pauses it, ^C quits. Line editing: ←→, Home/End (^A/^E), ^W deletes a word, ^U the line.
            """
    )

    @Option(help: "The server, e.g. http://127.0.0.1:8080.")
    var server = "http://127.0.0.1:8080"

    @Option(help: "Your token, as your app's backend minted it.")
    var token: String?

    @Option(name: .customLong("as"), help: "Sign in as this user with a token minted from the server's secret (the demo).")
    var user: String?

    @Option(help: "The server's SQLite file, beside which its secret is kept (for --as; default ./herald.sqlite).")
    var database: String?

    func validate() throws {
        guard (token == nil) != (user == nil) else { throw ValidationError("give --token or --as, one of them") }
        if let user, let problem = HeraldID.problem(with: user) { throw ValidationError("--as \(problem)") }
        guard URL(string: server)?.host != nil else { throw ValidationError("--server must be a URL like http://127.0.0.1:8080") }
    }

    func run() async throws {
        let (token, userID) = try await credentials()
        let client = HeraldClient(
            configuration: ClientConfiguration(server: URL(string: server)!, token: token, transport: .nio()), resumeAfter: 0)
        try await TerminalChat(client: client, userID: userID).run()
    }

    private func credentials() async throws -> (token: String, userID: String) {
        if let user {
            var settings = try ServerConfiguration.fromEnvironment()
            if let database { settings.databasePath = database }
            let authority = await TokenAuthority(secret: try settings.secretForTools())
            let name = DemoData.people.first { $0.id == user }?.displayName ?? user
            return (try await authority.token(userID: user, name: name), user)
        }
        let token = token ?? ""
        let parts = token.split(separator: ".")
        guard parts.count == 3,
              let payload = Data(base64URL: String(parts[1])),
              let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any],
              let sub = claims["sub"] as? String
        else { throw ValidationError("--token is not a JWT with a `sub` claim") }
        return (token, sub)
    }
}
