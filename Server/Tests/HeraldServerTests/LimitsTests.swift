import Foundation
import HTTPTypes
import HeraldTestSupport
@testable import HeraldServer
import Testing

/// One user, however busy, can neither take the server from the others nor push their own state past what is real.
@Suite("Load from one user is bounded: paged lists, per-user limits, read markers kept to what exists", .timeLimit(.minutes(3)))
struct LimitsTests {
    struct ListJSON: Decodable {
        struct Item: Decodable {
            var id: String
            var muted: Bool
        }

        var conversations: [Item]
        var next: String?
    }

    @Test("the list comes in pages, newest activity first, each conversation once; the cursor and limit are checked")
    func pagedList() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            var created: [String] = []
            for index in 0..<7 {
                let id = try await server.createConversation(alice, kind: "group", title: "G\(index)", members: ["bob"])
                try await server.post(alice, to: id, text: "hello \(index)")
                created.append(id)
            }
            // Activity: a post moves a conversation to the top.
            try await server.post(alice, to: created[2], text: "bump")
            let expected = [created[2]] + created.filter { $0 != created[2] }.reversed()

            var seen: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let query = "limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")
                let result = try await server.request("GET", "/v1/conversations?\(query)", token: alice)
                #expect(result.status == 200)
                let page = try result.decode(ListJSON.self)
                #expect(page.conversations.count <= 3)
                seen += page.conversations.map(\.id)
                cursor = page.next
                pages += 1
            } while cursor != nil && pages < 10
            #expect(seen == expected)
            #expect(pages == 3)

            // A page is stable under new activity: the rest of the list still comes, and nothing twice.
            let first = try await server.request("GET", "/v1/conversations?limit=4", token: alice).decode(ListJSON.self)
            try await server.post(alice, to: created[0], text: "moves to the top")
            let rest = try await server.request(
                "GET", "/v1/conversations?limit=4&cursor=\(first.next ?? "")", token: alice).decode(ListJSON.self)
            #expect(Set(first.conversations.map(\.id)).isDisjoint(with: rest.conversations.map(\.id)))

            // Muted only.
            #expect(try await server.request("PUT", "/v1/conversations/\(created[4])/mute", token: alice).status == 204)
            let muted = try await server.request("GET", "/v1/conversations?muted=true", token: alice).decode(ListJSON.self)
            #expect(muted.conversations.map(\.id) == [created[4]])
            #expect(muted.conversations.allSatisfy { $0.muted })

            for query in ["limit=0", "limit=101", "limit=x", "cursor=nonsense", "cursor=", "muted=yes"] {
                let result = try await server.request("GET", "/v1/conversations?\(query)", token: alice)
                #expect(result.status == 400, "\(query)")
                #expect(result.errorCode == "invalid_request")
            }
        }
    }

    @Test("posts beyond the burst get 429 rate_limited with Retry-After, on HTTP and on the stream; others are unaffected")
    func postLimits() async throws {
        try await TestServer.run(configure: {
            $0.limits.postBurst = 3
            $0.limits.postsPerSecond = 0.01
        }) { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "group", title: "Flood", members: ["bob"])
            for index in 0..<3 {
                try await server.post(alice, to: chat, text: "ok \(index)")
            }
            let refused = try await server.request("POST", "/v1/conversations/\(chat)/messages", token: alice, body: #"{"text": "one too many"}"#)
            #expect(refused.status == 429)
            #expect(refused.errorCode == "rate_limited")
            let retryAfter = refused.headers[HTTPField.Name("Retry-After")!].flatMap { Int($0) }
            #expect(retryAfter.map { (1...101).contains($0) } == true, "Retry-After in whole seconds: \(String(describing: retryAfter))")

            // On the stream, the refusal names the send and says how long to wait.
            let socket = try await server.stream(alice)
            var frames = FrameReader(socket)
            _ = try await frames.untilReady()
            socket.send(#"{"type": "send", "conversation": "\#(chat)", "id": "s1", "text": "again"}"#)
            let text = try #require(await frames.nextText())
            let frame = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            #expect(frame?["code"] as? String == "rate_limited")
            #expect(frame?["ref"] as? String == "s1")
            #expect((frame?["retryAfter"] as? Double).map { $0 > 0 } == true)
            socket.close()

            // Bob has his own allowance; nothing refused was stored.
            try await server.post(bob, to: chat, text: "bob is fine")
            let history = try await server.request("GET", "/v1/conversations/\(chat)/messages", token: bob)
            #expect(try history.decode(MessageListJSON.self).messages.map(\.text) == ["ok 0", "ok 1", "ok 2", "bob is fine"])
        }
    }

    @Test("a token bucket: a burst at once, then the sustained rate; a quiet user's bucket is forgotten")
    func tokenBucket() {
        let clock = ManualClock()
        let limiter = RateLimiter(burst: 3, perSecond: 2, clock: clock)
        #expect((0..<3).map { _ in limiter.take("a") } == [nil, nil, nil])
        #expect(limiter.take("a") == .milliseconds(500))
        #expect(limiter.take("b") == nil, "each user has their own bucket")
        clock.advance(by: .milliseconds(500))
        #expect(limiter.take("a") == nil, "one earned back after half a second at 2 a second")
        #expect(limiter.take("a") != nil)
        clock.advance(by: .seconds(10))
        #expect((0..<4).map { _ in limiter.take("a") == nil } == [true, true, true, false], "never more than the burst")
    }

    @Test("full buckets are forgotten in sweeps; with many users active at once, a sweep waits until as many again are held")
    func bucketSweeps() {
        let clock = ManualClock()
        let limiter = RateLimiter(burst: 1, perSecond: 1, clock: clock)
        for user in 0..<15_000 { _ = limiter.take("u\(user)") }
        #expect(limiter.trackedUsers == 15_000, "all active: a sweep at 10,001 forgot none")
        clock.advance(by: .seconds(2))
        for user in 15_000..<20_002 { _ = limiter.take("u\(user)") }
        #expect(limiter.trackedUsers == 20_002, "no sweep at every take past the first: the next waits for twice the held")
        _ = limiter.take("u20002")
        #expect(limiter.trackedUsers == 5_003, "then the 15,000 full ones go, and those active since stay")
    }

    @Test("a stream's frame budget: a burst at once, then the sustained rate; refusals say when; a stream that goes on is closed")
    func frameBudget() {
        var budget = FrameBudget(burst: 3, perSecond: 2)
        #expect((0..<3).map { _ in budget.take(at: .zero) } == [.accept, .accept, .accept])
        #expect(budget.take(at: .zero) == .refuse(retryAfter: .milliseconds(500)))
        #expect(budget.take(at: .milliseconds(500)) == .accept, "one earned back after half a second at 2 a second")
        #expect((0..<3).map { _ in budget.take(at: .milliseconds(500)) }.allSatisfy { $0 != .accept && $0 != .close })
        #expect(budget.take(at: .milliseconds(500)) == .close, "more refusals than the burst (less what it earned back): closed")
        var idle = FrameBudget(burst: 3, perSecond: 2)
        _ = idle.take(at: .zero)
        #expect((0..<4).map { _ in idle.take(at: .seconds(60)) == .accept } == [true, true, true, false], "never more than the burst")
    }

    @Test("a flood paced to take each token as it comes (80 frames every 100 ms at 20 a second) is closed; a client one and a half times over its rate is refused the excess, never closed")
    func pacedFlood() {
        var paced = FrameBudget(burst: 100, perSecond: 20)
        var closedAt: Duration?
        for tick in 0..<50 where closedAt == nil {
            let now = Duration.milliseconds(100 * tick)
            for _ in 0..<80 where closedAt == nil {
                if paced.take(at: now) == .close { closedAt = now }
            }
        }
        #expect(closedAt != nil && closedAt! <= .milliseconds(500), "closed at \(String(describing: closedAt))")

        var eager = FrameBudget(burst: 100, perSecond: 20)
        var verdicts: [FrameBudget.Verdict] = []
        for frame in 0..<3_000 { verdicts.append(eager.take(at: .milliseconds(frame * 1000 / 30))) }  // 30 a second
        #expect(!verdicts.contains(.close), "over its rate by half: never closed")
        #expect(verdicts.filter { $0 == .accept }.count >= 2_000, "and what its rate allows is taken")
    }

    @Test("a stream flooding frames is refused past its budget and then closed (1008); another user's stream and posts carry on")
    func frameFlood() async throws {
        try await TestServer.run(configure: {
            $0.limits.streamFrameBurst = 100
            $0.limits.streamFramesPerSecond = 20
        }) { server in
            let (mallory, alice, bob) = try await (server.token("mallory"), server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let flood = try await RawWebSocket(port: server.port, path: "/v1/stream?token=\(mallory)")
            let ping = Array(#"{"type": "ping"}"#.utf8)
            // One ping at a time, each answered (a pong, or a refusal) before the next goes, until the server closes:
            // as fast as the budget allows to measure, and the server never closes with unread frames from us, which
            // would make its kernel reset the connection and drop the answers not yet sent (a flood of 2,000 sent at
            // once lost them all on a busy machine).
            let started = ContinuousClock.now
            var frames: [RawWebSocketExchange.Frame] = []
            flooding: for _ in 0..<2_000 {
                do {
                    try await flood.connection.send(Self.masked(ping))
                } catch {
                    break  // closed under us
                }
                while let frame = try await flood.next() {
                    frames.append(frame)
                    if frame.opcode == 0x8 { break flooding }
                    if frame.text.contains(#""pong""#) || frame.text.contains("rate_limited") { break }
                }
            }
            // The burst, and what was earned at 20 a second while the server read the flood (well under a second
            // alone; longer on a loaded machine, so the bound follows the time it took).
            let elapsed = ContinuousClock.now - started
            let earned = Int((Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * 20) + 1
            let pongs = frames.filter { $0.text.contains(#""pong""#) }.count
            let refusals = frames.filter { $0.text.contains("rate_limited") }.count
            #expect((100...(100 + earned)).contains(pongs), "the burst, and what was earned in \(elapsed): \(pongs)")
            #expect(refusals >= 100, "each frame past the budget refused: \(refusals)")
            #expect(frames.last?.closeCode == 1008)
            #expect(frames.last?.closeReason == "too many frames")
            await flood.close()

            // Bob's stream and Alice's posts are untouched.
            let stream = try await server.stream(bob)
            var reader = FrameReader(stream)
            _ = try await reader.untilReady()
            try await server.post(alice, to: chat, text: "still here")
            #expect(try await reader.next().message?.text == "still here")
            stream.close()
        }
    }

    /// One masked text frame of `payload` (under 126 bytes).
    static func masked(_ payload: [UInt8]) -> [UInt8] {
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        return [0x81, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    @Test("streams opened a minute are limited per user: past the burst an upgrade is refused with rate_limited")
    func streamOpens() async throws {
        try await TestServer.run(configure: { $0.limits.streamOpensPerMinute = 3 }) { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            for _ in 0..<3 {
                let stream = try await server.stream(alice)
                var reader = FrameReader(stream)
                _ = try await reader.untilReady()
                stream.close()
            }
            let refused = try await RawWebSocketExchange.run(port: server.port, path: "/v1/stream?token=\(alice)")
            #expect(refused.frames.first?.text.contains("rate_limited") == true, "\(refused.frames.map(\.text))")
            #expect(refused.frames.last?.closeCode == 1008)
            let other = try await server.stream(bob)
            var reader = FrameReader(other)
            _ = try await reader.untilReady()
            other.close()
        }
    }

    @Test("conversations created an hour, open streams and devices each have a limit, refused with rate_limited")
    func otherLimits() async throws {
        try await TestServer.run(configure: {
            $0.limits.conversationsPerHour = 2
            $0.limits.streamsPerUser = 2
            $0.limits.devicesPerUser = 2
        }) { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            _ = try await server.createConversation(alice, kind: "group", title: "1", members: ["bob"])
            _ = try await server.createConversation(alice, kind: "group", title: "2", members: ["bob"])
            let third = try await server.request(
                "POST", "/v1/conversations", token: alice, body: #"{"kind": "group", "title": "3", "members": ["bob"]}"#)
            #expect(third.status == 429)
            #expect(third.errorCode == "rate_limited")
            #expect(third.headers[HTTPField.Name("Retry-After")!] != nil)
            _ = try await server.createConversation(bob, kind: "group", title: "bob's", members: ["alice"])

            let streams = [try await server.stream(alice), try await server.stream(alice)]
            for socket in streams {
                var frames = FrameReader(socket)
                _ = try await frames.untilReady()
            }
            let exchange = try await RawWebSocketExchange.run(port: server.port, path: "/v1/stream?token=\(alice)")
            let refusal = try JSONSerialization.jsonObject(with: Data((exchange.frames.first?.text ?? "").utf8)) as? [String: Any]
            #expect(refusal?["code"] as? String == "rate_limited")
            #expect(exchange.frames.last?.closeCode == 1008)
            let bobStream = try await server.stream(bob)
            var bobFrames = FrameReader(bobStream)
            _ = try await bobFrames.untilReady()
            // Closing one frees its place.
            streams[0].close()
            _ = try await streams[0].closed()
            let hub = server.environment.hub
            for _ in 0..<500 where hub.presence(of: "alice").count > 1 {
                try await Task.sleep(for: .milliseconds(10))
            }
            let again = try await server.stream(alice)
            var againFrames = FrameReader(again)
            _ = try await againFrames.untilReady()
            for socket in [streams[1], again, bobStream] { socket.close() }

            let put = { (device: String) in
                try await server.request("PUT", "/v1/devices/\(device)", token: alice, body: #"{"platform": "fcm", "token": "t-\#(device)"}"#)
            }
            #expect(try await put("one").status == 200)
            #expect(try await put("two").status == 200)
            #expect(try await put("one").status == 200, "re-registering a device is not a new one")
            let over = try await put("three")
            #expect(over.status == 429)
            #expect(over.errorCode == "rate_limited")
        }
    }

    @Test("a read marker cannot move past the conversation's latest seq; posting moves one's own marker past one's message")
    func readMarkerClamp() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "group", title: "Markers", members: ["bob"])
            let other = try await server.createConversation(alice, kind: "group", title: "Other", members: ["bob"])
            let first = try await server.post(bob, to: chat, text: "one")
            #expect(try await server.request("POST", "/v1/conversations/\(chat)/read", token: alice, body: #"{"upTo": 1000000}"#).status == 204)
            // Later messages, here or elsewhere, are unread: the marker stood at the conversation's latest.
            try await server.post(bob, to: other, text: "elsewhere")
            try await server.post(bob, to: chat, text: "two")
            let summaries = try await server.environment.store.conversations(of: "alice", after: nil, limit: 10, filter: .all)
            let summary = try #require(summaries.summaries.first { $0.record.conversation.id == chat })
            #expect(summary.unreadCount == 1)
            #expect(summary.readUpTo == first.seq)

            let mine = try await server.post(alice, to: chat, text: "my reply")
            let after = try await server.environment.store.conversations(of: "alice", after: nil, limit: 10, filter: .all)
            let read = try #require(after.summaries.first { $0.record.conversation.id == chat })
            #expect(read.readUpTo == mine.seq)
            #expect(read.unreadCount == 0)
        }
    }
}
