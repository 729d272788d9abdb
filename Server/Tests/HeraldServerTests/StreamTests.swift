import Foundation
@testable import HeraldServer
import Testing

// Three minutes: alone the slowest case here (500 posts, one connection each, while a client catches up) takes
// 3 s, but with every suite at once on a 2-core machine it took 54 s of the minute it had.
@Suite("The live stream", .timeLimit(.minutes(3)))
struct StreamTests {
    @Test("a message from one member reaches the other's stream; a non-member's stream gets nothing")
    func delivery() async throws {
        try await TestServer.run { server in
            let (alice, bob, charlie) = try await (server.token("alice", name: "Alice Johnson"), server.token("bob", name: "Bob"), server.token("charlie"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let aliceStream = try await server.stream(alice)
            let charlieStream = try await server.stream(charlie)
            var aliceFrames = FrameReader(aliceStream)
            var charlieFrames = FrameReader(charlieStream)
            _ = try await aliceFrames.untilReady()
            _ = try await charlieFrames.untilReady()

            let posted = try await server.post(bob, to: chat, text: "Hey, are you there?")
            let frame = try await aliceFrames.next()
            #expect(frame.type == "message")
            #expect(frame.message == posted)
            #expect(frame.conversation?.id == chat)
            #expect(frame.conversation?.kind == "direct")
            #expect(frame.sender?.id == "bob")
            #expect(frame.sender?.name == "Bob")

            #expect(try await charlieFrames.drain(charlieStream).isEmpty, "a non-member's stream gets nothing")
            aliceStream.close()
            charlieStream.close()
        }
    }

    @Test("a non-member's post gets 403 not_a_member; an unknown conversation 404 conversation_not_found")
    func membership() async throws {
        try await TestServer.run { server in
            let (alice, charlie) = try await (server.token("alice"), server.token("charlie"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let forbidden = try await server.request(
                "POST", "/v1/conversations/\(chat)/messages", token: charlie, body: #"{"text": "hi"}"#)
            #expect(forbidden.status == 403)
            #expect(forbidden.errorCode == "not_a_member")
            let reading = try await server.request("GET", "/v1/conversations/\(chat)/messages", token: charlie)
            #expect(reading.status == 403)
            let unknown = try await server.request(
                "POST", "/v1/conversations/no-such-id/messages", token: alice, body: #"{"text": "hi"}"#)
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "conversation_not_found")
        }
    }

    @Test("the same client id over HTTP stores one message: 201, then 200 with the same message")
    func idempotentHTTP() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let stream = try await server.stream(alice)
            var frames = FrameReader(stream)
            _ = try await frames.untilReady()
            let body = #"{"id": "c0ffee", "text": "once"}"#
            let first = try await server.request("POST", "/v1/conversations/\(chat)/messages", token: bob, body: body)
            let second = try await server.request("POST", "/v1/conversations/\(chat)/messages", token: bob, body: body)
            #expect(first.status == 201)
            #expect(second.status == 200)
            #expect(try first.decode(MessageJSON.self) == second.decode(MessageJSON.self))
            let delivered = try await frames.drain(stream)
            #expect(delivered.map(\.message?.id) == ["c0ffee"], "delivered once")
            let stored = try await server.request("GET", "/v1/conversations/\(chat)/messages", token: alice)
            #expect(try stored.decode(MessageListJSON.self).messages.count == 1)

            let stolen = try await server.request("POST", "/v1/conversations/\(chat)/messages", token: alice, body: body)
            #expect(stolen.status == 409, "another member's id in the same conversation is a conflict, never their message")
            #expect(stolen.errorCode == "id_conflict")
            stream.close()
        }
    }

    @Test("message ids are scoped to their conversation: another's id elsewhere is neither revealed (no 409) nor taken; retries stay idempotent")
    func scopedIDs() async throws {
        try await TestServer.run { server in
            let (alice, bob, mallory) = try await (server.token("alice"), server.token("bob"), server.token("mallory"))
            let secret = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let own = try await server.createConversation(mallory, kind: "direct", members: ["bob"])
            try await server.post(alice, to: secret, id: "predictable-1", text: "between us")
            // Mallory, who cannot see Alice and Bob's chat, uses the same id in hers: a new message, no oracle.
            let guess = try await server.request(
                "POST", "/v1/conversations/\(own)/messages", token: mallory, body: #"{"id": "predictable-1", "text": "guess"}"#)
            #expect(guess.status == 201, "\(guess.text)")
            // She takes an id first, and Alice can still use it in her own chat.
            try await server.post(mallory, to: own, id: "predictable-2", text: "squat")
            let later = try await server.request(
                "POST", "/v1/conversations/\(secret)/messages", token: alice, body: #"{"id": "predictable-2", "text": "mine"}"#)
            #expect(later.status == 201)
            // Retries are idempotent per conversation and sender: the same message again, 200.
            let retry = try await server.request(
                "POST", "/v1/conversations/\(secret)/messages", token: alice, body: #"{"id": "predictable-2", "text": "mine"}"#)
            #expect(retry.status == 200)
            #expect(try retry.decode(MessageJSON.self) == later.decode(MessageJSON.self))
            // Bob, in both, gets both messages named predictable-1, each in its own conversation.
            let stream = try await server.stream(bob, after: 0)
            var frames = FrameReader(stream)
            let caughtUp = try await frames.untilReady().messages.compactMap(\.message)
            #expect(caughtUp.filter { $0.id == "predictable-1" }.map(\.conversationId).sorted() == [secret, own].sorted())
            stream.close()
        }
    }

    @Test("the same client id over the stream: one message, and an ack with its seq each time")
    func idempotentStream() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let bobStream = try await server.stream(bob)
            let aliceStream = try await server.stream(alice)
            var bobFrames = FrameReader(bobStream)
            var aliceFrames = FrameReader(aliceStream)
            _ = try await bobFrames.untilReady()
            _ = try await aliceFrames.untilReady()
            let send = #"{"type": "send", "conversation": "\#(chat)", "id": "b-1", "text": "over the stream"}"#
            bobStream.send(send)
            bobStream.send(send)
            let bobSaw = try await bobFrames.drain(bobStream)
            let acks = bobSaw.filter { $0.type == "ack" }
            #expect(acks.count == 2)
            #expect(acks.allSatisfy { $0.id == "b-1" && $0.seq == acks.first?.seq })
            #expect(bobSaw.filter { $0.type == "message" }.count == 1, "the sender's other devices see it once")
            let aliceSaw = try await aliceFrames.drain(aliceStream)
            #expect(aliceSaw.map(\.type) == ["message"])
            #expect(aliceSaw.first?.message?.seq == acks.first?.seq)
            bobStream.close()
            aliceStream.close()
        }
    }

    @Test("a client away while 100 messages are posted at once resumes with after: each once, in seq order")
    func resume() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "group", title: "Busy", members: ["bob"])
            let first = try await server.stream(alice)
            var frames = FrameReader(first)
            let ready = try await frames.untilReady().ready
            let seen = try #require(ready.seq)
            first.close()
            _ = try await first.closed()

            let posted = try await withThrowingTaskGroup(of: MessageJSON.self) { group in
                for index in 0..<100 {
                    group.addTask { try await server.post(bob, to: chat, id: "m\(index)", text: "message \(index)") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let resumed = try await server.stream(alice, after: seen)
            var resumedFrames = FrameReader(resumed)
            let (messages, caughtUp) = try await resumedFrames.untilReady()
            let seqs = messages.compactMap(\.message?.seq)
            #expect(seqs == posted.map(\.seq).sorted())
            #expect(Set(messages.compactMap(\.message?.id)) == Set((0..<100).map { "m\($0)" }))
            #expect(caughtUp.seq == seqs.last)
            #expect(try await resumedFrames.drain(resumed).isEmpty)
            resumed.close()
        }
    }

    @Test("messages posted while a client is catching up arrive after ready, with no gap and no duplicate")
    func resumeDuringPosting() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            for index in 0..<300 {
                try await server.post(bob, to: chat, id: "before-\(index)", text: "before \(index)")
            }
            // The posting runs beside the catch-up; a failure on either side ends both.
            try await withThrowingTaskGroup(of: Void.self) { posting in
                posting.addTask {
                    for index in 0..<200 {
                        try await server.post(bob, to: chat, id: "during-\(index)", text: "during \(index)")
                    }
                }
                let stream = try await server.stream(alice, after: 0)
                var frames = FrameReader(stream)
                var ids: [String] = []
                var seqs: [Int64] = []
                var readySeen = false
                while ids.count < 500 {
                    let frame = try await frames.next()
                    switch frame.type {
                    case "message":
                        ids.append(frame.message!.id)
                        seqs.append(frame.message!.seq)
                    case "ready":
                        #expect(!readySeen)
                        readySeen = true
                        #expect(frame.seq == seqs.last)
                    default:
                        Issue.record("unexpected \(frame.type)")
                    }
                }
                try await posting.waitForAll()
                #expect(readySeen)
                #expect(seqs == seqs.sorted() && Set(seqs).count == 500, "in order, no duplicate")
                #expect(Set(ids) == Set((0..<300).map { "before-\($0)" } + (0..<200).map { "during-\($0)" }))
                #expect(try await frames.drain(stream).isEmpty)
                stream.close()
            }
        }
    }

    @Test("a send into a conversation in memory goes straight to the group commit, no task on the way, its ack after its message; one not in memory is read first, on the streams' work")
    func sendWithoutTask() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "group", members: ["bob"])
            let stream = try await server.stream(alice)
            var frames = FrameReader(stream)
            _ = try await frames.untilReady()
            let work = server.environment.streamWork
            /// Sends `id`; the frames up to its answer.
            func send(_ id: String) async throws -> [String] {
                stream.send(#"{"type":"send","conversation":"\#(chat)","id":"\#(id)","text":"hi"}"#)
                var answered: [String] = []
                while let text = await frames.nextText() {
                    answered.append(text)
                    if text.contains(#""type":"ack""#) || text.contains(#""type":"error""#) { break }
                }
                return answered
            }

            server.environment.memberships.forget(chat)
            let before = work.submissionCount
            let first = try await send("s1")
            #expect(work.submissionCount == before + 1, "not in memory: read on the streams' work")
            #expect(first.count == 2 && first[0].contains(#""type":"message""#) && first[1].contains(#""id":"s1""#), "\(first)")

            #expect(server.environment.memberships.cached(chat) != nil, "the read left it in memory")
            for id in ["s2", "s3"] {
                let answered = try await send(id)
                #expect(answered.count == 2 && answered[0].contains(#""id":"\#(id)""#) && answered[1].contains(#""type":"ack""#),
                        "\(answered)")
            }
            #expect(work.submissionCount == before + 1, "in memory: no job for either send")
            #expect(try await send("s2").last?.contains(#""type":"ack""#) == true, "a repeat is answered with the stored message")
            let refused = try await send("s4-" + String(repeating: "x", count: 200))
            #expect(refused.last?.contains(#""code":"invalid_request""#) == true, "a bad id is refused at once: \(refused)")
            #expect(work.submissionCount == before + 1)
            stream.close()
        }
    }

    @Test("a graceful stop closes each open stream with 1000, and the stop waits until it has")
    func gracefulStop() async throws {
        var socket: RawWebSocket?
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let open = try await RawWebSocket(port: server.port, path: "/v1/stream?token=\(alice)")
            try await open.send(Array(#"{"type":"ping"}"#.utf8))
            while let frame = try await open.next(), !frame.text.contains(#""type":"pong""#) {}
            socket = open
        }
        // The server has stopped; what it sent before is still in the client's socket.
        let stream = try #require(socket)
        let frames = try await stream.untilClose()
        #expect(frames.last?.closeCode == 1000, "told at the stop, with a normal close")
        await stream.close()
    }

    @Test("presence: each connection's app state and open conversation, as the push decision asks")
    func presence() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let hub = server.environment.hub
            #expect(hub.presence(of: "alice").isEmpty)
            let phone = try await server.stream(alice)
            let laptop = try await server.stream(alice)
            var phoneFrames = FrameReader(phone)
            var laptopFrames = FrameReader(laptop)
            _ = try await phoneFrames.untilReady()
            _ = try await laptopFrames.untilReady()
            #expect(hub.hasForegroundConnection(userID: "alice"), "a connection starts in the foreground")
            #expect(!hub.isLooking(userID: "alice", at: chat))

            phone.send(#"{"type": "focus", "conversation": "\#(chat)"}"#)
            _ = try await phoneFrames.drain(phone)
            #expect(hub.isLooking(userID: "alice", at: chat))

            phone.send(#"{"type": "app", "state": "background"}"#)
            _ = try await phoneFrames.drain(phone)
            #expect(!hub.isLooking(userID: "alice", at: chat), "a backgrounded app is not looking")
            #expect(hub.hasForegroundConnection(userID: "alice"), "the laptop still is")

            laptop.send(#"{"type": "app", "state": "background"}"#)
            _ = try await laptopFrames.drain(laptop)
            #expect(!hub.hasForegroundConnection(userID: "alice"))

            phone.close()
            _ = try await phone.closed()
            laptop.close()
            _ = try await laptop.closed()
            for _ in 0..<200 where !hub.presence(of: "alice").isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(hub.presence(of: "alice").isEmpty, "closed connections leave no presence")
        }
    }
}

struct MessageListJSON: Decodable {
    var messages: [MessageJSON]
}

@Suite("A slow reader cannot hold up others", .timeLimit(.minutes(3)))
struct SlowReaderTests {
    @Test("a client that stops reading is dropped once its buffer's bytes (not only frames) fill; the others get everything")
    func slowReader() async throws {
        // The frame limit is out of reach: only the byte limit can drop the stalled connection.
        try await TestServer.run(configure: {
            $0.limits.streamBufferFrames = 1_000_000
            $0.limits.streamBufferBytes = 256 * 1024
        }) { server in
            let (alice, bob, charlie) = try await (server.token("alice"), server.token("bob"), server.token("charlie"))
            let chat = try await server.createConversation(alice, kind: "group", title: "Firehose", members: ["bob", "charlie"])
            let stalled = try await TestSocket.connect(
                url: "ws://127.0.0.1:\(server.port)/v1/stream?token=\(charlie)", readsFrames: false)
            let reader = try await server.stream(alice)
            var frames = FrameReader(reader)
            _ = try await frames.untilReady()
            let sender = try await server.stream(bob)
            // Sent in batches, each read by Alice before the next: a reading client then never falls more than a
            // batch (its messages and acks) behind, well inside the buffer, however busy the machine is; the stalled
            // client falls behind by everything.
            let text = String(repeating: "x", count: 3_900)
            let count = 1_500, batch = 50
            var received = 0
            for start in stride(from: 0, to: count, by: batch) {
                for index in start..<(start + batch) {
                    sender.send(#"{"type": "send", "conversation": "\#(chat)", "id": "f\#(index)", "text": "\#(text)"}"#)
                }
                while received < start + batch {
                    if try await frames.next().type == "message" { received += 1 }
                }
            }
            #expect(received == count, "the reading member got every message")
            let hub = server.environment.hub
            for _ in 0..<500 where !hub.presence(of: "charlie").isEmpty {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(hub.presence(of: "charlie").isEmpty, "the stalled connection was dropped")
            reader.close()
            sender.close()
            stalled.close()
        }
    }
}
