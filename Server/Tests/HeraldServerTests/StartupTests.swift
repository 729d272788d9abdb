import Foundation
@testable import HeraldPostgres
import HeraldServer
import HeraldTestSupport
import NIOCore
import NIOPosix
import Testing

/// `herald serve` refuses to start on anything doubtful, in one line, and stops in bounded time.
@Suite("Start-up and shutdown: one clear line for every failure, one server per file, bounded SIGTERM", .timeLimit(.minutes(2)), .childProcesses)
struct StartupTests {
    static let secretEnvironment: [String: String?] = ["HERALD_JWT_SECRET": TestServer.secret]

    /// `herald serve` run to its end; it must fail with exactly one line on standard error.
    static func failedStart(_ arguments: [String], environment: [String: String?] = [:]) async throws -> String {
        let result = try await runHerald(
            ["serve", "--port", "0"] + arguments, environment: secretEnvironment.merging(environment) { $1 },
            timeout: .seconds(20))
        #expect(result.reason == .exit, "it exits by itself; no signal, no crash, not left running: \(arguments)")
        #expect(result.status != 0)
        // Apart from the log's progress notes (the database opened and migrated), one line says what is wrong.
        let lines = result.stderr.split(separator: "\n").filter { !isProgressNote($0) }
        #expect(lines.count == 1, "one line: \(result.stderr)")
        #expect(lines.first?.hasPrefix("herald: ") == true)
        for crash in ["Fatal error", "Assertion", "Backtrace", "Stack dump", "Current stack trace"] {
            #expect(!result.stderr.contains(crash))
        }
        return String(lines.first ?? "")
    }

    /// A log line at info level or below (`<time> info herald: …`).
    static func isProgressNote(_ line: Substring) -> Bool {
        let words = line.split(separator: " ", maxSplits: 2)
        return words.count == 3 && words[0].first?.isNumber == true && ["trace", "debug", "info", "notice"].contains(words[1])
    }

    @Test("a PostgreSQL password is never printed: one holding #, /, ? or @ unencoded (generated passwords do), or given as ?password=")
    func postgresPasswordRedacted() {
        let cases: [(url: String, secret: String)] = [
            ("postgres://herald:pw#7Zq/4?x@db.internal:5432/herald", "pw#7Zq/4?x"),
            ("postgres://herald:p@ss:w0rd@db.internal/herald?sslmode=require", "p@ss:w0rd"),
            ("postgres://herald@db.internal/herald?sslmode=require&password=hunter2hunter2", "hunter2hunter2"),
            ("postgres://db.internal/herald?PASSWORD=Zz9-secret&user=herald", "Zz9-secret"),
            ("postgres://herald:plain-secret@db.internal:5432/herald", "plain-secret"),
        ]
        for (url, secret) in cases {
            let shown = PostgresStore.redacted(url)
            #expect(!shown.contains(secret), "\(shown)")
            #expect(shown.contains("db.internal") && shown.contains("***"), "\(shown)")
        }
        #expect(PostgresStore.redacted("postgres://herald@db.internal/herald") == "postgres://herald@db.internal/herald")
    }

    @Test("a bad setting in the environment or on the command line is one line and a non-zero exit, never ignored")
    func badSettings() async throws {
        let cases: [([String], [String: String?], String)] = [
            ([], ["HERALD_PORT": "abc"], "HERALD_PORT"),
            ([], ["HERALD_PORT": "70000"], "HERALD_PORT"),
            ([], ["HERALD_DEMO": "true"], "HERALD_DEMO"),
            ([], ["HERALD_SQLITE_SYNC": "sometimes"], "HERALD_SQLITE_SYNC"),
            ([], ["HERALD_SQLITE_COMMIT_WINDOW": "101"], "HERALD_SQLITE_COMMIT_WINDOW"),
            ([], ["HERALD_LIMIT_STREAMS": "0"], "HERALD_LIMIT_STREAMS"),
            ([], ["HERALD_LIMIT_POSTS_PER_SECOND": "fast"], "HERALD_LIMIT_POSTS_PER_SECOND"),
            ([], ["HERALD_HEADER_TIMEOUT": "-1"], "HERALD_HEADER_TIMEOUT"),
            ([], ["HERALD_SHUTDOWN_TIMEOUT": "10s"], "HERALD_SHUTDOWN_TIMEOUT"),
            ([], ["LOG_LEVEL": "loud"], "LOG_LEVEL"),
            ([], ["HERALD_JWT_SECRET": "short"], "32"),
            ([], ["HERALD_OIDC_ISSUER": "http://127.0.0.1:9400", "HERALD_OIDC_AUDIENCE": "x"], "HERALD_OIDC_ALLOW_PRIVATE=1"),
        ]
        for (arguments, environment, named) in cases {
            let line = try await Self.failedStart(arguments + ["--database", ":memory:"], environment: environment)
            #expect(line.contains(named), "\(environment): \(line)")
        }
    }

    @Test("SQLite's commit window is 5 ms unless HERALD_SQLITE_COMMIT_WINDOW says otherwise; 0 turns it off")
    func commitWindowSetting() throws {
        #expect(try ServerConfiguration.fromEnvironment([:]).commitWindow == .milliseconds(5))
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_SQLITE_COMMIT_WINDOW": "20"]).commitWindow == .milliseconds(20))
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_SQLITE_COMMIT_WINDOW": "0"]).commitWindow == .zero)
    }

    @Test("push settings that cannot be used stop the start with a line naming them: half an APNs set-up, a key or service account that is not one, a bad URL or number")
    func badPushSettings() async throws {
        let folder = try makeTemporaryFolder("herald-push-settings")
        defer { try? FileManager.default.removeItem(at: folder) }
        let notAKey = folder.appendingPathComponent("AuthKey.p8")
        try "not a key".write(to: notAKey, atomically: true, encoding: .utf8)
        let apns = ["HERALD_APNS_KEY_ID": "KEY", "HERALD_APNS_TEAM_ID": "TEAM", "HERALD_APNS_TOPIC": "app.example"]
        let cases: [([String: String?], String)] = [
            (["HERALD_APNS_KEY_ID": "KEY"], "HERALD_APNS_KEY_FILE, HERALD_APNS_TEAM_ID, HERALD_APNS_TOPIC not set"),
            (apns.merging(["HERALD_APNS_KEY_FILE": "/nonexistent/AuthKey.p8"]) { $1 }, "HERALD_APNS_KEY_FILE: cannot read"),
            (apns.merging(["HERALD_APNS_KEY_FILE": notAKey.path]) { $1 }, "no P-256 private key"),
            (["HERALD_APNS_URL": "https://api.sandbox.push.apple.com"], "HERALD_APNS_URL is set but APNs is not"),
            (["HERALD_FCM_SERVICE_ACCOUNT": notAKey.path], "not a service-account JSON file"),
            (["HERALD_FCM_URL": "ftp://fcm.example"], "HERALD_FCM_URL"),
            (["HERALD_PUSH_DELAY": "-1"], "HERALD_PUSH_DELAY"),
            (["HERALD_PUSH_MAX_AGE": "forever"], "HERALD_PUSH_MAX_AGE"),
            (["HERALD_PUSH_CONCURRENCY": "0"], "HERALD_PUSH_CONCURRENCY"),
            (["HERALD_PUSH_TIME_SENSITIVE_MENTIONS": "yes"], "HERALD_PUSH_TIME_SENSITIVE_MENTIONS"),
            (["HERALD_PUSH_CA_FILE": notAKey.path], "HERALD_PUSH_CA_FILE"),
            (["HERALD_VAPID_PRIVATE_KEY_FILE": notAKey.path], "HERALD_VAPID_PRIVATE_KEY_FILE"),
            (["HERALD_VAPID_SUBJECT": "ops@example.com"], "HERALD_VAPID_SUBJECT"),
        ]
        for (environment, named) in cases {
            let line = try await Self.failedStart(["--database", ":memory:"], environment: environment)
            #expect(line.contains(named), "\(environment): \(line)")
        }
    }

    @Test("herald serve says at start which push services are on; --demo logs each push it would send, control characters escaped, and counts it as logged, not sent")
    func demoPushLog() async throws {
        let folder = try makeTemporaryFolder("herald-demo-push")
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("serve.log")
        let server = try await ServerProcess(
            database: folder.appendingPathComponent("herald.sqlite").path, secret: TestServer.secret, demo: true,
            environment: ["LOG_LEVEL": "info"], errorLog: log)
        defer { server.stop() }
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let alice = try await tokens.token(userID: "alice", name: "Alice Johnson")
        let conversations = try await HTTPClient.request(port: server.port, "GET", "/v1/conversations", token: alice)
        let list = try JSONSerialization.jsonObject(with: conversations.body) as? [String: Any]
        let direct = try #require((list?["conversations"] as? [[String: Any]])?.first {
            ($0["members"] as? [String]) == ["alice", "bob"] }?["id"] as? String)
        let posted = try await HTTPClient.request(
            port: server.port, "POST", "/v1/conversations/\(direct)/messages", token: alice,
            body: #"{"text": "lunch? \u001b[31mred"}"#)
        #expect(posted.status == 201)
        let deadline = ContinuousClock.now + .seconds(15)
        var text = ""
        while ContinuousClock.now < deadline {
            text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if text.contains("lunch?") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(text.contains("push: APNs off"))
        #expect(text.contains("push: FCM off"))
        #expect(text.contains("push: fcm pushes are logged, not sent"))
        let line = try #require(text.split(separator: "\n").first { $0.contains("lunch?") })
        #expect(line.contains(#"push (log only, no fcm credentials): "New message from Alice Johnson" / "lunch? \u{1B}[31mred", badge"#), "\(line)")
        #expect(line.contains("device=bob-phone"))
        #expect(!text.unicodeScalars.contains("\u{1B}"), "no raw ESC reaches the log")
        // /metrics: the logged pushes under an outcome of their own (counted once the job is finished).
        var jobs: [Substring] = []
        try await eventually("a logged push counted", detail: { jobs.joined(separator: "\n") }) {
            let scrape = try await HTTPClient.request(port: server.port, "GET", "/metrics").text
            jobs = scrape.split(separator: "\n").filter { $0.hasPrefix("herald_push_jobs_total{") }
            return jobs.contains { $0.contains(#"provider="fcm""#) && $0.contains(#"outcome="logged""#) }
        }
        #expect(!jobs.contains { $0.contains(#"outcome="sent""#) }, "nothing was sent: \(jobs)")
        await server.expectCleanStop()
    }

    @Test("herald serve says at start what is on (database, sign-in, service API, webhooks, retention), never a secret; the migrations are one line")
    func startupSummary() async throws {
        let folder = try makeTemporaryFolder("herald-summary")
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("serve.log")
        let (serviceKey, webhookSecret) = (String(repeating: "k", count: 40), String(repeating: "w", count: 40))
        let server = try await ServerProcess(
            database: folder.appendingPathComponent("herald.sqlite").path, secret: TestServer.secret,
            environment: [
                "LOG_LEVEL": "info", "HERALD_SERVICE_KEY": serviceKey, "HERALD_RETENTION": "30d",
                "HERALD_WEBHOOK_URL": "https://hooks.example.com:8443/in/path-token-42", "HERALD_WEBHOOK_SECRET": webhookSecret,
            ],
            errorLog: log)
        defer { server.stop() }
        let text = try String(contentsOf: log, encoding: .utf8)
        for line in [
            "database: SQLite \(folder.path)/herald.sqlite", "sign-in: Herald tokens (HS256, the secret from HERALD_JWT_SECRET)",
            "sign-in: OpenID Connect off", "service API: on, 1 key (key:", "webhooks: on, to https://hooks.example.com:8443 (every event)",
            "retention: messages and events kept 30 days", "push: APNs off",
        ] {
            #expect(text.contains(line), "\(line) in \(text)")
        }
        for secret in [serviceKey, webhookSecret, TestServer.secret, "path-token-42"] {
            #expect(!text.contains(secret), "a secret in the log: \(text)")
        }
        let migrated = text.split(separator: "\n").filter { $0.contains("database migrated") }
        #expect(migrated.count == 1 && migrated.first?.contains("from=0") == true, "one line for the migrations: \(migrated)")
        await server.expectCleanStop()

        var configuration = ServerConfiguration()
        configuration.postgresURL = "postgres://herald:hunter2hunter2@db.internal:5432/herald"
        configuration.openID.issuers = ["https://securetoken.google.com/my-app"]
        let summary = configuration.summary.joined(separator: "\n")
        #expect(summary.contains("database: PostgreSQL postgres://herald:***@db.internal:5432/herald"))
        #expect(summary.contains("the secret kept in the database"))
        #expect(summary.contains("sign-in: OpenID Connect from https://securetoken.google.com/my-app"))
        #expect(summary.contains("service API: off") && summary.contains("webhooks: off") && summary.contains("retention: off"))
        #expect(!summary.contains("hunter2"))
    }

    @Test("a stream without `device` that says its app is in the background is warned about in the log, once for its user; with `device`, never")
    func devicelessBackgroundWarned() async throws {
        let folder = try makeTemporaryFolder("herald-deviceless")
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("serve.log")
        let server = try await ServerProcess(
            database: folder.appendingPathComponent("herald.sqlite").path, secret: TestServer.secret, errorLog: log)
        defer { server.stop() }
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let (bob, carol) = (try await tokens.token(userID: "bob", name: "Bob"), try await tokens.token(userID: "carol", name: "Carol"))
        func background(_ token: String, device: String? = nil) async throws {
            let socket = try await TestSocket.connect(
                url: "ws://127.0.0.1:\(server.port)/v1/stream?token=\(token)" + (device.map { "&device=\($0)" } ?? ""))
            var frames = FrameReader(socket)
            _ = try await frames.untilReady()
            socket.send(#"{"type": "app", "state": "background"}"#)
            socket.send(#"{"type": "app", "state": "foreground"}"#)
            socket.send(#"{"type": "app", "state": "background"}"#)
            _ = try await frames.drain(socket)
            socket.close()
            _ = try await socket.closed()
        }
        try await background(carol, device: "carols-phone")
        try await background(bob)
        try await background(bob)
        let warnings = { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains("a stream without `device`") } }
        try await eventually("bob's warning in the log") { !warnings().isEmpty }
        #expect(warnings().count == 1, "once: \(warnings())")
        #expect(warnings().first?.contains("user=bob") == true && warnings().first?.contains("?device=") == true)
        await server.expectCleanStop()
        #expect(warnings().count == 1, "still once, and never for carol, who said which device she is")
    }

    @Test("a port in use and a database that cannot be opened are one line each, naming what failed")
    func unusableResources() async throws {
        let holder = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(holder.localAddress?.port)
        let inUse = try await runHerald(
            ["serve", "--port", "\(port)", "--database", ":memory:"], environment: Self.secretEnvironment)
        #expect(inUse.status == 1)
        let complaint = inUse.stderr.split(separator: "\n").filter { !Self.isProgressNote($0) }
        #expect(complaint.count == 1, "\(inUse.stderr)")
        #expect(complaint.first?.hasPrefix("herald: cannot listen on 127.0.0.1:\(port): address already in use") == true)
        #expect(complaint.first?.contains("--port \(port + 1)") == true, "it says how to pick another port")

        // Nothing is opened or written before that: a new database with the demo leaves no file and logs no push.
        let fresh = try makeTemporaryFolder("herald-busy-port")
        defer { try? FileManager.default.removeItem(at: fresh) }
        let demo = try await runHerald(
            ["serve", "--demo", "--port", "\(port)", "--database", fresh.appendingPathComponent("herald.sqlite").path],
            environment: Self.secretEnvironment)
        #expect(demo.status == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fresh.path).isEmpty, "no database written")
        #expect(!demo.stderr.contains("push"), "no push logged: \(demo.stderr)")
        try await holder.close()

        let folder = try makeTemporaryFolder("herald-startup")
        defer {
            // With the folder, what the server wrote beside it before it found the folder no database.
            for path in [folder.path, folder.path + "-lock", folder.path + ".vapid"] { try? FileManager.default.removeItem(atPath: path) }
        }
        let line = try await Self.failedStart(["--database", folder.path])
        #expect(line.contains(folder.path), "the folder given as a database: \(line)")
        let nowhere = try await Self.failedStart(["--database", "/proc/no-such-place/herald.sqlite"])
        #expect(nowhere.contains("/proc/no-such-place/herald.sqlite"))
    }

    @Test("a fresh clone's .gitignore covers every file herald serve writes beside its database: no key can be committed")
    func firstRunFilesIgnored() async throws {
        let folder = try makeTemporaryFolder("herald-first-run")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(
            at: packageRoot.appendingPathComponent(".gitignore"), to: folder.appendingPathComponent(".gitignore"))
        let env = URL(fileURLWithPath: "/usr/bin/env")
        #expect(try await runProcess(env, ["git", "-C", folder.path, "init", "-q"]).status == 0)
        func untracked() async throws -> [String] {
            try await runProcess(env, ["git", "-C", folder.path, "status", "--porcelain", "--untracked-files=all"])
                .stdout.split(separator: "\n").map(String.init)
        }
        // As a newcomer runs it: the demo, no secret given, so the token secret and the Web Push key are made.
        let server = try await ServerProcess(database: folder.appendingPathComponent("herald.sqlite").path, demo: true)
        defer { server.stop() }
        let written = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0 != ".git" }.sorted()
        for suffix in [".secret", ".vapid", "-wal", "-lock"] {
            #expect(written.contains("herald.sqlite" + suffix), "\(suffix) is written: \(written)")
        }
        #expect(try await untracked() == ["?? .gitignore"], "while it runs")
        await server.expectCleanStop()
        #expect(try await untracked() == ["?? .gitignore"], "after it stopped")
    }

    @Test("a new SQLite file is readable by its owner only (0600), and so are the -wal and -shm SQLite makes beside it; a file that was there keeps its mode")
    func databaseFileModes() async throws {
        let folder = try makeTemporaryFolder("herald-modes")
        defer { try? FileManager.default.removeItem(at: folder) }
        func mode(_ path: String) throws -> Int {
            try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int, "\(path)")
        }
        let fresh = folder.appendingPathComponent("new.sqlite").path
        let server = try await ServerProcess(database: fresh, secret: TestServer.secret)
        defer { server.stop() }
        for file in [fresh, fresh + "-wal", fresh + "-shm"] {
            let found = try mode(file)
            #expect(found == 0o600, "\(file): \(String(found, radix: 8))")
        }
        await server.expectCleanStop()

        // An empty file is a database to SQLite: one made by the operator keeps its mode, and its -wal follows it.
        let existing = folder.appendingPathComponent("existing.sqlite").path
        #expect(FileManager.default.createFile(atPath: existing, contents: nil, attributes: [.posixPermissions: 0o640]))
        let again = try await ServerProcess(database: existing, secret: TestServer.secret)
        defer { again.stop() }
        #expect(try mode(existing) == 0o640)
        #expect(try mode(existing + "-wal") == 0o640)
        await again.expectCleanStop()
    }

    @Test("herald serve --demo says first where to open the page, and serves it from its resources")
    func pageAddressFirst() async throws {
        let folder = try makeTemporaryFolder("herald-page")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await ServerProcess(
            database: folder.appendingPathComponent("herald.sqlite").path, secret: TestServer.secret, demo: true)
        defer { server.stop() }
        #expect(server.firstLine == "Open http://127.0.0.1:\(server.port)/ in a browser")
        let page = try await HTTPClient.request(port: server.port, "GET", "/")
        #expect(page.status == 200)
        #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
        #expect(try await HTTPClient.request(port: server.port, "GET", "/v1/demo/people").status == 200)
        await server.expectCleanStop()
    }

    @Test("a second server on the same SQLite file refuses to start while the first runs; after it stops, one may")
    func oneServerPerFile() async throws {
        let folder = try makeTemporaryFolder("herald-lock")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let first = try await ServerProcess(database: database, secret: TestServer.secret)
        defer { first.stop() }
        let line = try await Self.failedStart(["--database", database])
        #expect(line.contains("another Herald server"), "\(line)")
        #expect(try await RemoteServer(port: first.port).health() == 200, "the first is untouched")
        await first.expectCleanStop()
        let again = try await ServerProcess(database: database, secret: TestServer.secret)
        await again.expectCleanStop()
    }

    @Test("a corrupted database, or one whose -wal was lost after a crash, is refused at start, not served")
    func damagedDatabases() async throws {
        let folder = try makeTemporaryFolder("herald-damage")
        defer { try? FileManager.default.removeItem(at: folder) }
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let alice = try await tokens.token(userID: "alice", name: "Alice")

        // Not a database at all.
        let garbage = folder.appendingPathComponent("garbage.sqlite")
        try Data(repeating: 0x5A, count: 8192).write(to: garbage)
        let notDatabase = try await Self.failedStart(["--database", garbage.path])
        #expect(notDatabase.contains(garbage.path))

        // A real database with a page overwritten.
        let damaged = folder.appendingPathComponent("damaged.sqlite").path
        let server = try await ServerProcess(database: damaged, secret: TestServer.secret)
        let remote = RemoteServer(port: server.port)
        let chat = try await remote.createConversation(alice, members: ["bob"])
        for index in 0..<200 {
            _ = try await remote.post(alice, to: chat, id: "m\(index)", text: String(repeating: "text \(index) ", count: 20))
        }
        await server.expectCleanStop()
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: damaged))
        let size = try handle.seekToEnd()
        #expect(size > 4 * 4096)
        // The headers of pages 2 to 4 (of 4096 bytes): whatever b-trees live there no longer parse.
        for page in 1...3 {
            try handle.seek(toOffset: UInt64(page * 4096))
            handle.write(Data(repeating: 0xA5, count: 64))
        }
        try handle.close()
        let corrupt = try await Self.failedStart(["--database", damaged])
        #expect(corrupt.contains("damaged"), "\(corrupt)")

        // Killed with its recent work in the -wal, which is then lost: the seqs in it would be reused.
        let walLost = folder.appendingPathComponent("wal.sqlite").path
        let crashing = try await ServerProcess(database: walLost, secret: TestServer.secret)
        let crashingRemote = RemoteServer(port: crashing.port)
        let walChat = try await crashingRemote.createConversation(alice, members: ["bob"])
        _ = try await crashingRemote.post(alice, to: walChat, id: "w1", text: "only in the wal")
        await crashing.kill()
        #expect(FileManager.default.fileExists(atPath: walLost + "-wal"))
        try FileManager.default.removeItem(atPath: walLost + "-wal")
        try? FileManager.default.removeItem(atPath: walLost + "-shm")
        let lost = try await Self.failedStart(["--database", walLost])
        #expect(lost.contains("-wal"), "\(lost)")

        // A crash that keeps its -wal is fine: the next start recovers from it.
        let kept = folder.appendingPathComponent("kept.sqlite").path
        let crashingAgain = try await ServerProcess(database: kept, secret: TestServer.secret)
        let keptChat = try await RemoteServer(port: crashingAgain.port).createConversation(alice, members: ["bob"])
        _ = try await RemoteServer(port: crashingAgain.port).post(alice, to: keptChat, id: "k1", text: "kept")
        await crashingAgain.kill()
        let recovered = try await ServerProcess(database: kept, secret: TestServer.secret)
        #expect(try await RemoteServer(port: recovered.port).messages(alice, in: keptChat, after: 0).map(\.id) == ["k1"])
        await recovered.expectCleanStop()
    }

    @Test("SIGTERM with silent, half-sent and stalled requests open still ends the server within its shutdown timeout")
    func boundedShutdown() async throws {
        let folder = try makeTemporaryFolder("herald-stop")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        // Header and idle timeouts far beyond the shutdown timeout: only the shutdown bound can end these connections.
        let server = try await ServerProcess(database: database, secret: TestServer.secret, environment: [
            "HERALD_SHUTDOWN_TIMEOUT": "2", "HERALD_HEADER_TIMEOUT": "600", "HERALD_IDLE_TIMEOUT": "600",
        ])
        defer { server.stop() }
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let alice = try await tokens.token(userID: "alice", name: "Alice")
        let chat = try await RemoteServer(port: server.port).createConversation(alice, members: ["bob"])
        var connections: [RawConnection] = []
        for _ in 0..<5 {
            connections.append(try await RawConnection(port: server.port))
            let half = try await RawConnection(port: server.port)
            try await half.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            connections.append(half)
        }
        // A body that never finishes: the server is mid-request when the signal comes.
        let stalled = try await RawConnection(port: server.port)
        try await stalled.send(
            "POST /v1/conversations/\(chat)/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(alice)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"text\": \"never ends")
        connections.append(stalled)
        #expect(try await RemoteServer(port: server.port).health() == 200, "all of them are in the server by now")

        let started = ContinuousClock.now
        let status = await server.terminate()
        let took = ContinuousClock.now - started
        #expect(status == 0, "it exits by itself, cleanly: \(status)")
        #expect(took < .seconds(30), "bounded by the 2 s shutdown timeout, not the 600 s request timeouts: \(took)")
        for connection in connections {
            _ = try await connection.readToEnd()
            #expect(connection.closedByServer)
        }
    }
}
