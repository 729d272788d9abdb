import Foundation
import HeraldServer
import HeraldTestSupport
import JWTKit
import Testing

@Suite("Push outbox durability", .timeLimit(.minutes(2)))
struct PushCrashTests {
    @Test("pushes pending at SIGKILL are sent after the restart, each once; those in flight are sent again with the same collapse id and apns-id",
          arguments: StoreKind.available)
    func sigkillWithPushesPending(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            // On PostgreSQL the jobs the dead node had taken are another node's once their lease (here 2 s) ran out.
            try await sigkillWithPushesPending(database.merging(["HERALD_PUSH_LEASE": "2"]) { $1 })
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
            let first = try await ServerProcess(database: database, secret: TestServer.secret, environment: environment)
            defer { first.stop() }
            let client = RemoteServer(port: first.port)
            let chat = try await client.createConversation(alice, members: ["bob"])
            let registered = try await HTTPClient.request(
                port: first.port, "PUT", "/v1/devices/bob-phone", token: bob,
                body: #"{"platform": "apns", "token": "\#(deviceToken)"}"#)
            #expect(registered.status == 204)
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
            #expect(await second.terminate() == 0)
        }
    }

    /// Waits (up to 15 s) until the server's `/metrics` counts `depth` jobs in its push outbox.
    private func waitForOutboxDepth(_ depth: Int, port: Int) async throws {
        var last = "no answer"
        try await eventually("the outbox holds \(depth) jobs", detail: { last }) {
            let metrics = try await HTTPClient.request(port: port, "GET", "/metrics")
            let line = metrics.text.split(separator: "\n").first { $0.hasPrefix("herald_push_outbox_depth ") }
            last = line.map(String.init) ?? "no herald_push_outbox_depth line"
            return line?.split(separator: " ").last.flatMap { Double($0) } == Double(depth)
        }
    }
}
