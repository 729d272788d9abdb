import Foundation
@testable import HeraldServer
@testable import HeraldSQLite
import Logging
import PostgresNIO
import HeraldTestSupport
import JWTKit
import Testing

@Suite("Push outbox durability", .timeLimit(.minutes(5)), .childProcesses)
struct PushCrashTests {
    @Test("pushes pending at SIGKILL are sent after the restart, each once; those in flight are sent again with the same collapse id and apns-id",
          arguments: StoreKind.available)
    func sigkillWithPushesPending(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            // On PostgreSQL the jobs the dead node had taken are another node's once their lease (here 5 s) ran out;
            // short, but not so short that a send slowed by a busy machine outlives it and goes twice.
            try await sigkillWithPushesPending(database.merging(["HERALD_PUSH_LEASE": "5"]) { $1 })
        }
    }

    private func sigkillWithPushesPending(_ storeEnvironment: [String: String?]) async throws {
        let folder = try makeTemporaryFolder("herald-push-crash")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
        let deviceToken = PushHarness.apnsToken(0xDEAD)
        let messages = (1...10).map { "crash-\($0)" }

        try await FakeAPNs.run { apns in
            let fake = apns.fake
            let environment = storeEnvironment.merging(apns.environment) { $1 }.merging(["HERALD_PUSH_CONCURRENCY": "2"]) { $1 }
            // APNs takes two pushes and never answers: they are in flight when the server dies, the rest wait.
            fake.respond { $0.path.hasPrefix("/3/device/") ? FakeAnswer(status: 200, hold: true) : nil }
            let (first, client, chat) = try await Self.startWithBobsPhone(
                database: database, environment: environment, alice: alice, bob: bob, deviceToken: deviceToken)
            defer { first.stop() }
            for id in messages {
                #expect(try await client.post(alice, to: chat, id: id, text: "message \(id)") == 201)
            }
            try await fake.wait("two pushes in flight") { $0.count == 2 }
            // The concurrency limit holds the rest back; the kill comes once all ten jobs are in the outbox.
            try await waitForOutboxDepth(messages.count, port: first.port)
            #expect(fake.requests.count == 2)
            await first.kill()
            let inFlight = fake.requests

            fake.respond { _ in nil }
            fake.release()
            let second = try await ServerProcess(database: database, secret: TestServer.secret, environment: environment)
            defer { second.stop() }
            let after = try await fake.wait("every message pushed after the restart") { requests in
                Set(requests.dropFirst(inFlight.count).compactMap(\.messageID)) == Set(messages)
            }
            // Nothing more comes: each was sent once after the restart.
            try await Task.sleep(for: .milliseconds(500))
            let resent = fake.requests.dropFirst(inFlight.count).filter { $0.path == "/3/device/\(deviceToken)" }
            #expect(resent.count == messages.count, "each pending push sent once: \(resent.compactMap(\.messageID))")
            _ = after
            for held in inFlight {
                let again = resent.filter { $0.headers["apns-collapse-id"] == held.headers["apns-collapse-id"] }
                #expect(again.count == 1)
                #expect(again.first?.headers["apns-id"] == held.headers["apns-id"], "the same apns-id: APNs and the device see one notification")
            }
            await second.expectCleanStop()
        }
    }

    @Test("a SIGTERM while a push is in flight waits for its answer and keeps it: the push is not sent again after the restart",
          arguments: StoreKind.available)
    func sigtermWithPushInFlight(kind: StoreKind) async throws {
        try await kind.withServerDatabase { storeEnvironment in
            let folder = try makeTemporaryFolder("herald-push-stop")
            defer { try? FileManager.default.removeItem(at: folder) }
            let database = folder.appendingPathComponent("herald.sqlite").path
            let tokens = await TokenAuthority(secret: TestServer.secret)
            let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
            let deviceToken = PushHarness.apnsToken(0xBEEF)
            try await FakeAPNs.run { apns in
                let fake = apns.fake
                let environment = storeEnvironment.merging(apns.environment) { $1 }
                // APNs answers, and takes 2 s to: the push is in flight when the signal comes.
                fake.respond { request in
                    guard request.path.hasPrefix("/3/device/") else { return nil }
                    var answer = FakePushService.defaultAnswer(request)
                    answer.delay = .seconds(2)
                    return answer
                }
                let (first, client, chat) = try await Self.startWithBobsPhone(
                    database: database, environment: environment, alice: alice, bob: bob, deviceToken: deviceToken)
                defer { first.stop() }
                #expect(try await client.post(alice, to: chat, id: "in-flight", text: "Sent as the server stops") == 201)
                try await fake.wait("the push in flight") { $0.contains { $0.messageID == "in-flight" } }
                await first.expectCleanStop("it waits for the answer and exits 0")

                fake.respond { _ in nil }
                let second = try await ServerProcess(database: database, secret: TestServer.secret, environment: environment)
                defer { second.stop() }
                // Something sent after the restart comes through, and nothing before it was sent again.
                #expect(try await RemoteServer(port: second.port).post(alice, to: chat, id: "after", text: "After the restart") == 201)
                try await fake.wait("the push after the restart") { $0.contains { $0.messageID == "after" } }
                try await Task.sleep(for: .milliseconds(500))
                #expect(fake.requests.filter { $0.messageID == "in-flight" }.count == 1, "the answered push went once")
                await second.expectCleanStop()
            }
        }
    }

    @Test("a SIGKILL after messages are committed and before their push decisions: after the restart each is decided from the kept place and pushed once",
          arguments: StoreKind.available)
    func sigkillBeforeDecisions(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            let folder = try makeTemporaryFolder("herald-decision-crash")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await stopBeforeDecisions(SIGKILL, database, file: folder.appendingPathComponent("herald.sqlite").path)
        }
    }

    @Test("a SIGTERM while push decisions are behind does not wait for them: it exits 0, and after the restart each is decided and pushed once",
          arguments: StoreKind.available)
    func sigtermBeforeDecisions(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            let folder = try makeTemporaryFolder("herald-decision-stop")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await stopBeforeDecisions(SIGTERM, database, file: folder.appendingPathComponent("herald.sqlite").path)
        }
    }

    /// Posts bursts and stops the server with `signal` right after one while its decider is behind (a burst where
    /// it kept up is tried again, up to five); after the restart, every message must reach every phone once. A
    /// SIGTERM must not wait for the decider's backlog (deciding it could outlast the shutdown timeout): it exits 0
    /// and leaves the rest to the next start, and the pushes it had in flight are answered before it exits.
    private func stopBeforeDecisions(_ signal: Int32, _ storeEnvironment: [String: String?], file: String) async throws {
        let killed = signal == SIGKILL
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let alice = try await tokens.token(userID: "alice", name: "Alice")
        let members = (0..<10).map { String(format: "member-%02d", $0) }
        try await FakeAPNs.run { apns in
            let fake = apns.fake
            // Nothing is sent in the first 60 s after a decision, so every signal comes before any send of every
            // burst, however slow a busy machine makes the bursts (one in flight then would rightly go again, and on
            // PostgreSQL only once its lease ran out), and every push counted below is the one decision's.
            // And rounds of decisions start at most every 30 s: the first post of a burst is decided at once, the
            // rest wait, so the signal always comes with decisions behind (on a busy machine a faster decider kept
            // up with the posts, and nothing was tested).
            let environment = storeEnvironment.merging(apns.environment) { $1 }
                .merging(["HERALD_PUSH_DELAY": "60", "HERALD_PUSH_DECISION_INTERVAL": "30"]) { $1 }
            var server = try await ServerProcess(database: file, secret: TestServer.secret, environment: environment)
            defer { server.stop() }
            let chat = try await RemoteServer(port: server.port).createConversation(alice, members: members)
            for (index, member) in members.enumerated() {
                let token = try await tokens.token(userID: member, name: member)
                let registered = try await HTTPClient.request(
                    port: server.port, "PUT", "/v1/devices/phone", token: token,
                    body: #"{"platform": "apns", "token": "\#(PushHarness.apnsToken(index + 1))"}"#)
                #expect(registered.status == 200)
            }
            // A burst of posts, answered once committed; the signal follows the last answer at once, while the
            // decider (a job for each of 10 phones, for each message) is still behind.
            var posted: [String] = []
            var caughtBehind = false
            for attempt in 0..<5 where !caughtBehind {
                let ids = (0..<100).map { "a\(attempt)-m\($0)" }
                let port = server.port
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for id in ids {
                        group.addTask {
                            // As a client does, a post answered 503 (the database's bound passed, on a loaded machine)
                            // is sent again with its id: stored once, whichever try stored it.
                            var status = 503
                            for _ in 0..<5 where status == 503 {
                                status = try await RemoteServer(port: port).post(alice, to: chat, id: id, text: "message \(id)")
                            }
                            return status
                        }
                    }
                    for try await status in group { #expect(status == 201 || status == 200) }
                }
                let status = await Self.stop(server, killing: killed)
                #expect(killed || status == 0, "SIGTERM with decisions behind stops cleanly")
                posted += ids
                let (decided, latest) = try await Self.decisionPlace(storeEnvironment, file: file)
                caughtBehind = decided < latest
                server = try await ServerProcess(database: file, secret: TestServer.secret, environment: environment)
            }
            #expect(caughtBehind, "in five bursts the decider was never behind at the signal: nothing here tested it")

            // Every message posted gets one push to each phone: those decided before a kill, and those after.
            let expected = posted.count * members.count
            try await Self.waitForPushes(expected, to: fake, from: server)
            try await Task.sleep(for: .milliseconds(500))
            var seen: [String: Int] = [:]
            for request in fake.requests {
                guard let message = request.messageID else { continue }
                seen["\(request.path) \(message)", default: 0] += 1
            }
            #expect(seen.count == expected, "every message to every phone")
            #expect(seen.values.allSatisfy { $0 == 1 }, "each once: \(seen.filter { $0.value > 1 }.keys.sorted().prefix(5))")
            await server.expectCleanStop()
        }
    }

    /// Waits until `fake` saw `expected` pushes about messages; if it never does, the failure also shows the end of
    /// `server`'s log, which names the culprit (a lease held, a send that failed).
    private static func waitForPushes(_ expected: Int, to fake: FakePushService, from server: ServerProcess) async throws {
        do {
            try await fake.wait(timeout: .seconds(240), "a push for every message to every phone") { requests in
                requests.filter { $0.messageID != nil }.count >= expected
            }
        } catch {
            Issue.record("the last server's log ends:\n\(server.logTail(80))")
            throw error
        }
    }

    /// A server on `database`, Alice and Bob's chat, and Bob's phone registered with `deviceToken`.
    private static func startWithBobsPhone(
        database: String, environment: [String: String?], alice: String, bob: String, deviceToken: String
    ) async throws -> (server: ServerProcess, client: RemoteServer, chat: String) {
        let server = try await ServerProcess(database: database, secret: TestServer.secret, environment: environment)
        do {
            let client = RemoteServer(port: server.port)
            let chat = try await client.createConversation(alice, members: ["bob"])
            let registered = try await HTTPClient.request(
                port: server.port, "PUT", "/v1/devices/bob-phone", token: bob,
                body: #"{"platform": "apns", "token": "\#(deviceToken)"}"#)
            #expect(registered.status == 200)
            return (server, client, chat)
        } catch {
            server.stop()
            throw error
        }
    }

    /// Kills `server` (SIGKILL) or stops it (SIGTERM); its exit status.
    private static func stop(_ server: ServerProcess, killing: Bool) async -> Int32 {
        if killing {
            await server.kill()
            return SIGKILL
        }
        return await server.terminate()
    }

    /// Where the push decisions stand in the log, and the log's last seq, read from the database of a dead server.
    static func decisionPlace(_ storeEnvironment: [String: String?], file: String) async throws -> (decided: Int64, latest: Int64) {
        let query = "SELECT (SELECT seq FROM log_cursors WHERE name = 'push') AS decided, (SELECT max(seq) FROM messages) AS latest"
        if let url = storeEnvironment["HERALD_POSTGRES_URL"] ?? nil {
            return try await PostgresServeTests.withClient(url) { client in
                let row = try #require(try await client.query(PostgresQuery(unsafeSQL: query)).collect().first)
                let (decided, latest) = try row.decode((Int64, Int64).self)
                return (decided, latest)
            }
        }
        // Read from a copy: closing the last connection to the file itself would fold its -wal in, and the server
        // rightly refuses a database left by a crash without one.
        let copy = try makeTemporaryFolder("herald-decision-place")
        defer { try? FileManager.default.removeItem(at: copy) }
        let read = copy.appendingPathComponent("copy.sqlite").path
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: file + suffix) {
            try FileManager.default.copyItem(atPath: file + suffix, toPath: read + suffix)
        }
        let handle = try SQLiteHandle(path: read)
        let row = try #require(try handle.query(query).first)
        return (Int64(row.column("decided")?.integer ?? 0), Int64(row.column("latest")?.integer ?? 0))
    }
}
