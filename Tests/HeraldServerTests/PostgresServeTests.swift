import Foundation
@testable import HeraldServer
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing

/// `herald serve --postgres`: nodes on one database share what they must (the token secret, the messages), and a
/// node whose database cannot be reached waits for it, saying so, rather than exiting.
@Suite("herald serve on PostgreSQL", .enabled(if: StoreKind.postgresURL != nil), .timeLimit(.minutes(2)))
struct PostgresServeTests {
    @Test("two nodes without HERALD_JWT_SECRET sign with the secret the database keeps; a post on one is read on the other")
    func twoNodesShareTheDatabase() async throws {
        try await StoreKind.postgres.withServerDatabase { environment in
            let first = try await ServerProcess(database: "unused.sqlite", environment: environment)
            defer { first.stop() }
            let second = try await ServerProcess(database: "unused.sqlite", environment: environment)
            defer { second.stop() }
            #expect(first.firstLine.hasPrefix("Open http://127.0.0.1:"))

            // The secret both nodes use is the one in the database: a token signed with it works on either.
            let url = try #require(environment["HERALD_POSTGRES_URL"] ?? nil)
            let secret = try await Self.setting("token_secret", in: url)
            #expect(secret.utf8.count >= 32)
            let tokens = await TokenAuthority(secret: secret)
            let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))

            let onFirst = RemoteServer(port: first.port), onSecond = RemoteServer(port: second.port)
            let chat = try await onFirst.createConversation(alice, members: ["bob"])
            #expect(try await onFirst.post(alice, to: chat, id: "hello-1", text: "hello from the first node") == 201)
            #expect(try await onSecond.post(bob, to: chat, id: "hello-2", text: "and back from the second") == 201)
            let read = try await onSecond.messages(alice, in: chat, after: 0)
            #expect(read.map(\.id) == ["hello-1", "hello-2"] && read.map(\.seq) == [1, 2])
            #expect(await first.terminate() == 0)
            #expect(await second.terminate() == 0)
        }
    }

    @Test("a node whose database cannot be reached keeps trying, says so, and stops on SIGTERM")
    func unreachableDatabase() async throws {
        let folder = try makeTemporaryFolder("herald-unreachable")
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("stderr.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        // Port 1 on loopback: nothing listens there.
        let process = makeProcess(heraldExecutable, ["serve", "--port", "0", "--postgres", "postgres://herald:secret@127.0.0.1:1/herald"])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        let child = try ChildProcess(process)
        defer { child.signal(SIGKILL) }
        var said = ""
        for _ in 0..<400 where !said.contains("trying again") {
            try await Task.sleep(for: .milliseconds(50))
            said = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        }
        #expect(said.contains("the database cannot be reached; trying again"), "it said: \(said)")
        // The password never reaches the log.
        #expect(said.contains("postgres://herald:***@127.0.0.1:1/herald") && !said.contains("secret"))
        #expect(process.isRunning, "it waits for the database rather than exiting")
        child.signal(SIGTERM)
        _ = await child.exited()
    }

    /// A value of `herald_settings` in the database `url` names.
    static func setting(_ name: String, in url: String) async throws -> String {
        var logger = Logger(label: "postgres-serve-test")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: try PostgresStore.configuration(url), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let rows = try await client.query("SELECT value FROM herald_settings WHERE name = \(name)").collect()
            return try #require(try rows.first?.decode(String.self))
        }
    }
}
