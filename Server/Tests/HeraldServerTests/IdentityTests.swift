import Crypto
import Foundation
import HeraldServer
import JWTKit
import Testing

/// Ids are bytes: one user can never become another through a look-alike spelling, a control character or a
/// separator; tokens mean exactly what they say; devices belong to their user.
@Suite("Identity: ids compared as bytes, tokens checked strictly, devices kept to their owner", .timeLimit(.minutes(3)))
struct IdentityTests {
    /// A token for any claims, signed with the test server's secret.
    static func sign(_ claims: some JWTPayload) async throws -> String {
        let keys = await JWTKeyCollection().add(hmac: HMACKey(from: TestServer.secret), digestAlgorithm: .sha256)
        return try await keys.sign(claims)
    }

    /// A token with this raw header and payload JSON, signed HMAC-SHA256 with the test server's secret, whatever the
    /// header says.
    static func rawToken<H: HashFunction>(header: String, payload: String, hash: H.Type = SHA256.self) -> String {
        let signingInput = BadInputTests.base64URL(header) + "." + BadInputTests.base64URL(payload)
        let mac = HMAC<H>.authenticationCode(
            for: Data(signingInput.utf8), using: SymmetricKey(data: Data(TestServer.secret.utf8)))
        let signature = Data(mac).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return signingInput + "." + signature
    }

    static func people(_ result: HTTPResult) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: result.body) as? [String: Any]
        return object?["people"] as? [[String: Any]] ?? []
    }

    @Test("a token whose sub is a look-alike of another user's id (not NFC, or the Kelvin sign) is refused, never that user")
    func lookAlikeSubjects() async throws {
        try await TestServer.run { server in
            let jose = try await server.token("jos\u{E9}", name: "José")
            let kevin = try await server.token("Kevin")
            let joseChat = try await server.createConversation(jose, kind: "direct", members: ["bob"])
            let kevinChat = try await server.createConversation(kevin, kind: "direct", members: ["bob"])
            try await server.post(jose, to: joseChat, text: "private to josé")
            try await server.post(kevin, to: kevinChat, text: "private to Kevin")

            for impostor in ["jose\u{301}", "\u{212A}evin", "ali\u{0}ce", "bob\u{1F}", "bob\u{7F}", "bob\u{85}", ""] {
                let token = try await Self.sign(HeraldClaims(userID: impostor, name: "Impostor", expires: .distantFuture))
                let list = try await server.request("GET", "/v1/conversations", token: token)
                #expect(list.status == 401, "\(impostor.unicodeScalars.map { String($0.value, radix: 16) })")
                #expect(list.errorCode == "invalid_token")
                let history = try await server.request("GET", "/v1/conversations/\(joseChat)/messages", token: token)
                #expect(history.status == 401)
                let exchange = try await RawWebSocketExchange.run(port: server.port, path: "/v1/stream?token=\(token)")
                #expect(exchange.frames.last?.closeCode == 1008)
                #expect(exchange.frames.last?.closeReason == "invalid_token")
            }
            // Byte comparison: the NFC spelling is josé, and only josé.
            let list = try await server.request("GET", "/v1/conversations", token: jose)
            #expect(list.text.contains(joseChat))
            #expect(!list.text.contains(kevinChat))
        }
    }

    @Test("member ids, path ids and device ids that are not NFC or hold control characters are invalid_request")
    func badIdsInRequests() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "group", title: "Ids", members: ["bob"])
            for member in [#"jose\u0301"#, #"\u212Aevin"#, #"bo\u0000b"#, #"bo\u001Fb"#, #"bo\u0085b"#, ""] {
                let result = try await server.request(
                    "POST", "/v1/conversations", token: alice, body: #"{"kind": "group", "title": "x", "members": ["\#(member)"]}"#)
                #expect(result.status == 400, "member \(member)")
                #expect(result.errorCode == "invalid_request")
            }
            let long = String(repeating: "a", count: 129)
            let result = try await server.request(
                "POST", "/v1/conversations", token: alice, body: #"{"kind": "direct", "members": ["\#(long)"]}"#)
            #expect(result.errorCode == "invalid_request", "an id over 128 bytes")

            for path in [
                "/v1/conversations/jose%CC%81/messages", "/v1/conversations/a%00b/messages",
                "/v1/conversations/%E2%84%AAevin/messages", "/v1/conversations/a%1Bb/messages",
            ] {
                let result = try await server.request("GET", path, token: alice)
                #expect(result.status == 400, "\(path)")
                #expect(result.errorCode == "invalid_request")
            }
            let device = try await server.request(
                "PUT", "/v1/devices/phone%07", token: alice, body: #"{"platform": "fcm", "token": "t"}"#)
            #expect(device.errorCode == "invalid_request")

            // A focus on a bad id is refused on the stream too, and the connection lives on.
            let socket = try await server.stream(alice)
            var frames = FrameReader(socket)
            _ = try await frames.untilReady()
            socket.send(#"{"type": "focus", "conversation": "a\u0007b"}"#)
            let refusal = try await frames.next()
            #expect(refusal.type == "error")
            #expect(refusal.code == "invalid_request")
            #expect(try await frames.drain(socket).isEmpty)
            socket.close()

            // The conversation itself is untouched.
            let fine = try await server.request("GET", "/v1/conversations/\(chat)/messages", token: alice)
            #expect(fine.status == 200)
        }
    }

    @Test("ids holding what other stores used as separators (commas, colons, pipes, spaces) come back whole and distinct")
    func separatorsInIds() async throws {
        try await TestServer.run { server in
            let odd = ["x,y", "1:a", "a|b", "a b", "p;q"]
            let me = try await server.token("1")
            let group = try await server.createConversation(me, kind: "group", title: "Odd", members: odd)
            let list = try await server.request("GET", "/v1/conversations", token: me)
            let conversations = try JSONSerialization.jsonObject(with: list.body) as? [String: Any]
            let listed = (conversations?["conversations"] as? [[String: Any]])?.first { $0["id"] as? String == group }
            #expect((listed?["members"] as? [String])?.sorted() == (odd + ["1"]).sorted())

            // Direct chats whose member lists would join to the same text under a naive key stay apart.
            // ("a" with "b:c", and "a:b" with "c", both "a:b:c" joined by colons.)
            let a = try await server.token("a")
            let first = try await server.createConversation(a, kind: "direct", members: ["b:c"])
            let ab = try await server.token("a:b")
            let second = try await server.createConversation(ab, kind: "direct", members: ["c"])
            #expect(first != second)
            let seen = try await server.request("GET", "/v1/conversations", token: ab)
            #expect(!seen.text.contains(first), "a:b is not a member of a's chat with b:c")
        }
    }

    @Test("text with U+0000 is refused, never stored cut short")
    func nulInText() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "group", title: "Nul", members: ["bob"])
            let post = try await server.request(
                "POST", "/v1/conversations/\(chat)/messages", token: alice, body: #"{"text": "before\u0000after"}"#)
            #expect(post.status == 400)
            #expect(post.errorCode == "invalid_request")
            let title = try await server.request(
                "POST", "/v1/conversations", token: alice, body: #"{"kind": "group", "title": "a\u0000b", "members": ["bob"]}"#)
            #expect(title.errorCode == "invalid_request")
            let image = try await server.request(
                "POST", "/v1/conversations/\(chat)/messages", token: alice, body: #"{"imageURL": "javascript:alert(1)"}"#)
            #expect(image.errorCode == "invalid_request", "only http and https images")

            let socket = try await server.stream(alice)
            var frames = FrameReader(socket)
            _ = try await frames.untilReady()
            socket.send(#"{"type": "send", "conversation": "\#(chat)", "id": "n1", "text": "x\u0000y"}"#)
            let refusal = try await frames.next()
            #expect(refusal.code == "invalid_request")
            #expect(refusal.ref == "n1")
            socket.close()

            // Every other control character is text like any other, stored and read back whole.
            let tabbed = try await server.post(alice, to: chat, text: "tab\there\u{1B}[31m end")
            let history = try await server.request("GET", "/v1/conversations/\(chat)/messages", token: alice)
            let messages = try history.decode(MessageListJSON.self).messages
            #expect(messages.map(\.text) == [tabbed.text])
            #expect(tabbed.text == "tab\there\u{1B}[31m end")
        }
    }

    @Test("a token verified before is known by its bytes: a copy with one byte changed is refused, and it expires on time")
    func verifiedTokens() async throws {
        let authority = await TokenAuthority(secret: TestServer.secret)
        // A token with a K in it (most have one), for the look-alike below.
        var token = ""
        // It expired 58 s ago: 2 s of the 60 s leeway are left.
        for attempt in 0..<100 where !token.contains("K") {
            token = try await authority.token(userID: "alice", name: "Alice \(attempt)", lifetime: .seconds(-58))
        }
        #expect(token.contains("K"))
        #expect(try await authority.verify(token).userID == "alice")
        #expect(try await authority.verify(token).userID == "alice", "again, from what was verified")
        var bytes = Array(token.utf8)
        bytes[bytes.count - 2] = bytes[bytes.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let altered = String(decoding: bytes, as: UTF8.self)
        await #expect(throws: APIError.self) { try await authority.verify(altered) }
        // The Kelvin sign is canonically equivalent to K: equal as Swift strings, not as bytes.
        let lookalike = token.replacingOccurrences(of: "K", with: "\u{212A}")
        #expect(lookalike == token && Array(lookalike.utf8) != Array(token.utf8))
        await #expect(throws: APIError.self) { try await authority.verify(lookalike) }
        try await Task.sleep(for: .seconds(3))
        do {
            _ = try await authority.verify(token)
            Issue.record("an expired token was accepted")
        } catch let error as APIError {
            #expect(error.code == .tokenExpired)
        }
    }

    @Test("exp has the documented 60 s of leeway: a token expired 30 s ago is taken, one expired 90 s ago is token_expired")
    func expiryLeeway() async throws {
        try await TestServer.run { server in
            let authority = server.environment.tokens
            let recent = try await authority.token(userID: "alice", name: "Alice", lifetime: .seconds(-30))
            let old = try await authority.token(userID: "alice", name: "Alice", lifetime: .seconds(-90))
            #expect(try await server.request("GET", "/v1/conversations", token: recent).status == 200)
            let refused = try await server.request("GET", "/v1/conversations", token: old)
            #expect(refused.status == 401)
            #expect(refused.errorCode == "token_expired")
        }
    }

    @Test("a token signed with the secret whose exp is before 1970, as far back as -1e300, is token_expired (found by fuzzing)")
    func expiredBefore1970() async throws {
        let authority = await TokenAuthority(secret: TestServer.secret)
        for exp in ["-1e300", "-9.3e18", "-1"] {
            let token = Self.rawToken(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: #"{"sub":"alice","name":"Alice","exp":\#(exp)}"#)
            let error = await #expect(throws: APIError.self, "exp \(exp)") { try await authority.verify(token) }
            #expect(error?.code == .tokenExpired, "exp \(exp)")
        }
    }

    @Test("a refused token says why in words a developer can act on: the claim missing or of the wrong type, expired by how much")
    func refusalsSayWhy() async throws {
        try await TestServer.run { server in
            func refusal(_ payload: String) async throws -> (code: String?, message: String) {
                let token = Self.rawToken(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: payload)
                let answer = try await server.request("GET", "/v1/conversations", token: token)
                #expect(answer.status == 401)
                return (answer.errorCode, (try? answer.decode(ErrorJSON.self).error.message) ?? "")
            }
            let noName = try await refusal(#"{"sub":"alice","exp":4102444800}"#)
            #expect(noName.code == "invalid_token" && noName.message.contains("`name` is missing"), "\(noName)")
            let stringExp = try await refusal(#"{"sub":"alice","name":"Alice","exp":"tomorrow"}"#)
            #expect(stringExp.message.contains("`exp` must be a number"), "\(stringExp)")
            let numericSub = try await refusal(#"{"sub":42,"name":"Alice","exp":4102444800}"#)
            #expect(numericSub.message.contains("`sub` must be a string"), "\(numericSub)")
            let old = try await server.environment.tokens.token(userID: "alice", name: "Alice", lifetime: .seconds(-7_500))
            let expired = try await server.request("GET", "/v1/conversations", token: old)
            let message = (try? expired.decode(ErrorJSON.self).error.message) ?? ""
            #expect(expired.errorCode == "token_expired" && message.contains("2 h 5 min ago"), "\(message)")
        }
    }

    @Test("claims: alg must be HS256, nbf and iat honoured, name at most 200 characters, picture only http or https")
    func claims() async throws {
        try await TestServer.run { server in
            let payload = #"{"sub":"alice","name":"Alice","exp":4102444800}"#
            let wrongAlg = Self.rawToken(header: #"{"alg":"HS384","typ":"JWT"}"#, payload: payload)
            let noneAlg = Self.rawToken(header: #"{"alg":"none","typ":"JWT"}"#, payload: payload)
            let critical = Self.rawToken(header: #"{"alg":"HS256","typ":"JWT","crit":["exp"]}"#, payload: payload)
            let good = Self.rawToken(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: payload)
            let hs384 = Self.rawToken(header: #"{"alg":"HS384","typ":"JWT"}"#, payload: payload, hash: SHA384.self)
            let later = Date().addingTimeInterval(3600)
            let notYet = try await Self.sign(HeraldClaims(userID: "alice", name: "Alice", expires: .distantFuture, notBefore: later))
            let fromTheFuture = try await Self.sign(
                HeraldClaims(userID: "alice", name: "Alice", expires: .distantFuture, issuedAt: later))
            let slightSkew = try await Self.sign(HeraldClaims(
                userID: "alice", name: "Alice", expires: .distantFuture,
                notBefore: Date().addingTimeInterval(20), issuedAt: Date().addingTimeInterval(20)))
            let longName = try await Self.sign(
                HeraldClaims(userID: "alice", name: String(repeating: "é", count: 201), expires: .distantFuture))
            let longestName = try await Self.sign(
                HeraldClaims(userID: "alice", name: String(repeating: "é", count: 200), expires: .distantFuture))

            for (token, expected) in [
                (wrongAlg, 401), (noneAlg, 401), (critical, 401), (hs384, 401), (notYet, 401), (fromTheFuture, 401),
                (longName, 401), (good, 200), (slightSkew, 200), (longestName, 200),
            ] {
                let result = try await server.request("GET", "/v1/conversations", token: token)
                #expect(result.status == expected, "\(token.prefix(40))")
                if expected == 401 { #expect(result.errorCode == "invalid_token") }
            }

            // A picture that is not http or https is ignored; the person keeps their name.
            _ = try await server.token("bob")
            for (picture, shown) in [
                ("javascript:alert(1)", nil), ("data:image/png;base64,AAAA", nil), ("file:///etc/passwd", nil),
                ("https://example.com/a.png", "https://example.com/a.png"),
            ] as [(String, String?)] {
                let token = try await Self.sign(
                    HeraldClaims(userID: "pic", name: "Pic", picture: picture, expires: .distantFuture))
                let created = try await server.request(
                    "POST", "/v1/conversations", token: token, body: #"{"kind": "direct", "members": ["bob"]}"#)
                let me = try Self.people(created).first { $0["id"] as? String == "pic" }
                #expect(me?["name"] as? String == "Pic")
                #expect(me?["avatarURL"] as? String == shown, "\(picture)")
            }
        }
    }

    @Test("devices are keyed by user and id; a push token registered by a new user moves to them")
    func devicesBelongToTheirUser() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let store = server.environment.store
            let put = { (token: String, device: String, push: String) in
                try await server.request(
                    "PUT", "/v1/devices/\(device)", token: token, body: #"{"platform": "fcm", "token": "\#(push)"}"#)
            }
            let first = try await put(alice, "phone", "alice-token")
            #expect(first.status == 200, "\(first.text)")
            #expect(try await put(bob, "phone", "bob-token").status == 200, "the same id under another user is their own")
            #expect(try await store.devices(of: "alice").map(\.token) == ["alice-token"], "bob did not take alice's")
            #expect(try await store.devices(of: "bob").map(\.token) == ["bob-token"])

            // Alice's phone changes hands: Bob signs in on it and registers the same push token.
            #expect(try await put(bob, "second-hand", "alice-token").status == 200)
            #expect(try await store.devices(of: "alice").isEmpty, "the old owner no longer gets pushes on it")
            #expect(Set(try await store.devices(of: "bob").map(\.token)) == ["bob-token", "alice-token"])

            // Removing is one's own device only.
            #expect(try await server.request("DELETE", "/v1/devices/phone", token: alice).status == 404)
            #expect(try await server.request("DELETE", "/v1/devices/phone", token: bob).status == 204)
        }
    }
}
