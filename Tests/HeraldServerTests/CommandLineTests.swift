import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

@Suite("herald token and the token secret", .timeLimit(.minutes(3)))
struct CommandLineTests {
    @Test("herald token makes the secret beside the database on first use, and signs with it, as the server will")
    func tokenCommand() async throws {
        let folder = try makeTemporaryFolder("herald-token")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let result = try await runHerald(["token", "alice", "--name", "Alice Johnson", "--database", database], input: "")
        #expect(result.status == 0, "\(result.stderr)")
        let secretFile = database + ".secret"
        let attributes = try FileManager.default.attributesOfItem(atPath: secretFile)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "readable by its owner only")

        var configuration = ServerConfiguration()
        configuration.databasePath = database
        let authority = await TokenAuthority(secret: try configuration.resolveSecret())
        let identity = try await authority.verify(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(identity.userID == "alice")
        #expect(identity.name == "Alice Johnson")

        let again = try await runHerald(["token", "bob", "--database", database], input: "")
        #expect(try await authority.verify(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).userID == "bob",
                "the kept secret is reused")
    }

    @Test("a mistyped command gets a suggestion: herald serv, herald chta, herald bnech")
    func suggestions() async throws {
        for (typed, meant) in [("serv", "serve"), ("chta", "chat"), ("bnech", "bench"), ("tokn", "token")] {
            let result = try await runHerald([typed], input: "")
            #expect(result.status == 64, "\(typed)")
            #expect(result.stderr.contains("Did you mean '\(meant)'?"), "\(typed): \(result.stderr)")
        }
        let unknown = try await runHerald(["xyzzy"], input: "")
        #expect(unknown.status != 0)
        #expect(!unknown.stderr.contains("Did you mean"), "nothing close: \(unknown.stderr)")
    }

    @Test("a secret shorter than 32 bytes is refused with a clear message, not a crash")
    func shortSecret() async throws {
        let result = try await runHerald(
            ["serve", "--port", "0", "--database", ":memory:"], environment: ["HERALD_JWT_SECRET": "short"]
        )
        #expect(result.reason == .exit)
        #expect(result.status != 0)
        #expect(result.stderr.contains("HERALD_JWT_SECRET must be at least 32 bytes"))
    }
}
