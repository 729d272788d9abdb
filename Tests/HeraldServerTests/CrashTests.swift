import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// Counts acknowledged sends across tasks.
actor Acknowledged {
    private(set) var ids: [String] = []
    func add(_ id: String) { ids.append(id) }
    var count: Int { ids.count }
}

@Suite("Durability", .timeLimit(.minutes(2)))
struct CrashTests {
    @Test("the server killed with SIGKILL during a run of acknowledged sends keeps every acknowledged message")
    func sigkill() async throws {
        let folder = try makeTemporaryFolder("herald-crash")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let secret = TestServer.secret
        let tokens = await TokenAuthority(secret: secret)
        let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))

        let first = try await ServerProcess(database: database, secret: secret)
        defer { first.stop() }
        let client = RemoteServer(port: first.port)
        let chat = try await client.createConversation(alice, members: ["bob"])
        let acknowledged = Acknowledged()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for index in 0..<10_000 {
                        let id = "w\(writer)-\(index)"
                        guard let status = try? await client.post(bob, to: chat, id: id, text: "message \(index)") else { return }
                        if status == 201 { await acknowledged.add(id) }
                    }
                }
            }
            group.addTask {
                while await acknowledged.count < 200 {
                    try await Task.sleep(for: .milliseconds(5))
                }
                await first.kill()
            }
            try await group.waitForAll()
        }
        let acked = await acknowledged.ids
        #expect(acked.count >= 200)

        let second = try await ServerProcess(database: database, secret: secret)
        defer { second.stop() }
        let restarted = RemoteServer(port: second.port)
        var stored: Set<String> = []
        var after: Int64 = 0
        while true {
            let page = try await restarted.messages(alice, in: chat, after: after)
            stored.formUnion(page.map(\.id))
            guard let last = page.last else { break }
            after = last.seq
        }
        let lost = Set(acked).subtracting(stored)
        #expect(lost.isEmpty, "acknowledged but lost: \(lost.sorted().prefix(10))")
        #expect(await second.terminate() == 0, "SIGTERM stops it gracefully")
    }
}

/// A server in another process, over HTTP.
struct RemoteServer: Sendable {
    let port: Int

    func createConversation(_ token: String, members: [String]) async throws -> String {
        let body = #"{"kind": "group", "title": "Durable", "members": [\#(members.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        let result = try await HTTPClient.request(port: port, "POST", "/v1/conversations", token: token, body: body)
        return try result.decode(ConversationJSON.self).id
    }

    /// Posts; the HTTP status, or an error if the server is gone.
    func post(_ token: String, to conversation: String, id: String, text: String) async throws -> Int {
        try await HTTPClient.request(
            port: port, "POST", "/v1/conversations/\(conversation)/messages", token: token,
            body: #"{"id": "\#(id)", "text": "\#(text)"}"#
        ).status
    }

    func messages(_ token: String, in conversation: String, after: Int64) async throws -> [MessageJSON] {
        try await HTTPClient.request(
            port: port, "GET", "/v1/conversations/\(conversation)/messages?after=\(after)&limit=200", token: token
        ).decode(MessageListJSON.self).messages
    }
}
