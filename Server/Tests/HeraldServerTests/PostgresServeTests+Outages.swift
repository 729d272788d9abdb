import Foundation
@testable import HeraldServer
import HeraldTestSupport
import JWTKit
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Testing

/// A node whose database goes away: it answers 503 and keeps trying, comes back by itself, and stops on SIGTERM.
extension PostgresServeTests {
    @Test("the database going away: /health says 503, a post is refused with database_unavailable; back, both work again")
    func databaseGoesAway() async throws {
        try await StoreKind.postgres.withServerDatabase { database in
            let url = try #require(database["HERALD_POSTGRES_URL"] ?? nil)
            var components = try #require(URLComponents(string: url))
            let proxy = try await TCPProxy.start(to: try #require(components.port))
            components.port = proxy.port
            let node = try await ServerProcess(
                database: "unused.sqlite", secret: TestServer.secret,
                environment: ["HERALD_POSTGRES_URL": components.string, "LOG_LEVEL": "debug"])
            defer { node.stop() }
            let tokens = await TokenAuthority(secret: TestServer.secret)
            let alice = try await tokens.token(userID: "alice", name: "Alice")
            let client = RemoteServer(port: node.port)
            let chat = try await client.createConversation(alice, members: ["bob"])
            let healthy = try await HTTPClient.request(port: node.port, "GET", "/health")
            #expect(healthy.status == 200 && healthy.text.contains(#""database":"reachable""#))

            proxy.cut()
            let down = try await HTTPClient.request(port: node.port, "GET", "/health")
            #expect(down.status == 503 && down.text.contains(#""database":"unreachable""#))
            let refused = try await HTTPClient.request(
                port: node.port, "POST", "/v1/conversations/\(chat)/messages", token: alice, body: #"{"text": "anyone?"}"#)
            #expect(refused.status == 503 && refused.errorCode == "database_unavailable", "\(refused.status) \(refused.text)")
            #expect(refused.headers[.retryAfter] == "1")

            proxy.restore()
            var back = 0
            for _ in 0..<100 where back != 200 {
                back = try await HTTPClient.request(port: node.port, "GET", "/health").status
                if back != 200 { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(back == 200, "healthy again once the database is back")
            // A connection the pool held through the cut may fail once more before it is replaced: the post is
            // answered 503 with Retry-After, and a client that honours it gets through.
            let again = try await client.whileUnavailable {
                try await HTTPClient.request(
                    port: node.port, "POST", "/v1/conversations/\(chat)/messages", token: alice,
                    body: #"{"id": "back", "text": "back again"}"#)
            }
            #expect(again.status == 201, "\(again.status) \(again.text)")
            await node.expectCleanStop()
            await proxy.close()
        }
    }

    @Test("a node whose database cannot be reached keeps trying, says so, and stops on SIGTERM")
    func unreachableDatabase() async throws {
        let folder = try makeTemporaryFolder("herald-unreachable")
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("stderr.log")
        // Port 1 on loopback: nothing listens there.
        let child = try ChildProcess(
            heraldExecutable, ["serve", "--port", "0", "--postgres", "postgres://herald:pw-7Zq4@127.0.0.1:1/herald"],
            errors: .file(log))
        var said = ""
        for _ in 0..<400 where !said.contains("trying again") {
            try await Task.sleep(for: .milliseconds(50))
            said = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        }
        #expect(said.contains("the database cannot be reached; trying again"), "it said: \(said)")
        // The password never reaches the log.
        #expect(said.contains("postgres://herald:***@127.0.0.1:1/herald") && !said.contains("pw-7Zq4"))
        #expect(child.isRunning, "it waits for the database rather than exiting")
        child.signal(SIGTERM)
        _ = await child.exited()
    }

    @Test("a node whose database server was stopped under it stays cheap (a bounded retry, no spin) and stops on SIGTERM within its grace period")
    func databaseServerStopped() async throws {
        // A database server of its own (scripts/postgres), to stop under the node.
        let started = try await runProcess(packageRoot.appendingPathComponent("scripts/postgres"), ["start"], timeout: .seconds(120))
        let parts = started.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")
        guard started.status == 0, parts.count == 2 else { throw TestFailure("no database server: \(started.stderr)") }
        let (folder, url) = (String(parts[0]), String(parts[1]))
        var stopped = false
        func stopDatabase() async throws {
            guard !stopped else { return }
            stopped = true
            let stop = try await runProcess(packageRoot.appendingPathComponent("scripts/postgres"), ["stop", folder], timeout: .seconds(60))
            #expect(stop.status == 0, "\(stop.stderr)")
        }
        do {
            let node = try await ServerProcess(
                database: "unused.sqlite", secret: TestServer.secret,
                environment: ["HERALD_POSTGRES_URL": url, "HERALD_SHUTDOWN_TIMEOUT": "10", "HERALD_PRESENCE_EXPIRY": "3", "LOG_LEVEL": "debug"])
            defer { node.stop() }
            let tokens = await TokenAuthority(secret: TestServer.secret)
            let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
            let remote = RemoteServer(port: node.port)
            let chat = try await remote.createConversation(alice, members: ["bob"])
            #expect(try await remote.post(alice, to: chat, id: "before", text: "while the database is there") == 201)
            // Bob is connected, and goes on changing his presence while the database is gone.
            let socket = try await TestSocket.connect(url: "ws://127.0.0.1:\(node.port)/v1/stream?token=\(bob)")
            defer { socket.close() }
            var reader = FrameReader(socket)
            _ = try await reader.untilReady()

            try await stopDatabase()
            let refused = try await HTTPClient.request(
                port: node.port, "POST", "/v1/conversations/\(chat)/messages", token: alice, body: #"{"text": "anyone?"}"#)
            #expect(refused.status == 503 && refused.errorCode == "database_unavailable", "\(refused.status) \(refused.text)")
            // Twenty seconds without its database, a presence change a second: the processor time it takes meanwhile.
            let before = try #require(node.processorSeconds)
            for index in 0..<20 {
                socket.send(#"{"type": "app", "state": "\#(index.isMultiple(of: 2) ? "background" : "foreground")"}"#)
                try await Task.sleep(for: .seconds(1))
            }
            let used = try #require(node.processorSeconds) - before
            #expect(used < 2, "a node without its database waits; it used \(used) s of processor time in 20 s")
            #expect(node.isRunning, "it keeps trying rather than exiting")

            // SIGTERM: a graceful exit, with nothing left to cut at the end of its grace period.
            let asked = ContinuousClock.now
            let status = await node.terminate()
            let took = ContinuousClock.now - asked
            #expect(status == 0, "it exits by itself: \(status), after \(took); its log:\n\(node.logTail(150))")
            #expect(!node.logTail(40).contains("took longer than HERALD_SHUTDOWN_TIMEOUT"), "within its grace period: \(node.logTail(40))")
            #expect(took < .seconds(20), "within its 10 s grace period (and the machine's slack): \(took)")
        } catch {
            try? await stopDatabase()
            throw error
        }
        try await stopDatabase()
    }
}
