import Foundation
import HeraldClient
import HeraldCore
import HeraldNIOTransport
import HeraldServer
import HeraldTestSupport
import HeraldURLSession
import NIOConcurrencyHelpers
import Testing

/// What a client and its notifier surfaced, gathered from their streams.
final class ClientRecord: Sendable {
    private let box = NIOLockedValueBox<(messages: [Message], shows: [String], skips: [String: SkipReason], live: Int, effects: [NotificationEffect])>(([], [], [:], 0, []))

    /// Records the client's messages and connections, from a subscription taken now, for as long as the returned
    /// work runs (a child task of the test's: ``withBackground(_:_:)``).
    func watching(_ client: HeraldClient) -> @Sendable () async throws -> Void {
        let events = client.events()
        return { [box] in
            for await event in events {
                switch event {
                case .message(let incoming): box.withLockedValue { $0.messages.append(incoming.message) }
                case .state(.live): box.withLockedValue { $0.live += 1 }
                default: break
                }
            }
        }
    }

    /// Records the banners shown and the messages skipped, from a subscription taken now, for as long as the
    /// returned work runs.
    func watching<C>(_ live: LiveNotifications<C>) -> @Sendable () async throws -> Void {
        let effects = live.effects
        return { [box] in
            for await effect in effects {
                box.withLockedValue { $0.effects.append(effect) }
                switch effect {
                case .show(let banner): box.withLockedValue { $0.shows.append(banner.id) }
                case .skip(let id, let reason): box.withLockedValue { $0.skips[id] = reason }
                default: break
                }
            }
        }
    }

    var messages: [Message] { box.withLockedValue { $0.messages } }
    var shows: [String] { box.withLockedValue { $0.shows } }
    var skips: [String: SkipReason] { box.withLockedValue { $0.skips } }
    var liveCount: Int { box.withLockedValue { $0.live } }
    var effects: [NotificationEffect] { box.withLockedValue { $0.effects } }

    /// Waits until `condition` holds, at most `limit`; then fails with what was recorded, so a hang names itself
    /// (the line that waited is the caller's).
    func wait(
        within limit: Duration = .seconds(60), file: StaticString = #filePath, line: UInt = #line,
        until condition: @Sendable (ClientRecord) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition(self) {
            guard ContinuousClock.now < deadline else {
                throw TestFailure(
                    "waited \(limit) at \(file):\(line); recorded: \(liveCount) live connections, messages \(messages.map(\.id)), "
                        + "banners \(shows), skips \(skips.map { "\($0.key): \($0.value.rawValue)" }.sorted())")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

@Suite("HeraldClient against a live server", .timeLimit(.minutes(3)))
struct ClientTests {
    static func database() throws -> (folder: URL, path: String) {
        let folder = try makeTemporaryFolder("herald-client")
        return (folder, folder.appendingPathComponent("herald.sqlite").path)
    }

    static func client(port: Int, token: String, _ transport: TestTransport) -> HeraldClient {
        var configuration = ClientConfiguration.local(port: port, token: token, transport)
        configuration.initialBackoff = .milliseconds(50)
        configuration.maximumBackoff = .milliseconds(400)
        return HeraldClient(configuration: configuration, resumeAfter: 0)
    }

    /// A port for a server that a test stops and starts again, and a client of it made before it first starts
    /// (Alice's, with her token), running with its notifier and recorded for the length of `body`.
    static func withClientOfRestartedServer(
        _ record: ClientRecord, _ transport: TestTransport, _ body: (_ port: Int, _ client: HeraldClient, _ live: LiveNotifications<ContinuousClock>) async throws -> Void
    ) async throws {
        let port = try freePort()
        let alice = try await TokenAuthority(secret: TestServer.secret).token(userID: "alice", name: "Alice Johnson")
        let client = Self.client(port: port, token: alice, transport)
        let live = LiveNotifications(client: client, userID: "alice")
        try await withBackground([record.watching(client), record.watching(live), { await live.run() }]) {
            try await body(port, client, live)
        }
    }

    @Test("the socket closed and the server restarted while messages flow: each arrives once, no banner shows twice", arguments: TestTransport.allCases)
    func cutsWhileFlowing(_ transport: TestTransport) async throws {
        let (folder, path) = try Self.database()
        defer { try? FileManager.default.removeItem(at: folder) }
        let record = ClientRecord()
        let acked = NIOLockedValueBox<[String]>([])
        var chat = ""
        var bob = ""

        try await Self.withClientOfRestartedServer(record, transport) { port, client, _ in
            try await TestServer.run(configure: { $0.databasePath = path; $0.port = port }) { server in
                let alice = try await server.token("alice", name: "Alice Johnson")
                bob = try await server.token("bob", name: "Bob")
                chat = try await server.createConversation(alice, kind: "group", title: "Team Chat", members: ["bob"])
                try await record.wait { $0.liveCount >= 1 }

                for index in 0..<40 {
                    let message = try await server.post(bob, to: chat, id: "a\(index)", text: "before \(index)")
                    acked.withLockedValue { $0.append(message.id) }
                    if index == 15 { client.reconnect() }
                }
                // The catch-up after the cut can arrive before its `ready`: the server stays up until the client is
                // live again, so the restart is a cut of its own.
                try await record.wait { $0.messages.count >= 40 && $0.liveCount >= 2 }
            }
            // The server is down; the client keeps trying. It comes back on the same port and file.
            try await TestServer.run(configure: { $0.databasePath = path; $0.port = port }) { server in
                for index in 0..<30 {
                    let message = try await server.post(bob, to: chat, id: "b\(index)", text: "after \(index)")
                    acked.withLockedValue { $0.append(message.id) }
                }
                try await record.wait { $0.messages.count >= 70 }
                // A last message as a barrier: the stream is in seq order, so a duplicate of any earlier one would have
                // arrived before it.
                let barrier = try await server.post(bob, to: chat, id: "barrier", text: "the end")
                acked.withLockedValue { $0.append(barrier.id) }
                try await record.wait { $0.messages.contains { $0.id == "barrier" } }
            }
        }

        let ids = record.messages.map(\.id)
        #expect(ids.count == 71)
        #expect(Set(ids) == Set(acked.withLockedValue { $0 }), "every acknowledged message arrived")
        #expect(Set(ids).count == ids.count, "none twice")
        let seqs = record.messages.compactMap(\.seq)
        #expect(seqs == seqs.sorted(), "in order")
        #expect(Set(record.shows).count == record.shows.count, "no banner shows twice")
        #expect(record.liveCount >= 3, "connected, reconnected after the cut, and after the restart")
    }

    @Test("after a reconnect the focus is restored: the server knows, and the open conversation gets no banner", arguments: TestTransport.allCases)
    func focusRestored(_ transport: TestTransport) async throws {
        let (folder, path) = try Self.database()
        defer { try? FileManager.default.removeItem(at: folder) }
        let record = ClientRecord()
        var withBob = ""
        var withCharlie = ""

        try await Self.withClientOfRestartedServer(record, transport) { port, _, live in
            try await TestServer.run(configure: { $0.databasePath = path; $0.port = port }) { server in
                let alice = try await server.token("alice", name: "Alice Johnson")
                withBob = try await server.createConversation(alice, kind: "direct", members: ["bob"])
                withCharlie = try await server.createConversation(alice, kind: "direct", members: ["charlie"])
                live.open(withBob)
                try await record.wait { $0.liveCount >= 1 }
                while !server.environment.hub.isLooking(userID: "alice", at: withBob) {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            try await TestServer.run(configure: { $0.databasePath = path; $0.port = port }) { server in
                try await record.wait { $0.liveCount >= 2 }
                let hub = server.environment.hub
                while !hub.isLooking(userID: "alice", at: withBob) {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(hub.isLooking(userID: "alice", at: withBob), "the new server knows what she is looking at")
                let (bob, charlie) = try await (server.token("bob", name: "Bob"), server.token("charlie", name: "Charlie Davis"))
                try await server.post(bob, to: withBob, id: "open-chat", text: "Hey, are you there?")
                try await server.post(charlie, to: withCharlie, id: "other-chat", text: "Hey, are you there?")
                try await record.wait { $0.skips["open-chat"] != nil && $0.shows.contains("other-chat") }
            }
        }
        #expect(record.skips["open-chat"] == .active)
        #expect(!record.shows.contains("open-chat"))
        #expect(record.shows == ["other-chat"])
    }

    @Test("muting reaches the engine: muted at start, muted and unmuted elsewhere, muted here; no banner for a muted chat", arguments: TestTransport.allCases)
    func mutedChats(_ transport: TestTransport) async throws {
        let record = ClientRecord()
        try await TestServer.run { server in
            let (alice, bob, charlie) = try await (
                server.token("alice"), server.token("bob", name: "Bob"), server.token("charlie", name: "Charlie"))
            let withBob = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let withCharlie = try await server.createConversation(alice, kind: "direct", members: ["charlie"])
            // Muted on another device before this one starts.
            #expect(try await server.request("PUT", "/v1/conversations/\(withBob)/mute", token: alice).status == 204)

            let client = Self.client(port: server.port, token: alice, transport)
            let live = LiveNotifications(client: client, userID: "alice")
            try await withBackground([record.watching(client), record.watching(live), { await live.run() }]) {
                try await record.wait { $0.liveCount >= 1 }

                try await server.post(bob, to: withBob, id: "muted-at-start", text: "psst")
                try await server.post(charlie, to: withCharlie, id: "not-muted", text: "hello")
                try await record.wait { $0.skips["muted-at-start"] != nil && $0.shows.contains("not-muted") }
                #expect(record.skips["muted-at-start"] == .muted)

                // Unmuted on another device: the stream says so, and the next message shows.
                #expect(try await server.request("DELETE", "/v1/conversations/\(withBob)/mute", token: alice).status == 204)
                try await server.post(bob, to: withBob, id: "after-unmute", text: "now?")
                try await record.wait { $0.shows.contains("after-unmute") }

                // Muted here: the server keeps it (for every device), and the engine skips it at once.
                try await live.mute(withCharlie)
                let list = try await server.request("GET", "/v1/conversations?muted=true", token: alice)
                #expect(list.text.contains(withCharlie))
                try await server.post(charlie, to: withCharlie, id: "muted-here", text: "again")
                try await record.wait { $0.skips["muted-here"] != nil }
                #expect(record.skips["muted-here"] == .muted)
                #expect(!record.shows.contains("muted-here"))
                #expect(!record.shows.contains("muted-at-start"))
            }
        }
    }

    @Test("an edit and a deletion through HeraldAPI reach the other member's client as entries, and its banner follows them", arguments: TestTransport.allCases)
    func amendments(_ transport: TestTransport) async throws {
        let record = ClientRecord()
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob", name: "Bob"))
            let withBob = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let client = Self.client(port: server.port, token: alice, transport)
            let live = LiveNotifications(client: client, userID: "alice")
            try await withBackground([record.watching(client), record.watching(live), { await live.run() }]) {
                try await record.wait { $0.liveCount >= 1 }
                let bobs = HeraldAPI(configuration: .local(port: server.port, token: bob, transport))
                try await bobs.postMessage(in: withBob, text: "see you at 5", id: "plan")
                try await record.wait { $0.shows.contains("plan") }
                let edited = try await bobs.editMessage("plan", in: withBob, text: "see you at 6")
                #expect(edited.edited && edited.text == "see you at 6")
                try await record.wait { record in
                    record.effects.contains { if case .update(let banner) = $0 { banner.body == "see you at 6" } else { false } }
                }
                let tombstone = try await bobs.deleteMessage("plan", in: withBob)
                #expect(tombstone.deleted && tombstone.text == nil)
                try await record.wait { record in
                    record.effects.contains { if case .dismiss("plan", .deleted) = $0 { true } else { false } }
                }
                // The client's entries: the message, then each change, which the app applies to it.
                let entries = record.messages.filter { $0.conversationID == withBob }
                #expect(entries.compactMap(\.event?.kind) == [.messageEdited, .messageDeleted])
                let shown = entries.dropFirst().reduce(entries[0]) { $0.amended(by: $1) }
                #expect(shown.deleted && shown.text == nil && entries[0].text == "see you at 5")
                do {
                    _ = try await bobs.editMessage("plan", in: withBob, text: "back")
                    Issue.record("a deleted message was edited")
                } catch let error as HeraldAPIError {
                    #expect(error.code == "message_deleted")
                }
            }
        }
    }

    @Test("levels and settings reach the engine: set elsewhere before the start and while running, set here; a send carries its mentions", arguments: TestTransport.allCases)
    func levelsAndSettings(_ transport: TestTransport) async throws {
        let record = ClientRecord()
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob", name: "Bob"))
            let team = try await server.createConversation(bob, kind: "group", title: "Team", members: ["alice"])
            let withBob = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            // Mentions only, chosen on another device before this one starts.
            let set = try await server.request(
                "PUT", "/v1/conversations/\(team)/notifications", token: alice, body: #"{"level": "mentions"}"#)
            #expect(set.status == 204)

            let client = Self.client(port: server.port, token: alice, transport)
            let live = LiveNotifications(client: client, userID: "alice")
            try await withBackground([record.watching(client), record.watching(live), { await live.run() }]) {
                try await record.wait { $0.liveCount >= 1 }
                let bobs = HeraldAPI(configuration: .local(port: server.port, token: bob, transport))

                try await bobs.postMessage(in: team, text: "plain", id: "plain")
                try await bobs.postMessage(in: team, text: "@Alice", id: "named", mentions: ["alice"])
                try await record.wait { $0.skips["plain"] != nil && $0.shows.contains("named") }
                #expect(record.skips["plain"] == .unmentioned)

                // Snoozed on another device while running: the stream's `notifications` frame; then off here.
                let until = Date().addingTimeInterval(3600).formatted(Date.ISO8601FormatStyle())
                let snoozed = try await server.request("PUT", "/v1/me/notifications", token: alice, body: #"{"snoozeUntil": "\#(until)"}"#)
                #expect(snoozed.status == 200)
                // (The frame went to the stream before the answer: the next message comes after it.)
                try await bobs.postMessage(in: withBob, text: "psst", id: "while-snoozed")
                try await record.wait { $0.skips["while-snoozed"] != nil }
                #expect(record.skips["while-snoozed"] == .snoozed)
                try await live.snooze(until: nil)
                #expect(try await client.api.notificationSettings().snoozeUntil == nil)

                // Nothing, chosen here: the server keeps it, the engine skips a mention at once.
                try await live.setLevel(.nothing, for: team)
                #expect(try await client.api.conversationLevels() == [team: LevelChoice(level: .nothing)])
                try await bobs.postMessage(in: team, text: "@Alice again", id: "named-muted", mentions: ["alice"])
                try await bobs.postMessage(in: withBob, text: "hello", id: "direct-after")
                try await record.wait { $0.skips["named-muted"] != nil && $0.shows.contains("direct-after") }
                #expect(record.skips["named-muted"] == .muted)

                // A send carries its mentions.
                let id = client.send("@Bob thanks", to: team, mentions: ["bob"])
                var sent = try await bobs.messages(in: team).last
                while sent?.id != id {
                    try await Task.sleep(for: .milliseconds(20))
                    sent = try await bobs.messages(in: team).last
                }
                #expect(sent?.mentions == ["bob"])
            }
        }
    }

    @Test("LiveNotifications runs again after its run ended (a view that went away and came back), keeping what the engine knew; two subscribers each get every effect; two runs at once share one connection", arguments: TestTransport.allCases)
    func restartable(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob", name: "Bob"))
            let withBob = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let client = Self.client(port: server.port, token: alice, transport)
            let live = LiveNotifications(client: client, userID: "alice")
            let first = ClientRecord(), second = ClientRecord()

            // A first window: its run, then gone.
            try await withBackground([first.watching(client), first.watching(live), { await live.run() }]) {
                try await first.wait { $0.liveCount >= 1 }
                try await server.post(bob, to: withBob, id: "first-run", text: "one")
                try await first.wait { $0.shows.contains("first-run") }
                live.open(withBob)
            }

            // It comes back, and a second window with it: both runs at once, one connection, both see each banner.
            try await withBackground([
                second.watching(client), first.watching(live), second.watching(live), { await live.run() }, { await live.run() },
            ]) {
                try await second.wait { $0.liveCount >= 1 }
                try await server.post(bob, to: withBob, id: "in-open-chat", text: "two")
                let charlie = try await server.token("charlie", name: "Charlie")
                let withCharlie = try await server.createConversation(charlie, kind: "direct", members: ["alice"])
                try await server.post(charlie, to: withCharlie, id: "second-run", text: "three")
                try await second.wait { $0.shows.contains("second-run") && $0.skips["in-open-chat"] != nil }
                try await first.wait { $0.shows.contains("second-run") }
                #expect(second.skips["in-open-chat"] == .active, "the chat opened during the first run is still open")
                #expect(first.shows.filter { $0 == "second-run" }.count == 1)
                #expect(server.environment.hub.presence(of: "alice").count == 1, "one connection for the two runs")
            }
        }
    }

    @Test("a token that expires while the stream is open is renewed at the next connect: the client resumes where it was, misses nothing, and sends what it queued; HTTP renews too", arguments: TestTransport.allCases)
    func renewsAnExpiredToken(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let tokens = server.environment.tokens
            let bob = try await server.token("bob")
            _ = try await server.token("alice")
            let chat = try await server.createConversation(bob, kind: "direct", members: ["alice"])
            // Taken now (60 s of leeway after exp), refused two seconds from now.
            let expiring = try await tokens.token(userID: "alice", name: "Alice", lifetime: .seconds(-58))
            let renewals = NIOLockedValueBox(0)
            var configuration = ClientConfiguration.local(port: server.port, token: expiring, transport)
            configuration.renewToken = {
                renewals.withLockedValue { $0 += 1 }
                return try await tokens.token(userID: "alice", name: "Alice")
            }
            configuration.initialBackoff = .milliseconds(50)
            let client = HeraldClient(configuration: configuration, resumeAfter: 0)
            let record = ClientRecord()
            let states = client.events()
            let refusedSeen = NIOLockedValueBox(false)
            try await withBackground([record.watching(client), {
                for await event in states { if case .state(.refused) = event { refusedSeen.withLockedValue { $0 = true } } }
            }, { await client.run() }]) {
            try await record.wait { $0.liveCount == 1 }
            try await server.post(bob, to: chat, id: "before", text: "Before it expired")
            try await record.wait { $0.messages.map(\.id) == ["before"] }

            try await Task.sleep(for: .seconds(3))
            // The connection drops while the token is expired; meanwhile Bob writes and Alice queues a reply.
            client.reconnect()
            try await server.post(bob, to: chat, id: "while-away", text: "While you were away")
            let reply = client.send("Back now", to: chat, id: "reply")
            try await record.wait { $0.liveCount >= 2 }
            try await eventually("the reply stored") {
                try await server.environment.store.entries(in: chat, for: "bob", after: nil, before: nil, limit: 10)
                    .contains { $0.id == reply }
            }
            try await record.wait { $0.messages.map(\.id).filter { $0 != reply } == ["before", "while-away"] }
            #expect(renewals.withLockedValue { $0 } == 1)
            // The HTTP API of the same client uses the renewed token.
            #expect(try await client.api.conversations().count == 1)
            #expect(renewals.withLockedValue { $0 } == 1)
            }
            #expect(refusedSeen.withLockedValue { $0 } == false, "the stream never ended refused")

            // HTTP alone: a request with an expired token is made again, once, with a renewed one.
            let expired = try await tokens.token(userID: "alice", name: "Alice", lifetime: .seconds(-120))
            let renewing = ClientConfiguration.local(port: server.port, token: expired, transport)
            renewing.renewToken = { try await tokens.token(userID: "alice", name: "Alice") }
            let api = HeraldAPI(configuration: renewing)
            #expect(try await api.conversations().count == 1)
            let stuck = HeraldAPI(configuration: .local(port: server.port, token: expired, transport))
            #expect(await APIClientTests.refusal { _ = try await stuck.conversations() }?.code == "token_expired")
        }
    }

    @Test("the stream over URLSession: where this system's libcurl carries WebSockets it goes live; where it does not (Debian 12), the client says so and keeps trying")
    func urlSessionStream() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            var configuration = ClientConfiguration.local(port: server.port, token: alice, .nio)
            configuration.transport = .urlSession
            configuration.initialBackoff = .milliseconds(50)
            let client = HeraldClient(configuration: configuration, resumeAfter: 0)
            let events = client.events()
            try await withBackground({ await client.run() }) {
                for await event in events {
                    guard case .state(let state) = event else { continue }
                    if URLSessionStreamTransport.isSupported {
                        if state == .live { break }
                    } else if case .reconnecting(_, _, let reason) = state {
                        #expect(reason == "cannot reach http://127.0.0.1:\(server.port): WebSockets not supported by libcurl")
                        break
                    }
                }
            }
        }
    }

    @Test("sends are retried until acknowledged, refused ones are reported once, and back-off grows then resets", arguments: TestTransport.allCases)
    func sendsAndBackoff(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let client = Self.client(port: server.port, token: alice, transport)
            let events = client.events()
            let sent = client.send("queued before connecting", to: chat, id: "early")
            let refused = client.send("nowhere", to: "no-such-conversation", id: "lost")
            try await withBackground({ await client.run() }) {
                var acknowledged: [String] = []
                var refusals: [String: String] = [:]
                for await event in events {
                    switch event {
                    case .acknowledged(let id, _): acknowledged.append(id)
                    case .refused(let id, let code, _): refusals[id] = code
                    default: break
                    }
                    if acknowledged.count == 1, refusals.count == 1 { break }
                }
                #expect(acknowledged == [sent])
                #expect(refusals == [refused: "conversation_not_found"])
            }
        }
        var configuration = ClientConfiguration(server: URL(string: "http://127.0.0.1:1")!, token: "x", transport: .nio())
        configuration.jitter = 0
        #expect(configuration.backoff(attempt: 1, random: 0.5) == .milliseconds(250))
        #expect(configuration.backoff(attempt: 3, random: 0.5) == .seconds(1))
        #expect(configuration.backoff(attempt: 20, random: 0.5) == .seconds(30), "capped")
        configuration.jitter = 0.2
        #expect(configuration.backoff(attempt: 1, random: 0) == .milliseconds(200))
        #expect(configuration.backoff(attempt: 1, random: 1) == .milliseconds(300))
    }
}
