import Foundation
import HeraldCore
import HeraldRecords
import HeraldSQLite
import HeraldServer
import Logging
import HeraldTestSupport
import Testing

@Suite("herald token and the token secret", .timeLimit(.minutes(3)), .childProcesses)
struct CommandLineTests {
    @Test("herald token and herald chat --as never make a secret: with none to find they say where they looked and create nothing; with the server's they sign as the server verifies")
    func tokenCommand() async throws {
        let folder = try makeTemporaryFolder("herald-token")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let secretFile = database + ".secret"
        for arguments in [["token", "alice", "--database", database], ["chat", "--as", "alice", "--database", database]] {
            let refused = try await runHerald(arguments, input: "", environment: ["HERALD_JWT_SECRET": nil])
            #expect(refused.status != 0, "\(arguments[0])")
            #expect(refused.stderr.contains("no token secret here") && refused.stderr.contains(secretFile), "\(refused.stderr)")
            #expect(refused.stderr.contains("Nothing was created"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "no file created")
        }

        // The server makes the secret on its first start: one line of 64 hex digits, no newline, its owner's only.
        let server = try await ServerProcess(database: database, environment: ["HERALD_JWT_SECRET": nil])
        await server.expectCleanStop()
        let attributes = try FileManager.default.attributesOfItem(atPath: secretFile)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "readable by its owner only")
        let kept = try String(contentsOfFile: secretFile, encoding: .utf8)
        #expect(kept.count == 64 && kept.allSatisfy(\.isHexDigit), "the key and nothing else: \(kept.debugDescription)")

        let result = try await runHerald(
            ["token", "alice", "--name", "Alice Johnson", "--database", database], input: "",
            environment: ["HERALD_JWT_SECRET": nil])
        #expect(result.status == 0, "\(result.stderr)")
        let authority = await TokenAuthority(secret: kept)
        let identity = try await authority.verify(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(identity.userID == "alice")
        #expect(identity.name == "Alice Johnson")
        // A file an editor ended with a newline reads the same.
        try (kept + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
        let again = try await runHerald(["token", "bob", "--database", database], input: "", environment: ["HERALD_JWT_SECRET": nil])
        #expect(try await authority.verify(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).userID == "bob")
    }

    @Test("output nobody can take never crashes herald: a replay into a closed standard output exits 1 and says so, a suggestion into a closed standard error still exits 64")
    func closedOutput() async throws {
        let folder = try makeTemporaryFolder("herald-closed-output")
        defer { try? FileManager.default.removeItem(at: folder) }
        let trace = folder.appendingPathComponent("trace.jsonl")
        try """
            {"at": 0, "event": "configure", "me": "alice"}
            {"at": 1, "event": "message", "id": "m1", "conversation": {"id": "c", "kind": "direct"}, "sender": {"id": "bob", "name": "Bob"}}

            """.write(to: trace, atomically: true, encoding: .utf8)
        let shell = URL(fileURLWithPath: "/bin/sh")
        // Foundation's `FileHandle.write(_:)` trapped here (signal 4, status 132) on the closed descriptor.
        let replay = try await runProcess(shell, ["-c", #"exec "$0" replay "$1" >&-"#, heraldExecutable.path, trace.path])
        #expect(replay.reason == .exit && replay.status == 1, "\(replay.reason) \(replay.status): \(replay.stderr)")
        #expect(replay.stderr.contains("could not be written to standard output"), "\(replay.stderr)")
        let suggestion = try await runProcess(shell, ["-c", #"exec "$0" serv 2>&-"#, heraldExecutable.path])
        #expect(suggestion.reason == .exit && suggestion.status == 64, "\(suggestion.reason) \(suggestion.status)")
    }

    @Test("a mistyped command gets a suggestion: herald serv, herald chta, herald rpelay; herald bench names herald-bench")
    func suggestions() async throws {
        for (typed, meant) in [("serv", "serve"), ("chta", "chat"), ("rpelay", "replay"), ("tokn", "token")] {
            let result = try await runHerald([typed], input: "")
            #expect(result.status == 64, "\(typed)")
            #expect(result.stderr.contains("Did you mean '\(meant)'?"), "\(typed): \(result.stderr)")
        }
        let bench = try await runHerald(["bench", "post"], input: "")
        #expect(bench.status == 64)
        #expect(bench.stderr.contains("herald-bench"), "the benchmarks moved: \(bench.stderr)")
        let unknown = try await runHerald(["xyzzy"], input: "")
        #expect(unknown.status != 0)
        #expect(!unknown.stderr.contains("Did you mean"), "nothing close: \(unknown.stderr)")
    }

    @Test("herald health asks the server on --port, else HERALD_PORT, prints its /health and exits 0; with no server there, one line and exit 1")
    func health() async throws {
        let folder = try makeTemporaryFolder("herald-health")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await ServerProcess(database: folder.appendingPathComponent("herald.sqlite").path)
        let port = String(server.port)
        let asked: [(arguments: [String], environment: [String: String?])] = [
            (["health", "--port", port], ["HERALD_PORT": nil]), (["health"], ["HERALD_PORT": port]),
        ]
        for (arguments, environment) in asked {
            let result = try await runHerald(arguments, environment: environment, timeout: .seconds(30))
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            let body = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String]
            #expect(body == ["database": "reachable", "status": "ok", "version": HeraldVersion.current], "\(result.stdout)")
        }
        await server.expectCleanStop()

        let refused = try await runHerald(["health", "--port", port], timeout: .seconds(30))
        #expect(refused.status == 1)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr == "herald health: http://127.0.0.1:\(port)/health did not answer: connection refused\n", "\(refused.stderr)")
    }

    @Test("herald explain reads a message's trail from the database named as for serve and says it in words; no database, no message: one line and exit 1")
    func explain() async throws {
        let folder = try makeTemporaryFolder("herald-explain")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        var logger = Logger(label: "explain-test")
        logger.logLevel = .critical
        let store = try await SQLiteStore.open(path: database, logger: logger)
        let (ann, ben) = (Person(id: "ann", displayName: "Ann"), Person(id: "ben", displayName: "Ben"))
        for person in [ann, ben] { _ = try await store.upsertUser(person) }
        let (chat, _) = try await store.createConversation(kind: .direct, title: nil, memberIDs: ["ann", "ben"])
        let posted = try await store.post(MessageDraft(
            id: "hello", conversation: chat.conversation, sender: ann, text: "hello", imageURL: nil))
        guard case .stored(let message) = posted, let seq = message.seq else { throw TestFailure("not stored: \(posted)") }
        let at = Date()
        try await store.recordTrail([
            TrailStep(conversationID: chat.conversation.id, seq: seq, userID: "ben", deviceID: "phone", at: at, kind: .queued,
                      reasons: [.quietHours]),
            TrailStep(conversationID: chat.conversation.id, seq: seq, userID: "ben", deviceID: "phone", at: at, kind: .sent,
                      detail: "apns-0001"),
        ])
        try await store.database.close(markingClean: true)

        let result = try await runHerald(
            ["explain", "--database", database, "--conversation", chat.conversation.id, "--message", "hello"],
            timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        for expected in ["Message hello", "sent by ann", "ann: their own message", "ben: pushed",
                         "push queued (quietly: their quiet hours)", "sent: the push service took it (id apns-0001)"] {
            #expect(result.stdout.contains(expected), "\(expected) in:\n\(result.stdout)")
        }
        let missing = try await runHerald(
            ["explain", "--database", database, "--conversation", chat.conversation.id, "--message", "nope"], timeout: .seconds(30))
        #expect(missing.status == 1 && missing.stderr.contains("no message nope"), "\(missing.stderr)")
        let nowhere = try await runHerald(
            ["explain", "--database", folder.appendingPathComponent("none.sqlite").path, "--conversation", "c", "--message", "m"],
            timeout: .seconds(30))
        #expect(nowhere.status == 1 && nowhere.stderr.contains("there is no database at"), "\(nowhere.stderr)")
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
