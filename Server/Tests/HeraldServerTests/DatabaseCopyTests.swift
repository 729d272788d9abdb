import Crypto
import Foundation
import HeraldProtocol
import HeraldServer
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing

/// `herald database copy`: a SQLite server's database, with every kind of row, moved into PostgreSQL; a server on the
/// copy is the same server.
@Suite("herald database copy: SQLite to PostgreSQL", .enabled(if: StoreKind.postgresURL != nil), .timeLimit(.minutes(5)), .childProcesses)
struct DatabaseCopyTests {
    /// What a server shows its users: each one's list, each conversation's history whole and from the middle, a
    /// stream's catch-up from the middle, their devices and settings. The same text from both servers means the same
    /// history.
    /// Carol opens no stream: a device that connects drops its user's unread reminders, and hers stay to be copied.
    static func views(port: Int, tokens: [String: String], middle: Int64) async throws -> [String] {
        var views: [String] = []
        for (user, token) in tokens.sorted(by: { $0.key < $1.key }) {
            func get(_ path: String) async throws -> String {
                let result = try await HTTPClient.request(port: port, "GET", path, token: token)
                #expect(result.status == 200, "GET \(path) as \(user): \(result.text)")
                return "\(user) GET \(path): \(result.text)"
            }
            let list = try await get("/v1/conversations")
            views.append(list)
            let ids = try #require(try JSONSerialization.jsonObject(with: Data(list.drop { $0 != "{" }.utf8)) as? [String: Any])
            let conversations = try #require(ids["conversations"] as? [[String: Any]]).compactMap { $0["id"] as? String }
            for id in conversations.sorted() {
                views.append(try await get("/v1/conversations/\(id)"))
                views.append(try await get("/v1/conversations/\(id)/messages?after=0"))
                views.append(try await get("/v1/conversations/\(id)/messages?after=\(middle)"))
            }
            views.append(try await get("/v1/devices"))
            views.append(try await get("/v1/me/notifications"))
            // A device that saw up to the middle catches up.
            guard user != "carol" else { continue }
            let socket = try await TestSocket.connect(url: "ws://127.0.0.1:\(port)/v1/stream?token=\(token)&after=\(middle)")
            defer { socket.close() }
            var reader = FrameReader(socket)
            let caughtUp = try await reader.untilReady().messages.compactMap(\.message).map { "\($0.seq) \($0.id) \($0.text ?? "-")" }
            views.append("\(user) catch-up after \(middle): \(caughtUp)")
        }
        return views
    }

    @Test("a SQLite server's every kind of row copied to PostgreSQL: a server on the copy serves the same history and catch-up, takes the same tokens, sends what both outboxes held, and numbers on; a second copy is refused; the SQLite file is untouched")
    func copy() async throws {
        try await StoreKind.postgres.withServerDatabase { target in
            let url = try #require(target["HERALD_POSTGRES_URL"] ?? nil)
            let folder = try makeTemporaryFolder("herald-copy")
            defer { try? FileManager.default.removeItem(at: folder) }
            let database = folder.appendingPathComponent("herald.sqlite").path
            let receiver = try await WebhookTests.Receiver(folder: folder)
            defer { receiver.stop() }
            try await FakeAPNs.run { apns in
                try await copy(database: database, url: url, apns: apns, receiver: receiver)
            }
        }
    }

    private func copy(database: String, url: String, apns: FakeAPNs, receiver: WebhookTests.Receiver) async throws {
        // Bob's phone's pushes are held by APNs, unanswered, until the SQLite server has stopped.
        let phone = PushHarness.apnsToken(0xB0B)
        apns.fake.respond { request in request.path.hasSuffix(phone) ? FakeAnswer(status: 200, hold: true) : nil }
        receiver.down(true)
        let environment = apns.environment.merging([
            "HERALD_EXPO_URL": apns.fake.url,
            "HERALD_WEBHOOK_URL": receiver.url, "HERALD_WEBHOOK_SECRET": WebhookTests.secret, "HERALD_WEBHOOK_ALLOW_PRIVATE": "1",
            "HERALD_UNREAD_REMINDER": "3600", "HERALD_SERVICE_KEY": ServiceTests.key, "HERALD_SHUTDOWN_TIMEOUT": "2",
        ]) { $1 }

        // The server on SQLite, keeping its own token secret and VAPID key beside the file.
        let sqlite = try await ServerProcess(database: database, environment: environment)
        defer { sqlite.stop() }
        let secret = try String(contentsOfFile: database + ".secret", encoding: .utf8)
        let authority = await TokenAuthority(secret: secret)
        var tokens: [String: String] = [:]
        for id in ["alice", "bob", "carol", "dave"] {
            tokens[id] = try await authority.token(userID: id, name: id.capitalized)
        }
        func service(_ method: String, _ path: String, _ body: String? = nil) async throws -> Int {
            try await HTTPClient.request(port: sqlite.port, method, "/v1/service" + path, token: ServiceTests.key, body: body).status
        }
        func user(_ id: String, _ method: String, _ path: String, _ body: String? = nil) async throws -> Int {
            let result = try await HTTPClient.request(port: sqlite.port, method, path, token: tokens[id], body: body)
            return result.status
        }
        for id in ["alice", "bob", "carol", "dave"] {
            #expect(try await service("PUT", "/users/\(id)", #"{"name": "\#(id.capitalized)"}"#) == 200)
        }
        // Two groups that change, a direct chat, edits, deletions, a system message, mentions.
        #expect(try await service("POST", "/conversations", #"{"id": "g1", "kind": "group", "title": "Team", "members": ["alice", "bob", "carol"], "owners": ["alice"]}"#) == 201)
        #expect(try await service("POST", "/conversations", #"{"id": "g2", "kind": "group", "title": "Trip", "members": ["alice", "bob", "dave"], "owners": ["dave"]}"#) == 201)
        #expect(try await service("POST", "/conversations", #"{"id": "d1", "kind": "direct", "members": ["alice", "carol"]}"#) == 201)
        #expect(try await user("alice", "POST", "/v1/conversations/g1/messages", #"{"id": "m1", "text": "Hello team"}"#) == 201)
        #expect(try await user("bob", "POST", "/v1/conversations/g1/messages", #"{"id": "m2", "text": "Hi @alice", "mentions": ["alice"]}"#) == 201)
        #expect(try await user("alice", "PATCH", "/v1/conversations/g1", #"{"title": "Team 42"}"#) == 200)
        #expect(try await user("alice", "POST", "/v1/conversations/g1/members", #"{"members": ["dave"], "history": "none"}"#) == 200)
        #expect(try await user("alice", "DELETE", "/v1/conversations/g1/members/carol") == 204)
        #expect(try await user("alice", "PUT", "/v1/conversations/g1/owners/bob") == 200)
        #expect(try await user("alice", "PATCH", "/v1/conversations/g1/messages/m1", #"{"text": "Hello team!"}"#) == 200)
        #expect(try await user("bob", "POST", "/v1/conversations/g1/messages", #"{"id": "m3", "text": "wrong chat"}"#) == 201)
        #expect(try await user("bob", "DELETE", "/v1/conversations/g1/messages/m3") == 200)
        #expect(try await service("POST", "/conversations/g1/messages", #"{"id": "note", "text": "Order shipped"}"#) == 201)
        #expect(try await user("dave", "POST", "/v1/conversations/g2/messages", #"{"id": "t1", "text": "Tickets booked"}"#) == 201)
        #expect(try await user("bob", "DELETE", "/v1/conversations/g2/members/bob") == 204)
        #expect(try await user("dave", "PATCH", "/v1/conversations/g2", #"{"title": "Trip to Rome"}"#) == 200)
        #expect(try await user("carol", "POST", "/v1/conversations/d1/messages", #"{"id": "c1", "text": "Lunch?"}"#) == 201)
        // An erased user who was in a deleted group: the group keeps its members' rows, hers among them.
        #expect(try await service("PUT", "/users/erin", #"{"name": "Erin"}"#) == 200)
        #expect(try await service("POST", "/conversations", #"{"id": "g3", "kind": "group", "members": ["alice", "erin"], "owners": ["alice"]}"#) == 201)
        #expect(try await service("DELETE", "/conversations/g3") == 204)
        #expect(try await service("DELETE", "/users/erin") == 204)
        // Read markers, levels, settings.
        #expect(try await user("alice", "POST", "/v1/conversations/d1/read", #"{"upTo": 1000000}"#) == 204)
        #expect(try await user("bob", "PUT", "/v1/conversations/g1/notifications", #"{"level": "mentions"}"#) == 204)
        #expect(try await user("bob", "PUT", "/v1/me/notifications", #"{"timeZone": "Europe/Berlin", "quietHours": [{"days": ["sat", "sun"], "start": "22:00", "end": "08:00"}]}"#) == 200)
        // A device of each platform; Carol's Web Push endpoint is a public host this machine cannot reach, so its
        // pushes wait in the outbox.
        let subscriber = P256.KeyAgreement.PrivateKey().publicKey.x963Representation.base64URLEncodedString()
        let auth = Data((0..<16).map { UInt8($0) }).base64URLEncodedString()
        #expect(try await user("bob", "PUT", "/v1/devices/bobs-phone", #"{"platform": "apns", "token": "\#(phone)"}"#) == 200)
        #expect(try await user("bob", "PUT", "/v1/devices/bobs-tablet", #"{"platform": "fcm", "token": "fcm-token-of-bobs-tablet"}"#) == 200)
        #expect(try await user("dave", "PUT", "/v1/devices/daves-phone", #"{"platform": "expo", "token": "ExponentPushToken[dave-0123456789]"}"#) == 200)
        #expect(try await user("carol", "PUT", "/v1/devices/carols-browser", #"{"platform": "webpush", "token": "{\"endpoint\": \"https://push.herald-copy.example/send/1\", \"keys\": {\"p256dh\": \"\#(subscriber)\", \"auth\": \"\#(auth)\"}}"}"#) == 200)
        #expect(try await user("alice", "POST", "/v1/conversations/d1/messages", #"{"id": "c2", "text": "Yes, 12:30"}"#) == 201)
        // Alice's post mentions Bob (his level for the group), so it goes to his phone, which APNs holds: the job is in flight when the server stops.
        #expect(try await user("alice", "POST", "/v1/conversations/g1/messages", #"{"id": "m4", "text": "Standup in 5, @Bob", "mentions": ["bob"]}"#) == 201)
        let last = try await HTTPClient.request(
            port: sqlite.port, "POST", "/v1/conversations/g2/messages", token: tokens["dave"], body: #"{"id": "t2", "text": "See you there"}"#)
        #expect(last.status == 201)
        let answer = try JSONSerialization.jsonObject(with: Data(last.text.utf8)) as? [String: Any]
        let lastSeq = Int64(try #require(answer?["seq"] as? Int, "\(last.text)"))
        try await eventually("APNs holds the push to Bob's phone") { !apns.fake.requests(to: "/3/device/\(phone)").isEmpty }
        try await eventually("the backend was told and refused", detail: { "\(receiver.deliveries.count)" }) {
            receiver.deliveries.contains { $0.status == 500 }
        }
        let middle: Int64 = 6
        let before = try await Self.views(port: sqlite.port, tokens: tokens, middle: middle)
        await sqlite.expectCleanStop("with a push held in flight")

        let counts = try await Self.sqliteCounts(database)
        for table in ["users", "conversations", "messages", "members", "devices", "notification_settings", "push_jobs",
                      "push_grants", "webhook_jobs", "unread_reminders", "log_cursors"] {
            #expect((counts[table] ?? 0) > 0, "the SQLite database has rows in \(table) to copy")
        }
        let original = try Data(contentsOf: URL(fileURLWithPath: database))

        // The copy, as an operator runs it.
        let copied = try await runHerald(["database", "copy", "--from", database, "--to", url], timeout: .seconds(120))
        #expect(copied.status == 0, "herald database copy failed: \(copied.stderr)")
        #expect(copied.stdout.contains("token secret, VAPID key"), "\(copied.stdout)")
        #expect(copied.stdout.contains("last seq: \(lastSeq)"), "\(copied.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == original, "the SQLite file was only read")
        #expect(try await Self.sqliteCounts(database) == counts)
        let copiedCounts = try await Self.postgresCounts(url, tables: Array(counts.keys))
        #expect(copiedCounts == counts, "every row of every table arrived")
        let erased = try await PostgresServeTests.withClient(url) { client in
            try await client.query("SELECT id FROM users WHERE erased").collect().map { try $0.decode(String.self) }
        }
        #expect(erased == ["erin"], "the erased stay erased")

        // APNs answers again; the server on PostgreSQL (without HERALD_JWT_SECRET: the copied secret) takes over.
        apns.fake.respond { _ in nil }
        apns.fake.release()
        receiver.down(false)
        let postgres = try await ServerProcess(
            database: "unused.sqlite", environment: environment.merging(["HERALD_POSTGRES_URL": url]) { $1 })
        defer { postgres.stop() }
        let after = try await Self.views(port: postgres.port, tokens: tokens, middle: middle)
        #expect(after.count == before.count)
        for (old, new) in zip(before, after) {
            #expect(old == new)
        }

        // What the outboxes held goes out: the push held in flight is sent again, the webhooks are delivered.
        try await eventually("the push in flight at the stop is sent from PostgreSQL", detail: { "\(apns.fake.requests(to: "/3/device/\(phone)").count)" }) {
            apns.fake.requests(to: "/3/device/\(phone)").count >= 2
        }
        try await eventually("the backend gets the events told on SQLite", detail: { "\(receiver.deliveries.count)" }) {
            receiver.deliveries.contains { (200..<300).contains($0.status) && $0.data?.message?.id == "m1" }
        }
        // The next message is numbered after the last one SQLite gave.
        let posted = try await HTTPClient.request(
            port: postgres.port, "POST", "/v1/conversations/d1/messages", token: tokens["alice"], body: #"{"id": "a9", "text": "On PostgreSQL now"}"#)
        #expect(posted.status == 201)
        #expect(posted.text.contains(#""seq":\#(lastSeq + 1)"#), "\(posted.text)")

        // A second copy into the same database is refused, and changes nothing.
        let again = try await runHerald(["database", "copy", "--from", database, "--to", url], timeout: .seconds(120))
        #expect(again.status != 0)
        #expect(again.stderr.contains("the target database is not empty"), "\(again.stderr)")
        #expect(try await Self.postgresCounts(url, tables: ["messages"])["messages"] == (counts["messages"] ?? 0) + 1)
        await postgres.expectCleanStop()
    }

    @Test("refused, writing nothing: a missing file, a file a server has open, a target that holds another program's tables")
    func refusals() async throws {
        try await StoreKind.postgres.withServerDatabase { target in
            let url = try #require(target["HERALD_POSTGRES_URL"] ?? nil)
            let folder = try makeTemporaryFolder("herald-copy-refused")
            defer { try? FileManager.default.removeItem(at: folder) }
            let database = folder.appendingPathComponent("herald.sqlite").path

            let missing = try await runHerald(["database", "copy", "--from", database, "--to", url])
            #expect(missing.status != 0 && missing.stderr.contains("there is no SQLite database at \(database)"), "\(missing.stderr)")
            #expect(!FileManager.default.fileExists(atPath: database), "nothing was made")

            let server = try await ServerProcess(database: database, secret: TestServer.secret)
            let running = try await runHerald(["database", "copy", "--from", database], environment: ["HERALD_POSTGRES_URL": url])
            #expect(running.status != 0 && running.stderr.contains("another Herald server"), "\(running.stderr)")
            await server.expectCleanStop()

            try await PostgresServeTests.withClient(url) { client in
                _ = try await client.query("CREATE TABLE invoices (id integer PRIMARY KEY)")
            }
            let foreign = try await runHerald(["database", "copy", "--from", database, "--to", url])
            #expect(foreign.status != 0 && foreign.stderr.contains("tables that are not Herald's (invoices)"), "\(foreign.stderr)")
            let tables = try await PostgresServeTests.withClient(url) { client in
                try await client.query("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()")
                    .collect().first?.decode(Int64.self)
            }
            #expect(tables == 1, "the target was left as it was")
        }
    }

    /// Rows per table of the SQLite file at `path`, read beside any server (read-only, as any reader may).
    static func sqliteCounts(_ path: String) async throws -> [String: Int] {
        let script = """
            import json, sqlite3, sys
            db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)
            names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('sqlite_sequence', 'server_state')")]
            print(json.dumps({n: db.execute('SELECT count(*) FROM "%s"' % n).fetchone()[0] for n in names}))
            """
        let result = try await runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, path])
        let counts = try JSONDecoder().decode([String: Int].self, from: Data(result.stdout.utf8))
        return counts
    }

    /// Rows per table of the PostgreSQL database `url` names.
    static func postgresCounts(_ url: String, tables: [String]) async throws -> [String: Int] {
        try await PostgresServeTests.withClient(url) { client in
            var counts: [String: Int] = [:]
            for table in tables {
                let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \"\(table)\"")).collect()
                counts[table] = Int(try rows.first?.decode(Int64.self) ?? -1)
            }
            return counts
        }
    }
}
