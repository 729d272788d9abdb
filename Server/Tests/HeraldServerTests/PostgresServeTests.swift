import Foundation
@testable import HeraldPostgres
@testable import HeraldServer
import HeraldTestSupport
import JWTKit
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Testing

/// `herald serve --postgres`: nodes on one database share what they must (the token secret, the messages), and a
/// node whose database cannot be reached waits for it, saying so, rather than exiting.
@Suite("herald serve on PostgreSQL", .enabled(if: StoreKind.postgresURL != nil), .timeLimit(.minutes(5)), .childProcesses)
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

            let onFirst = RemoteServer(port: first.port, secret: secret), onSecond = RemoteServer(port: second.port, secret: secret)
            let chat = try await onFirst.createConversation(alice, members: ["bob"])
            #expect(try await onFirst.post(alice, to: chat, id: "hello-1", text: "hello from the first node") == 201)
            #expect(try await onSecond.post(bob, to: chat, id: "hello-2", text: "and back from the second") == 201)
            let read = try await onSecond.messages(alice, in: chat, after: 0)
            #expect(read.map(\.id) == ["hello-1", "hello-2"] && read.map(\.seq) == [1, 2])
            await first.expectCleanStop()
            await second.expectCleanStop()
        }
    }

    @Test("posts on one node reach streams on another, once each and in seq order, also across the loss of the listening connection")
    func fanOutBetweenNodes() async throws {
        try await StoreKind.postgres.withServerDatabase { environment in
            let secret = TestServer.secret
            let folder = try makeTemporaryFolder("herald-fan-out")
            defer { try? FileManager.default.removeItem(at: folder) }
            let log = folder.appendingPathComponent("second.log")
            let first = try await ServerProcess(database: "unused.sqlite", secret: secret, environment: environment)
            defer { first.stop() }
            let second = try await ServerProcess(
                database: "unused.sqlite", secret: secret, environment: environment, errorLog: log)
            defer { second.stop() }
            let tokens = await TokenAuthority(secret: secret)
            let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
            let onFirst = RemoteServer(port: first.port)
            let chat = try await onFirst.createConversation(alice, members: ["bob"])

            // Bob listens on the second node; Alice posts on the first, and Bob himself on the second.
            let socket = try await TestSocket.connect(url: "ws://127.0.0.1:\(second.port)/v1/stream?token=\(bob)")
            defer { socket.close() }
            var reader = FrameReader(socket)
            _ = try await reader.untilReady()
            let onSecond = RemoteServer(port: second.port)
            for index in 0..<20 {
                #expect(try await onFirst.post(alice, to: chat, id: "a-\(index)", text: "from the first node") == 201)
                if index.isMultiple(of: 5) {
                    #expect(try await onSecond.post(bob, to: chat, id: "b-\(index)", text: "from the second node") == 201)
                }
            }
            var seen: [MessageJSON] = []
            while seen.count < 24 {
                let frame = try await reader.next()
                if let message = frame.message, frame.type == "message" { seen.append(message) }
            }
            #expect(seen.map(\.seq) == Array(1...24), "every message once, in seq order")

            // The second node's listening connection is cut: what is posted meanwhile arrives once it listens again.
            let url = try #require(environment["HERALD_POSTGRES_URL"] ?? nil)
            #expect(try await Self.cutListeners(in: url) >= 2, "both nodes were listening")
            for index in 0..<10 {
                #expect(try await onFirst.post(alice, to: chat, id: "c-\(index)", text: "while it was not listening") == 201)
            }
            while seen.count < 34 {
                let frame = try await reader.next()
                if let message = frame.message, frame.type == "message" { seen.append(message) }
            }
            #expect(seen.map(\.seq) == Array(1...34))
            let said = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            #expect(said.contains("listening for other nodes' entries failed; listening again"), "the cut was noticed: \(said)")
            // Nothing more, nothing twice: a ping's pong comes next.
            #expect(try await reader.drain(socket).filter { $0.type == "message" }.isEmpty)
        }
    }

    @Test("the push decision on one node sees the connections on another; a node killed stops counting after the expiry")
    func presenceAcrossNodes() async throws {
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
        let phone = PushHarness.apnsToken(0xB0B)

        // The expiry is long enough that the decision on a message posted just after node A's death is made within
        // it on a busy machine; the test then waits for the expiry itself, not for a time it guesses.
        let expiry = 12
        try await Self.twoNodes(alice: alice, bob: bob, phone: phone, environment: [
            "HERALD_PRESENCE_EXPIRY": "\(expiry)", "HERALD_CONFIRM_WITHIN": "300",
        ]) { nodes in
        let (nodeA, nodeB, onB, chat, fake, url) = (nodes.a, nodes.b, nodes.onB, nodes.chat, nodes.fake, nodes.url)
        func pushed() -> [String] { fake.requests.compactMap(\.messageID) }

        // Bob is in the foreground on node A: a message posted on node B, which his stream confirms as a client
        // does, pushes nothing (unconfirmed, it would be pushed after HERALD_CONFIRM_WITHIN: rule 8).
        let socket = try await TestSocket.connect(url: "ws://127.0.0.1:\(nodeA.port)/v1/stream?token=\(bob)")
        defer { socket.close() }
        var reader = FrameReader(socket)
        _ = try await reader.untilReady()
        try await Self.waitForPresence(of: "bob", foreground: true, in: url)
        #expect(try await onB.post(alice, to: chat, id: "while-looking", text: "you see this on A") == 201)
        var looking = try await reader.next()
        while looking.message?.id != "while-looking" { looking = try await reader.next() }
        socket.confirm(through: try #require(looking.message?.seq))
        // The decision is made from the log just after the commit: it was made before Bob goes away.
        try await Self.waitForPushDecisions(through: 1, in: url)

        // In the background on node A: the phone is pushed.
        socket.send(#"{"type": "app", "state": "background"}"#)
        try await Self.waitForPresence(of: "bob", foreground: false, in: url)
        #expect(try await onB.post(alice, to: chat, id: "while-away", text: "to the phone") == 201)
        try await fake.wait("the push for the message posted while Bob was away") { _ in pushed() == ["while-away"] }

        // Back in the foreground, then node A dies: it still counts until its heartbeat is older than the expiry ...
        socket.send(#"{"type": "app", "state": "foreground"}"#)
        try await Self.waitForPresence(of: "bob", foreground: true, in: url)
        await nodeA.kill()
        #expect(try await onB.post(alice, to: chat, id: "just-after", text: "A still counts") == 201)
        try await Self.waitForPushDecisions(through: try await Self.latestSeq(in: url), in: url)
        // ... and not after.
        try await Self.waitUntilStale(user: "bob", expiry: expiry, in: url)
        #expect(try await onB.post(alice, to: chat, id: "long-after", text: "A is gone") == 201)
        try await fake.wait("the push after node A expired") { _ in pushed().contains("long-after") }
        #expect(pushed() == ["while-away", "long-after"], "no push while Bob was in the foreground on A")
        await nodeB.expectCleanStop()
    }
    }

    @Test("one stream flooding 200,000 focus and app frames on node A: an away member still gets every push from node B, and A's presence writes and memory stay bounded")
    func presenceFlood() async throws {
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let (alice, bob, mallory) = try await (
            tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"),
            tokens.token(userID: "mallory", name: "Mallory"))
        let phone = PushHarness.apnsToken(0xF100D)

        // The frame budget is raised (ServerProcess's default): this is about presence, not the budget.
        try await Self.twoNodes(alice: alice, bob: bob, phone: phone) { nodes in
        let (nodeA, nodeB, onB, chat, fake, url) = (nodes.a, nodes.b, nodes.onB, nodes.chat, nodes.fake, nodes.url)

        // Bob is in the foreground on node A.
        let socket = try await TestSocket.connect(url: "ws://127.0.0.1:\(nodeA.port)/v1/stream?token=\(bob)")
        defer { socket.close() }
        var reader = FrameReader(socket)
        _ = try await reader.untilReady()
        try await Self.waitForPresence(of: "bob", foreground: true, in: url)
        let before = try #require(nodeA.residentBytes)

        // Mallory floods node A: focus changes and app-state toggles, 200,000 frames, as fast as they go.
        let frames = [#"{"type":"focus","conversation":"x"}"#, #"{"type":"app","state":"background"}"#,
                      #"{"type":"focus","conversation":"y"}"#, #"{"type":"app","state":"foreground"}"#]
            .map { LimitsTests.masked(Array($0.utf8)) }
        let chunk = (0..<250).flatMap { frames[$0 % 4] }  // 250 frames
        let port = nodeA.port
        let (started, startedSink) = AsyncStream<Void>.makeStream()
        let done = NIOLockedValueBox(false)
        let samples = NIOLockedValueBox<[Int]>([])
        // The flood and the sampling are child tasks: whatever happens below, they end with this block.
        try await withThrowingTaskGroup(of: Void.self) { group in
            defer { group.cancelAll() }
            group.addTask {
                defer { done.withLockedValue { $0 = true } }
                let flood = try await RawWebSocket(port: port, path: "/v1/stream?token=\(mallory)")
                for index in 0..<800 {
                    try await flood.connection.send(chunk)
                    if index == 40 { startedSink.finish() }
                }
                // Every frame was taken when the pong after the last one comes.
                try await flood.send(Array(#"{"type":"ping"}"#.utf8))
                while let frame = try await flood.next(), !frame.text.contains("pong") {}
                await flood.close()
            }
            // The presence waiting to be written, sampled from node A's /metrics while the flood lasts.
            group.addTask {
                while !done.withLockedValue({ $0 }) {
                    if let waiting = try? await metric("herald_presence_writes_waiting", port: port) {
                        samples.withLockedValue { $0.append(Int(waiting)) }
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
            }

            // Once the flood is under way, Bob goes away, and Alice posts on node B: each message is pushed.
            for await _ in started {}
            socket.send(#"{"type": "app", "state": "background"}"#)
            try await Self.waitForPresence(of: "bob", foreground: false, in: url)
            for index in 0..<5 {
                let id = "during-flood-\(index)"
                #expect(try await onB.post(alice, to: chat, id: id, text: "are you there?") == 201)
                try await fake.wait(timeout: .seconds(60), "the push for \(id)") { requests in
                    requests.contains { $0.messageID == id }
                }
            }
            try await group.waitForAll()
        }
        // It never grew past node A's two connections while the flood lasted.
        let sampled = samples.withLockedValue { $0 }
        #expect(sampled.count >= 5, "sampled while it lasted: \(sampled.count)")
        #expect(sampled.allSatisfy { $0 <= 2 }, "at most one row a connection: \(sampled.max() ?? 0)")
        let after = try #require(nodeA.residentBytes)
        #expect(after - before < 64 << 20, "node A grew by \((after - before) >> 20) MiB")
        await nodeA.expectCleanStop()
        await nodeB.expectCleanStop()
    }
    }

    @Test("an erasure on node A holds on node B at once: B refuses the user's token and closes their stream, keeps nothing they send, and pushes nothing to their devices")
    func erasureAcrossNodes() async throws {
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
        let phone = PushHarness.apnsToken(0xE7A5E)
        try await Self.twoNodes(alice: alice, bob: bob, phone: phone, environment: ["HERALD_SERVICE_KEY": ServiceTests.key]) { nodes in
            let (nodeA, nodeB, chat, fake, url) = (nodes.a, nodes.b, nodes.chat, nodes.fake, nodes.url)
            // Bob is known to node B (his token was taken there a moment ago) and connected there.
            let socket = try await TestSocket.connect(url: "ws://127.0.0.1:\(nodeB.port)/v1/stream?token=\(bob)")
            defer { socket.close() }
            var reader = FrameReader(socket)
            _ = try await reader.untilReady()
            #expect(try await HTTPClient.request(port: nodeB.port, "GET", "/v1/conversations", token: bob).status == 200)

            let erased = try await HTTPClient.request(port: nodeA.port, "DELETE", "/v1/service/users/bob", token: ServiceTests.key)
            #expect(erased.status == 204, "\(erased.text)")
            // At once, on node B.
            let refused = try await HTTPClient.request(port: nodeB.port, "GET", "/v1/conversations", token: bob)
            #expect(refused.status == 401 && refused.errorCode == "user_erased", "\(refused.status) \(refused.text)")
            let device = try await HTTPClient.request(
                port: nodeB.port, "PUT", "/v1/devices/new-phone", token: bob, body: #"{"platform": "apns", "token": "\#(phone)"}"#)
            #expect(device.status == 401 && device.errorCode == "user_erased", "\(device.status) \(device.text)")
            let created = try await HTTPClient.request(
                port: nodeB.port, "POST", "/v1/conversations", token: bob, body: #"{"kind": "direct", "members": ["alice"]}"#)
            #expect(created.status == 401, "\(created.status) \(created.text)")
            let close = try await socket.closed()
            #expect(close?.reason == "user_erased", "his stream on B was closed: \(String(describing: close))")
            // Nothing of his is kept, and what Alice says next goes to no device of his.
            let kept = try await Self.withClient(url) { client in
                try await client.query(
                    "SELECT (SELECT count(*) FROM devices WHERE user_id = 'bob') + (SELECT count(*) FROM members WHERE user_id = 'bob' AND removed_seq IS NULL)"
                ).collect().first?.decode(Int64.self)
            }
            #expect(kept == 0)
            let after = try await HTTPClient.request(
                port: nodeA.port, "POST", "/v1/conversations/\(chat)/messages", token: alice, body: #"{"id": "after", "text": "still there?"}"#)
            #expect(after.status == 201 || after.status == 403, "\(after.status) \(after.text)")
            try await Self.waitForPushDecisions(through: try await Self.latestSeq(in: url), in: url)
            #expect(!fake.requests.contains { $0.path.hasSuffix(phone) && $0.messageID == "after" }, "no push to his phone")
        }
    }

    /// The last seq of the database `url` names.
    static func latestSeq(in url: String) async throws -> Int64 {
        try await Self.withClient(url) { client in
            try await client.query("SELECT seq FROM message_seq WHERE id = 1").collect().first?.decode(Int64.self) ?? 0
        }
    }

    /// Two nodes on one throwaway database, pushing to a fake APNs: Alice's conversation with Bob, made on node B, and
    /// Bob's phone registered. The nodes are stopped when `body` ends.
    static func twoNodes(
        alice: String, bob: String, phone: String, environment extra: [String: String?] = [:],
        _ body: (TwoNodes) async throws -> Void
    ) async throws {
        try await StoreKind.postgres.withServerDatabase { database in
            try await FakeAPNs.run { apns in
                let environment = database.merging(apns.environment) { $1 }.merging(extra) { $1 }
                let url = try #require(database["HERALD_POSTGRES_URL"] ?? nil)
                let a = try await ServerProcess(database: "unused.sqlite", secret: TestServer.secret, environment: environment)
                defer { a.stop() }
                let b = try await ServerProcess(database: "unused.sqlite", secret: TestServer.secret, environment: environment)
                defer { b.stop() }
                let onB = RemoteServer(port: b.port)
                let chat = try await onB.createConversation(alice, members: ["bob"])
                let registered = try await HTTPClient.request(
                    port: b.port, "PUT", "/v1/devices/bob-phone", token: bob,
                    body: #"{"platform": "apns", "token": "\#(phone)"}"#)
                #expect(registered.status == 200)
                try await body(TwoNodes(a: a, b: b, onB: onB, chat: chat, fake: apns.fake, url: url))
            }
        }
    }

    /// What `twoNodes` sets up.
    struct TwoNodes {
        let a: ServerProcess, b: ServerProcess, onB: RemoteServer, chat: String, fake: FakePushService, url: String
    }

    /// Waits (checking every 20 ms, up to 60 s) until the presence table says `user` has a connection in the
    /// foreground (or none).
    static func waitForPresence(of user: String, foreground: Bool, in url: String) async throws {
        try await Self.withClient(url) { client in
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let rows = try await client.query(
                    "SELECT coalesce(bool_or(foreground), false) FROM presence WHERE user_id = \(user)").collect()
                if try rows.first?.decode(Bool.self) == foreground { return }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("the presence of \(user) never became foreground = \(foreground)")
        }
    }

    /// Waits (checking every 100 ms, up to 90 s) until no connection of `user` counts any more: every node holding
    /// one has a heartbeat older than `expiry` seconds (the database's clock, as the decision reads it).
    static func waitUntilStale(user: String, expiry: Int, in url: String) async throws {
        try await Self.withClient(url) { client in
            let deadline = ContinuousClock.now + .seconds(90)
            while ContinuousClock.now < deadline {
                let rows = try await client.query(
                    """
                    SELECT count(*) FROM presence p JOIN nodes n ON n.id = p.node_id
                    WHERE p.user_id = \(user) AND n.seen_at > now() - make_interval(secs => \(Double(expiry)))
                    """).collect()
                if try rows.first?.decode(Int64.self) == 0 { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            Issue.record("the connections of \(user) still count after 90 s")
        }
    }

    /// Waits (checking every 20 ms, up to 60 s) until the push decisions, kept in the database, have passed `seq`.
    static func waitForPushDecisions(through seq: Int64, in url: String) async throws {
        try await Self.withClient(url) { client in
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let rows = try await client.query("SELECT seq FROM log_cursors WHERE name = 'push'").collect()
                if let decided = try rows.first?.decode(Int64.self), decided >= seq { return }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("the push decisions never passed seq \(seq)")
        }
    }

    /// Ends every connection that is listening for new messages (as a database restart or a network cut would);
    /// how many there were.
    static func cutListeners(in url: String) async throws -> Int {
        return try await Self.withClient(url) { client in
            let rows = try await client.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()
                """).collect()
            return rows.count
        }
    }

    @Test("three nodes: a member removed on node A gets nothing posted on node B at their stream on node C; the others do")
    func removalAcrossNodes() async throws {
        try await StoreKind.postgres.withServerDatabase { environment in
            var nodes: [ServerProcess] = []
            for _ in 0..<3 {
                nodes.append(try await ServerProcess(database: "unused.sqlite", secret: TestServer.secret, environment: environment))
            }
            defer { for node in nodes { node.stop() } }
            let (a, b, c) = (nodes[0].port, nodes[1].port, nodes[2].port)
            let authority = await TokenAuthority(secret: TestServer.secret)
            let (alice, bob, carol) = try await (
                authority.token(userID: "alice", name: "Alice"), authority.token(userID: "bob", name: "Bob"),
                authority.token(userID: "carol", name: "Carol"))
            let chat = try await RemoteServer(port: a).createConversation(alice, members: ["bob", "carol"])

            // Carol and Bob listen on node C.
            var readers: [String: (TestSocket, FrameReader)] = [:]
            for (name, token) in [("carol", carol), ("bob", bob)] {
                let socket = try await TestSocket.connect(url: "ws://127.0.0.1:\(c)/v1/stream?token=\(token)")
                var reader = FrameReader(socket)
                _ = try await reader.untilReady()
                readers[name] = (socket, reader)
            }
            defer { for (socket, _) in readers.values { socket.close() } }
            func next(_ name: String) async throws -> MessageJSON {
                guard let (socket, held) = readers[name] else { throw TestFailure("no stream for \(name)") }
                var reader = held
                defer { readers[name] = (socket, reader) }
                while true {
                    let frame = try await reader.next()
                    if frame.type == "message", let message = frame.message { return message }
                }
            }

            #expect(try await RemoteServer(port: b).post(alice, to: chat, id: "first", text: "everyone") == 201)
            #expect(try await next("carol").id == "first")
            #expect(try await next("bob").id == "first")
            let removed = try await HTTPClient.request(port: a, "DELETE", "/v1/conversations/\(chat)/members/carol", token: alice)
            #expect(removed.status == 204)
            #expect(try await next("carol").event?.type == "member_removed", "Carol learns she was removed, on node C")
            #expect(try await next("bob").event?.type == "member_removed")
            for index in 0..<5 {
                #expect(try await RemoteServer(port: b).post(alice, to: chat, id: "after-\(index)", text: "not for Carol") == 201)
            }
            for index in 0..<5 { #expect(try await next("bob").id == "after-\(index)") }
            guard let (socket, held) = readers["carol"] else { return }
            var reader = held
            let more = try await reader.drain(socket).filter { $0.type == "message" }
            readers["carol"] = (socket, reader)
            #expect(more.isEmpty, "nothing after her removal: \(more.compactMap(\.message?.id))")
            let refused = try await HTTPClient.request(port: c, "GET", "/v1/conversations/\(chat)/messages", token: carol)
            #expect(refused.status == 403 && refused.errorCode == "not_a_member")
        }
    }

    @Test("three nodes, clients spread over them, all posting; one killed mid-run: everyone gets every message once, in seq order")
    func threeNodesAndOneKilled() async throws {
        try await StoreKind.postgres.withServerDatabase { environment in
            var nodes: [ServerProcess] = []
            for _ in 0..<3 {
                nodes.append(try await ServerProcess(database: "unused.sqlite", secret: TestServer.secret, environment: environment))
            }
            defer { for node in nodes { node.stop() } }
            let ports = nodes.map(\.port)
            let people = ["alice", "bob", "carol", "dave"]
            let authority = await TokenAuthority(secret: TestServer.secret)
            var tokens: [String: String] = [:]
            for person in people { tokens[person] = try await authority.token(userID: person, name: person.capitalized) }
            let chat = try await RemoteServer(port: ports[0]).createConversation(tokens["alice"]!, members: people)
            let perPoster = 40
            let expected = 3 * perPoster

            // Each person listens on a node: alice on the first, bob on the second, carol and dave on the third
            // (the one that will be killed); a stream that ends resumes on the first node with `after`.
            let received = NIOLockedValueBox<[String: [Int64]]>([:])
            let ready = NIOLockedValueBox(0)
            let resumed = NIOLockedValueBox<Set<String>>([])
            let token = tokens
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, person) in people.enumerated() {
                    let home = ports[min(index, 2)]
                    group.addTask {
                        var port = home
                        var after: Int64 = 0
                        var first = true
                        while received.withLockedValue({ $0[person, default: []].count }) < expected {
                            let socket = try await TestSocket.connect(
                                url: "ws://127.0.0.1:\(port)/v1/stream?token=\(token[person]!)&after=\(after)")
                            var reader = FrameReader(socket)
                            do {
                                let caughtUp = try await reader.untilReady().messages.compactMap { $0.message?.seq }
                                received.withLockedValue { $0[person, default: []] += caughtUp }
                                after = caughtUp.last ?? after
                                if first { ready.withLockedValue { $0 += 1 } }
                                first = false
                                while received.withLockedValue({ $0[person, default: []].count }) < expected {
                                    let frame = try await reader.next()
                                    guard frame.type == "message", let seq = frame.message?.seq else { continue }
                                    received.withLockedValue { $0[person, default: []].append(seq) }
                                    after = seq
                                }
                                socket.close()
                            } catch {
                                // The node went away: resume on the first node after the last seq seen.
                                _ = resumed.withLockedValue { $0.insert(person) }
                                port = ports[0]
                            }
                        }
                    }
                }
                while ready.withLockedValue({ $0 }) < people.count { try await Task.sleep(for: .milliseconds(10)) }

                // Three posters, one a node; the third node is killed when a third of the posts are in. A post
                // that finds its node gone is sent again, same id, to the first node.
                let posted = NIOLockedValueBox(0)
                for (index, poster) in ["alice", "bob", "carol"].enumerated() {
                    group.addTask {
                        var port = ports[index]
                        for number in 0..<perPoster {
                            let id = "\(poster)-\(number)"
                            while true {
                                if let status = try? await RemoteServer(port: port).post(token[poster]!, to: chat, id: id, text: "message \(number)"),
                                   status == 201 || status == 200 {
                                    break
                                }
                                port = ports[0]
                            }
                            posted.withLockedValue { $0 += 1 }
                        }
                    }
                }
                let doomed = nodes[2]
                group.addTask {
                    while posted.withLockedValue({ $0 }) < expected / 3 { try await Task.sleep(for: .milliseconds(5)) }
                    await doomed.kill()
                }
                try await group.waitForAll()
            }

            var stored: [Int64] = []
            var after: Int64 = 0
            while true {
                let page = try await RemoteServer(port: ports[0]).messages(tokens["alice"]!, in: chat, after: after)
                guard let last = page.last else { break }
                stored += page.map(\.seq)
                after = last.seq
            }
            #expect(stored.count == expected, "every post stored once")
            #expect(resumed.withLockedValue { $0 } == ["carol", "dave"], "the killed node's readers resumed elsewhere")
            for person in people {
                #expect(received.withLockedValue { $0[person] } == stored, "\(person) got every message once, in seq order")
            }
        }
    }


    /// A value of `herald_settings` in the database `url` names.
    static func setting(_ name: String, in url: String) async throws -> String {
        return try await Self.withClient(url) { client in
            let rows = try await client.query("SELECT value FROM herald_settings WHERE name = \(name)").collect()
            return try #require(try rows.first?.decode(String.self))
        }
    }

    /// A client of the database `url` names, running for the length of `body`.
    static func withClient<Result: Sendable>(
        _ url: String, _ body: (PostgresClient) async throws -> Result
    ) async throws -> Result {
        var logger = Logger(label: "postgres-test-client")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: try PostgresStore.configuration(url), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}
