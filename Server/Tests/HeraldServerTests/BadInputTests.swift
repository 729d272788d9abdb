import Foundation
import HeraldProtocol
import HeraldServer
import JWTKit
import HeraldTestSupport
import Testing

@Suite("Bad input gets a clear error with a stable code, and the server keeps serving", .timeLimit(.minutes(3)))
struct BadInputTests {
    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test("tokens: missing, malformed, bad signature, alg none, expired, each with its code, on HTTP and the stream")
    func tokens() async throws {
        try await TestServer.run { server in
            let otherKeys = await JWTKeyCollection().add(
                hmac: HMACKey(from: "another-secret-that-is-long-enough-0123456789"), digestAlgorithm: .sha256)
            let foreign = try await otherKeys.sign(HeraldClaims(userID: "alice", name: "Alice", expires: .distantFuture))
            let serverKeys = await JWTKeyCollection().add(hmac: HMACKey(from: TestServer.secret), digestAlgorithm: .sha256)
            let expired = try await serverKeys.sign(
                HeraldClaims(userID: "alice", name: "Alice", expires: Date().addingTimeInterval(-60)))
            let unsigned = Self.base64URL(#"{"alg":"none","typ":"JWT"}"#) + "."
                + Self.base64URL(#"{"sub":"alice","name":"Alice","exp":4102444800}"#) + "."
            let noName = try await serverKeys.sign(NamelessClaims(sub: "alice", exp: .init(value: .distantFuture)))

            let cases: [(token: String?, code: String)] = [
                (nil, "missing_token"),
                ("not-a-jwt", "invalid_token"),
                (foreign, "invalid_token"),
                (unsigned, "invalid_token"),
                (expired, "token_expired"),
                (noName, "invalid_token"),
            ]
            for (token, code) in cases {
                let http = try await server.request("GET", "/v1/conversations", token: token)
                #expect(http.status == 401, "\(code)")
                #expect(http.errorCode == code)
                let plain = try await server.request("GET", "/v1/stream" + (token.map { "?token=\($0)" } ?? ""))
                #expect(plain.status == 401, "a plain GET of the stream: \(code)")
                #expect(plain.errorCode == code)
                let exchange = try await RawWebSocketExchange.run(
                    port: server.port, path: "/v1/stream" + (token.map { "?token=\($0)" } ?? ""))
                #expect(exchange.statusLine.hasPrefix("HTTP/1.1 101"), "a browser cannot read a refused upgrade's status")
                #expect(exchange.frames.first?.opcode == 0x1)
                let refusal = try JSONDecoder().decode(FrameJSON.self, from: Data((exchange.frames.first?.text ?? "").utf8))
                #expect(refusal.type == "error")
                #expect(refusal.code == code, "the stream says why")
                #expect(exchange.frames.last?.closeCode == 1008)
                #expect(exchange.frames.last?.closeReason == code)
            }
            // With a valid token: a plain GET is told to upgrade; a bad `after` is refused on either path.
            let alice = try await server.token("alice")
            let plain = try await server.request("GET", "/v1/stream?token=\(alice)")
            #expect(plain.status == 426)
            #expect(plain.errorCode == "invalid_request")
            let badAfter = try await server.request("GET", "/v1/stream?after=-1&token=\(alice)")
            #expect(badAfter.status == 400)
            #expect(badAfter.errorCode == "invalid_request")
            let refused = try await RawWebSocketExchange.run(port: server.port, path: "/v1/stream?after=x&token=\(alice)")
            #expect(refused.statusLine.hasPrefix("HTTP/1.1 400"))
            let elsewhere = try await RawWebSocketExchange.run(port: server.port, path: "/v1/streams?token=\(alice)")
            #expect(elsewhere.statusLine.hasPrefix("HTTP/1.1 400"), "only the stream upgrades")
            let health = try await server.request("GET", "/health")
            #expect(health.status == 200)
        }
    }

    @Test("HTTP bodies: malformed JSON, wrong types, missing fields, bad values, too long, too large")
    func httpBodies() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let messages = "/v1/conversations/\(chat)/messages"
            let cases: [(path: String, body: String, status: Int, code: String)] = [
                (messages, #"{"text": "hi""#, 400, "invalid_json"),
                (messages, "", 400, "invalid_json"),
                (messages, #"{"text": 42}"#, 400, "invalid_request"),
                (messages, #"{"text": "hi", "id": ["x"]}"#, 400, "invalid_request"),
                (messages, #"{"text": "hi", "id": ""}"#, 400, "invalid_request"),
                (messages, #"{}"#, 400, "invalid_request"),
                (messages, #"{"text": "   "}"#, 400, "invalid_request"),
                (messages, #"{"imageURL": "javascript:alert(1)"}"#, 400, "invalid_request"),
                (messages, #"{"text": "\#(String(repeating: "a", count: 4_001))"}"#, 400, "text_too_long"),
                (messages, #"{"text": "\#(String(repeating: "a", count: 70_000))"}"#, 413, "too_large"),
                ("/v1/conversations", #"{"kind": "channel", "members": []}"#, 400, "invalid_request"),
                ("/v1/conversations", #"{"kind": "direct", "members": ["bob", "charlie"]}"#, 400, "invalid_request"),
                ("/v1/conversations", #"{"kind": "group"}"#, 400, "invalid_request"),
                ("/v1/conversations/\(chat)/read", #"{"upTo": "yesterday"}"#, 400, "invalid_request"),
            ]
            for (path, body, status, code) in cases {
                let result = try await server.request("POST", path, token: alice, body: body)
                #expect(result.status == status, "\(body.prefix(60))")
                #expect(result.errorCode == code, "\(body.prefix(60)) → \(result.text.prefix(200))")
            }
            let fourThousand = String(repeating: "é", count: 4_000)
            let accepted = try await server.request(
                "POST", messages, token: alice, body: #"{"text": "\#(fourThousand)"}"#)
            #expect(accepted.status == 201, "exactly 4,000 characters is allowed")
            let query = try await server.request("GET", messages + "?limit=0", token: alice)
            #expect(query.errorCode == "invalid_request")
            let unknown = try await server.request("GET", "/v1/nothing-here", token: alice)
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "not_found")
            #expect(try await server.request("GET", "/health").status == 200)
        }
    }

    @Test("names and titles are bounded in bytes beside characters: a 24 KB title of 200 characters is refused, as is such a name")
    func heavyCharacters() async throws {
        try await TestServer.run { server in
            let (alice, _) = try await (server.token("alice"), server.token("bob"))
            // 200 characters, each an `a` with 60 combining marks: 24,200 bytes.
            let heavy = String(repeating: "a" + String(repeating: "\u{0301}\u{0300}", count: 30), count: 200)
            #expect(heavy.count == 200 && heavy.utf8.count == 24_200)
            for title in [heavy, String(repeating: "é", count: 201), "Team\u{1B}[31m", "Line\nbreak"] {
                let body = try String(decoding: JSONSerialization.data(withJSONObject: ["kind": "group", "title": title, "members": ["bob"]]), as: UTF8.self)
                let result = try await server.request("POST", "/v1/conversations", token: alice, body: body)
                #expect(result.status == 400, "\(title.utf8.count) bytes")
                #expect(result.errorCode == "invalid_request")
            }
            let longest = String(repeating: "😀", count: 200)  // 800 bytes
            let body = try String(decoding: JSONSerialization.data(withJSONObject: ["kind": "group", "title": longest, "members": ["bob"]]), as: UTF8.self)
            #expect(try await server.request("POST", "/v1/conversations", token: alice, body: body).status == 201)

            // 30 such characters (3,630 bytes): a header of 200 would be over the server's header limit anyway.
            let heavyName = try await server.environment.tokens.token(userID: "zalgo", name: String(heavy.prefix(30)))
            let named = try await server.request("GET", "/v1/conversations", token: heavyName)
            #expect(named.status == 401)
            #expect(named.errorCode == "invalid_token")

            // Text: 4,000 characters, and 32 KiB.
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let heavyText = String(repeating: "a" + String(repeating: "\u{0301}", count: 20), count: 1_000)  // 41,000 bytes
            let posted = try await server.request(
                "POST", "/v1/conversations/\(chat)/messages", token: alice,
                body: try String(decoding: JSONSerialization.data(withJSONObject: ["text": heavyText]), as: UTF8.self))
            #expect(posted.status == 400)
            #expect(posted.errorCode == "text_too_long")
        }
    }

    @Test("stream frames: malformed, wrong types, unknown types, binary, too long, too large; the connection lives on")
    func streamFrames() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let stream = try await server.stream(alice)
            var frames = FrameReader(stream)
            _ = try await frames.untilReady()
            let cases: [(frame: String, code: String, ref: String?)] = [
                ("{not json", "invalid_json", nil),
                ("[1, 2, 3]", "invalid_request", nil),
                (#"{"kind": "send"}"#, "invalid_request", nil),
                (#"{"type": "dance"}"#, "unknown_type", nil),
                (#"{"type": "app", "state": "asleep"}"#, "invalid_request", nil),
                (#"{"type": "focus", "conversation": 12}"#, "invalid_request", nil),
                (#"{"type": "send", "conversation": "\#(chat)", "id": "s1", "text": 5}"#, "invalid_request", "s1"),
                (#"{"type": "send", "conversation": "\#(chat)", "text": "no id"}"#, "invalid_request", nil),
                (#"{"type": "send", "conversation": "nope", "id": "s2", "text": "hi"}"#, "conversation_not_found", "s2"),
                (#"{"type": "send", "conversation": "\#(chat)", "id": "s3", "text": "\#(String(repeating: "x", count: 4_001))"}"#,
                 "text_too_long", "s3"),
                (#"{"type": "ping", "pad": "\#(String(repeating: "x", count: 70_000))"}"#, "too_large", nil),
            ]
            for (frame, code, ref) in cases {
                stream.send(frame)
                let answer = try await frames.next()
                #expect(answer.type == "error", "\(frame.prefix(60))")
                #expect(answer.code == code, "\(frame.prefix(60))")
                #expect(answer.ref == ref, "\(frame.prefix(60))")
            }
            stream.send(#"{"type": "send", "conversation": "\#(chat)", "id": "ok", "text": "still here"}"#)
            let delivered = try await frames.drain(stream)
            #expect(delivered.map(\.type).sorted() == ["ack", "message"])
            stream.close()
        }
    }

    @Test("a frame over 1 MiB closes that connection (1009); the server and other connections carry on")
    func hugeFrame() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let victim = try await server.stream(alice)
            let bystander = try await server.stream(bob)
            var bystanderFrames = FrameReader(bystander)
            _ = try await bystanderFrames.untilReady()
            victim.send(String(repeating: "x", count: 1_100_000))
            let close = try await victim.closed()
            #expect(close?.closeCode == .messageTooLarge)
            try await server.post(alice, to: chat, text: "after the storm")
            #expect(try await bystanderFrames.next().message?.text == "after the storm")
            bystander.close()
        }
    }

    @Test("random frames thrown at the stream leave the server and other connections healthy")
    func fuzz() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let bystander = try await server.stream(bob)
            var bystanderFrames = FrameReader(bystander)
            _ = try await bystanderFrames.untilReady()
            var random = SplitMix(seed: 0x4E524C44)
            let pieces = [#"{"type":"#, #""send""#, #""focus""#, #""app""#, #""ping""#, #","conversation":"#,
                          "\"\(chat)\"", #","id":"#, #""x""#, #","text":"#, "null", "[", "]", "{", "}", ",", ":",
                          "\"", "\\", "\u{0}", "é", "💥", "1e999", "-0", "true"]
            for round in 0..<3 {
                let attacker = try await server.stream(alice)
                for _ in 0..<300 {
                    var frame = ""
                    for _ in 0..<Int(random.next() % 12) {
                        frame += random.next() % 5 == 0
                            ? String(UnicodeScalar(UInt8(random.next() % 128)))
                            : pieces[Int(random.next() % UInt64(pieces.count))]
                    }
                    attacker.send(frame)
                }
                attacker.send(#"{"type": "send", "conversation": "\#(chat)", "id": "fuzz-\#(round)", "text": "alive"}"#)
                let message = try await bystanderFrames.next()
                #expect(message.message?.id == "fuzz-\(round)", "the attacker's connection still works")
                attacker.close()
            }
            try await server.post(alice, to: chat, text: "and HTTP too")
            #expect(try await bystanderFrames.next().message?.text == "and HTTP too")
            #expect(try await server.request("GET", "/health").status == 200)
            bystander.close()
        }
    }
}

/// Claims without a name, which Herald refuses.
struct NamelessClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
