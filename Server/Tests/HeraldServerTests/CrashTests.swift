import Foundation
import HeraldServer
import NIOCore
import HeraldTestSupport
import Testing

/// Counts acknowledged sends across tasks, and the writers that stopped.
actor Acknowledged {
    private(set) var ids: [String] = []
    private(set) var writersStopped = 0
    func add(_ id: String) { ids.append(id) }
    func writerStopped() { writersStopped += 1 }
    var count: Int { ids.count }
}

// Four minutes: a case waits for 1,000 acknowledged posts and starts two servers; on PostgreSQL, with every suite at
// once on a 2-core machine and a busy loop beside it, one case took more than the two minutes it had.
@Suite("Durability and shutdown", .timeLimit(.minutes(4)), .childProcesses)
struct CrashTests {
    @Test("the server killed with SIGKILL during a run of acknowledged sends keeps every acknowledged message",
          arguments: StoreKind.available)
    func sigkill(kind: StoreKind) async throws {
        try await kind.withServerDatabase { environment in
            try await killWhilePosting(writers: 4, killAfter: 200, environment: environment)
        }
    }

    @Test("under group commit (64 posts in flight at once, committed in groups) SIGKILL mid-group loses no acknowledged post",
          arguments: StoreKind.available)
    func sigkillMidGroup(kind: StoreKind) async throws {
        try await kind.withServerDatabase { environment in
            try await killWhilePosting(writers: 64, killAfter: 1_000, environment: environment)
        }
    }

    /// `writers` clients post at once, each its next post as soon as the last is answered; the server is killed
    /// once `killAfter` posts were acknowledged; restarted, it must have every one of them.
    private func killWhilePosting(writers: Int, killAfter: Int, environment: [String: String?]) async throws {
        let folder = try makeTemporaryFolder("herald-crash")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let secret = TestServer.secret
        let tokens = await TokenAuthority(secret: secret)
        let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))

        let first = try await ServerProcess(database: database, secret: secret, environment: environment)
        defer { first.stop() }
        let client = RemoteServer(port: first.port)
        let chat = try await client.createConversation(alice, members: ["bob"])
        let acknowledged = Acknowledged()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for index in 0..<10_000 {
                        let id = "w\(writer)-\(index)"
                        guard let status = try? await client.post(bob, to: chat, id: id, text: "message \(index)") else { break }
                        if status == 201 { await acknowledged.add(id) }
                    }
                    await acknowledged.writerStopped()
                }
            }
            group.addTask {
                // Until enough posts were acknowledged, or every writer stopped (each post is bounded: a server that
                // leaves posts unanswered fails the check below rather than holding the test to its time limit).
                while await acknowledged.count < killAfter, await acknowledged.writersStopped < writers {
                    try await Task.sleep(for: .milliseconds(5))
                }
                await first.kill()
            }
            try await group.waitForAll()
        }
        let acked = await acknowledged.ids
        #expect(acked.count >= killAfter, "every writer stopped (a post failed or went unanswered) after \(acked.count) acknowledged posts; the server's log: \(first.logTail())")

        // Its log is kept: a shutdown that does not end in 0 says why there.
        let secondLog = folder.appendingPathComponent("second.log")
        let second = try await ServerProcess(database: database, secret: secret, environment: environment, errorLog: secondLog)
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
        let status = await second.terminate()
        let said = (try? String(contentsOf: secondLog, encoding: .utf8)) ?? ""
        #expect(status == 0, "SIGTERM stops it gracefully; its log says: \(crashReport(said))")
    }

    @Test("SIGTERM: new connections are refused, a request already in flight is answered and kept, and it exits 0")
    func gracefulShutdown() async throws {
        let folder = try makeTemporaryFolder("herald-shutdown")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let secret = TestServer.secret
        let tokens = await TokenAuthority(secret: secret)
        let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
        let server = try await ServerProcess(database: database, secret: secret)
        defer { server.stop() }
        let chat = try await RemoteServer(port: server.port).createConversation(alice, members: ["bob"])

        // A post whose body is only half sent when the signal comes: in flight, and held there by the client.
        let body = #"{"id": "in-flight", "text": "Sent while the server stops"}"#
        let head = "POST /v1/conversations/\(chat)/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Authorization: Bearer \(bob)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
        let connection = try await connectTCP(port: server.port)
        let response = try await connection.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: head + body.prefix(20)))
            // The signal once the server has begun the request (a connection with no request begun is idle, and
            // closed at once by a graceful stop): its metrics count it in flight, beside the scrape asking.
            try await eventually("the half-sent post is in flight") {
                try await metric("herald_http_requests_in_flight", port: server.port) ?? 0 >= 2
            }
            server.stop()
            var refused = false
            for _ in 0..<250 where !refused {
                do {
                    try await connectTCP(port: server.port).executeThenClose { _, _ in }
                    try await Task.sleep(for: .milliseconds(20))
                } catch {
                    refused = true
                }
            }
            #expect(refused, "it stops accepting connections")
            try await outbound.write(ByteBuffer(string: String(body.dropFirst(20))))
            var text = ""
            for try await buffer in inbound { text += String(buffer: buffer) }
            return text
        }
        #expect(response.hasPrefix("HTTP/1.1 201"), "the request in flight is answered: \(response.prefix(200))")
        #expect(await server.exited() == 0, "and then it exits cleanly")

        let restarted = try await ServerProcess(database: database, secret: secret)
        defer { restarted.stop() }
        let stored = try await RemoteServer(port: restarted.port).messages(alice, in: chat, after: 0)
        #expect(stored.map(\.id) == ["in-flight"], "the message it acknowledged is kept")
    }
}

/// What of a server's log to show when it did not stop cleanly: the crash report's head (the reason and the crashed
/// thread's frames) when there is one, else the log's end.
func crashReport(_ log: String) -> String {
    if let start = log.range(of: "Fatal error") ?? log.range(of: "Program crashed") {
        let from = log.index(start.lowerBound, offsetBy: -200, limitedBy: log.startIndex) ?? log.startIndex
        return String(log[from...].prefix(6000))
    }
    return String(log.suffix(3000))
}

/// A server in another process, over HTTP, whose tokens are signed with `secret`.
struct RemoteServer: Sendable {
    let port: Int
    var secret = TestServer.secret

    /// A group of the caller and `members`, each signed in first (only people who signed in may be added).
    func createConversation(_ token: String, members: [String]) async throws -> String {
        try await signIn(members)
        let body = #"{"kind": "group", "title": "Durable", "members": [\#(members.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        let result = try await whileUnavailable {
            try await HTTPClient.request(port: port, "POST", "/v1/conversations", token: token, body: body)
        }
        guard result.status == 201 || result.status == 200 else {
            throw TestFailure("creating a conversation failed: \(result.status) \(result.text)")
        }
        return try result.decode(ConversationJSON.self).id
    }

    /// Makes `users` known to the server, as their first request does.
    func signIn(_ users: [String]) async throws {
        let tokens = await TokenAuthority(secret: secret)
        for user in users {
            let token = try await tokens.token(userID: user, name: user.capitalized)
            let result = try await whileUnavailable {
                try await HTTPClient.request(port: port, "GET", "/v1/conversations?limit=1", token: token)
            }
            guard result.status == 200 else { throw TestFailure("signing in \(user) failed: \(result.status) \(result.text)") }
        }
    }

    /// `request`, sent again while it is answered 503 (a database still connecting on a busy machine, as a client
    /// honouring Retry-After would), for up to 30 s.
    func whileUnavailable(_ request: () async throws -> HTTPResult) async throws -> HTTPResult {
        var result = try await request()
        for _ in 0..<30 where result.status == 503 {
            try await Task.sleep(for: .seconds(1))
            result = try await request()
        }
        return result
    }

    /// Posts; the HTTP status, or an error if the server is gone.
    func post(_ token: String, to conversation: String, id: String, text: String) async throws -> Int {
        try await HTTPClient.request(
            port: port, "POST", "/v1/conversations/\(conversation)/messages", token: token,
            body: #"{"id": "\#(id)", "text": "\#(text)"}"#
        ).status
    }

    /// `GET /health`'s status.
    func health() async throws -> Int {
        try await HTTPClient.request(port: port, "GET", "/health").status
    }

    func messages(_ token: String, in conversation: String, after: Int64) async throws -> [MessageJSON] {
        try await HTTPClient.request(
            port: port, "GET", "/v1/conversations/\(conversation)/messages?after=\(after)&limit=200", token: token
        ).decode(MessageListJSON.self).messages
    }
}
