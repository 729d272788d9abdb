import Foundation
import HeraldServer
import HeraldTestSupport
import JWTKit
import Testing

/// Groups whose members change, end to end: the real server on each store, real streams, a fake APNs.
@Suite("Members: added, removed, leaving, renamed, owners", .timeLimit(.minutes(3)), .childProcesses)
struct MembershipTests {
    /// One person: their token, and (once opened) their stream.
    struct Member {
        let id: String
        let token: String
    }

    @Test("add with full and with no history, rename, owners, remove, leave: each member's streams, reads and pushes",
          arguments: StoreKind.available)
    func membersChange(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            let folder = try makeTemporaryFolder("herald-members")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await FakeAPNs.run { apns in
                // Pushes wait 2 s, as a read elsewhere may cancel them; a removal does too.
                let environment = database.merging(apns.environment) { $1 }.merging(["HERALD_PUSH_DELAY": "2"]) { $1 }
                let server = try await ServerProcess(
                    database: folder.appendingPathComponent("herald.sqlite").path, secret: TestServer.secret,
                    environment: environment)
                defer { server.stop() }
                try await membersChange(port: server.port, fake: apns.fake)
                await server.expectCleanStop()
            }
        }
    }

    private func membersChange(port: Int, fake: FakePushService) async throws {
        let authority = await TokenAuthority(secret: TestServer.secret)
        var people: [String: Member] = [:]
        for id in ["alice", "bob", "carol", "dave", "erin"] {
            people[id] = Member(id: id, token: try await authority.token(userID: id, name: id.capitalized))
        }
        let (alice, bob, carol, dave, erin) = (people["alice"]!, people["bob"]!, people["carol"]!, people["dave"]!, people["erin"]!)
        let server = RemoteServer(port: port)
        try await server.signIn(Array(people.keys))
        func call(_ method: String, _ path: String, _ who: Member, _ body: String? = nil) async throws -> HTTPResult {
            try await HTTPClient.request(port: port, method, path, token: who.token, body: body)
        }
        let created = try await call("POST", "/v1/conversations", alice, #"{"kind": "group", "title": "Team Chat", "members": ["bob", "erin"]}"#)
        #expect(created.status == 201)
        let chat = try created.decode(ConversationJSON.self)
        #expect(chat.owners == ["alice"], "the creator owns the group")
        let path = "/v1/conversations/\(chat.id)"
        // Dave and Erin are away, each with a phone.
        for (person, seed) in [(dave, 0xDA7E), (erin, 0xE414)] {
            let registered = try await call("PUT", "/v1/devices/phone", person, #"{"platform": "apns", "token": "\#(PushHarness.apnsToken(seed))"}"#)
            #expect(registered.status == 200)
        }
        let davesPhone = "/3/device/\(PushHarness.apnsToken(0xDA7E))", erinsPhone = "/3/device/\(PushHarness.apnsToken(0xE414))"

        var streams: [String: (socket: TestSocket, reader: FrameReader)] = [:]
        for person in [alice, bob, carol] {
            let socket = try await TestSocket.connect(url: "ws://127.0.0.1:\(port)/v1/stream?token=\(person.token)")
            var reader = FrameReader(socket)
            _ = try await reader.untilReady()
            streams[person.id] = (socket, reader)
        }
        defer { for stream in streams.values { stream.socket.close() } }
        /// The entries `id`'s stream got since the last look (a ping's pong marks the end).
        func entries(of id: String) async throws -> [MessageJSON] {
            guard var stream = streams[id] else { return [] }
            defer { streams[id] = stream }
            return try await stream.reader.drain(stream.socket).compactMap { $0.type == "message" ? $0.message : nil }
        }
        func nextEntry(of id: String) async throws -> FrameJSON {
            guard var stream = streams[id] else { throw TestFailure("no stream for \(id)") }
            defer { streams[id] = stream }
            while true {
                let frame = try await stream.reader.next()
                if frame.type == "message" { return frame }
            }
        }

        _ = try await call("POST", "\(path)/messages", alice, #"{"id": "before", "text": "said before anyone joined"}"#)
        for id in ["alice", "bob"] { #expect(try await entries(of: id).map(\.id) == ["before"]) }
        #expect(try await entries(of: "carol").isEmpty, "not a member yet")

        // Carol is added with the history: her stream learns at once, with the conversation; so does everyone's.
        let added = try await call("POST", "\(path)/members", alice, #"{"members": ["carol"]}"#)
        #expect(added.status == 200, "\(added.text)")
        #expect(try added.decode(ConversationJSON.self).members == ["alice", "bob", "carol", "erin"])
        let toCarol = try await nextEntry(of: "carol")
        #expect(toCarol.message?.kind == "event" && toCarol.message?.event?.type == "member_added")
        #expect(toCarol.message?.event?.members == [EventJSON.Member(id: "carol", name: "Carol")])
        #expect(toCarol.message?.senderId == "alice" && toCarol.conversation?.title == "Team Chat")
        #expect(try await entries(of: "bob").map { $0.event?.type } == ["member_added"], "a quiet line for the others")
        let carolsHistory = try await call("GET", "\(path)/messages", carol).decode(MessageListJSON.self).messages
        #expect(carolsHistory.map(\.kind) == ["message", "event"], "full history: what was said before, then her arrival")

        // Dave is added with none: he sees from his arrival on, on every read path.
        let addedDave = try await call("POST", "\(path)/members", alice, #"{"members": ["dave"], "history": "none"}"#)
        #expect(addedDave.status == 200)
        let davesHistory = try await call("GET", "\(path)/messages", dave).decode(MessageListJSON.self).messages
        #expect(davesHistory.map { $0.event?.type } == ["member_added"])
        #expect(try await call("GET", "\(path)/messages?after=0", dave).decode(MessageListJSON.self).messages.count == 1)
        let davesList = try await call("GET", "/v1/conversations", dave).text
        #expect(davesList.contains(#""unreadCount":0"#) && !davesList.contains("said before"), "\(davesList)")
        // The catch-up from the very start brings him his arrival, not what came before.
        let davesStream = try await TestSocket.connect(url: "ws://127.0.0.1:\(port)/v1/stream?token=\(dave.token)&after=0")
        var davesReader = FrameReader(davesStream)
        let caughtUp = try await davesReader.untilReady().messages.compactMap(\.message)
        davesStream.close()
        #expect(caughtUp.map { $0.event?.type ?? $0.id } == ["member_added"], "\(caughtUp.map(\.id))")
        // His phone is told he was added, in his words; no one else is pushed for an addition.
        let pushedDave = try await fake.wait("Dave's push for being added") { requests in
            requests.contains { $0.path == davesPhone }
        }.first { $0.path == davesPhone }
        #expect(pushedDave?.text.contains("Alice added you to Team Chat") == true, "\(pushedDave?.text ?? "")")
        let badge = (pushedDave?.json?["aps"] as? [String: Any])?["badge"] as? Int
        #expect(badge == 0, "the badge counts nothing from before he joined, nor the event itself")
        // Erin's push for the message was due before Dave's (decisions and sends go in order): it is there by now or
        // soon, and nothing else for her.
        try await fake.wait("Erin's push for the message") { requests in requests.contains { $0.path == erinsPhone } }
        #expect(fake.requests.filter { $0.path == erinsPhone }.map(\.messageID) == ["before"],
                "Erin, away, is pushed for the message, never for others being added")

        // Renamed; Bob made an owner.
        let renamed = try await call("PATCH", path, alice, #"{"title": "Team Room"}"#)
        #expect(renamed.status == 200)
        #expect(try renamed.decode(ConversationJSON.self).title == "Team Room")
        let owners = try await call("PUT", "\(path)/owners/bob", alice)
        #expect(try owners.decode(ConversationJSON.self).owners == ["alice", "bob"])
        let shown = try await call("GET", path, carol)
        #expect(shown.status == 200 && shown.text.contains(#""title":"Team Room""#) && shown.text.contains(#""owners":["alice","bob"]"#))
        #expect(try await entries(of: "carol").map { $0.event?.type } == ["member_added", "renamed", "owner_added"])

        // Bob, an owner now, removes Carol: her stream learns it and then gets nothing more of the group.
        #expect(try await call("DELETE", "\(path)/members/carol", bob).status == 204)
        _ = try await call("POST", "\(path)/messages", alice, #"{"id": "after-carol", "text": "Carol is gone"}"#)
        #expect(try await entries(of: "carol").map { $0.event?.type } == ["member_removed"])
        #expect(try await entries(of: "bob").compactMap { $0.event == nil ? $0.id : nil } == ["after-carol"])
        for (method, route) in [("GET", "\(path)/messages"), ("GET", path), ("POST", "\(path)/messages")] {
            let refused = try await call(method, route, carol, method == "POST" ? #"{"text": "still here?"}"# : nil)
            #expect(refused.status == 403 && refused.errorCode == "not_a_member", "\(method) \(route): \(refused.status) \(refused.text)")
        }
        #expect(!(try await call("GET", "/v1/conversations", carol).text.contains(chat.id)), "gone from her list")

        // Erin is removed: nothing posted after it reaches her phone; Dave's push comes. (A push still waiting at
        // the removal is dropped too: PushDecisionTests, on a clock the test moves.)
        #expect(try await call("DELETE", "\(path)/members/erin", alice).status == 204)
        _ = try await call("POST", "\(path)/messages", alice, #"{"id": "after-erin", "text": "you will not hear this"}"#)
        try await fake.wait("Dave's push after Erin left") { requests in
            requests.contains { $0.path == davesPhone && $0.messageID == "after-erin" }
        }
        #expect(!fake.requests.contains { $0.path == erinsPhone && $0.messageID == "after-erin" }, "none for her")

        // Dave leaves; a member who is not an owner cannot remove anyone.
        #expect(try await call("DELETE", "\(path)/members/bob", dave).errorCode == "not_an_owner")
        #expect(try await call("DELETE", "\(path)/members/dave", dave).status == 204)
        let left = try await entries(of: "alice").compactMap(\.event)
        #expect(left.map(\.type).suffix(1) == ["member_left"])
        let final = try await call("GET", path, alice).text
        #expect(final.contains(#""members":["alice","bob"]"#), "\(final)")
    }
}

/// Changes to groups that must be refused: each a clear error with its code, and nothing changed.
@Suite("Members: bad changes are refused, nothing changed", .timeLimit(.minutes(3)), .childProcesses)
struct MembershipRefusalTests {
    @Test("not an owner, malformed and look-alike ids, past the limit, a direct chat, not a member, the last owner")
    func refused() async throws {
        try await TestServer.run(configure: { $0.limits.maxGroupMembers = 3 }) { server in
            let (alice, bob, _) = try await (server.token("alice"), server.token("bob"), server.token("carol"))
            _ = try await server.token("dave")
            let group = try await server.createConversation(alice, kind: "group", title: "Team Chat", members: ["bob"])
            let direct = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let path = "/v1/conversations/\(group)"
            func expect(
                _ method: String, _ route: String, by token: String, _ body: String? = nil, status: Int, code: String,
                sourceLocation: SourceLocation = #_sourceLocation
            ) async throws {
                let answer = try await server.request(method, route, token: token, body: body)
                #expect(answer.status == status && answer.errorCode == code,
                        "\(method) \(route) \(body ?? ""): \(answer.status) \(answer.text)", sourceLocation: sourceLocation)
            }

            // Bob is a member, not an owner.
            try await expect("DELETE", "\(path)/members/alice", by: bob, status: 403, code: "not_an_owner")
            try await expect("PATCH", path, by: bob, #"{"title": "Mine now"}"#, status: 403, code: "not_an_owner")
            try await expect("POST", "\(path)/members", by: bob, #"{"members": ["carol"]}"#, status: 403, code: "not_an_owner")
            try await expect("PUT", "\(path)/owners/bob", by: bob, status: 403, code: "not_an_owner")
            try await expect("DELETE", path, by: bob, status: 403, code: "not_an_owner")

            // Ids that are not ids, and look-alikes of people who exist.
            for bad in [#""""#, #""bob\u0000""#, #""bob\n""#, "\"\(String(repeating: "b", count: 129))\"", #""Cafe\u0301""#, #""\u212Aelvin""#,
                        #""dave\u200B""#, #""\uFEFFcarol""#, #""bob\u202E""#, #"".""#, #""..""#] {
                try await expect("POST", "\(path)/members", by: alice, #"{"members": [\#(bad)]}"#, status: 400, code: "invalid_request")
            }
            for lookAlike in ["Bob", "carol ", "d\u{0430}ve"] {
                try await expect("POST", "\(path)/members", by: alice, #"{"members": ["\#(lookAlike)"]}"#, status: 400, code: "unknown_user")
            }
            try await expect("POST", "\(path)/members", by: alice, #"{"members": []}"#, status: 400, code: "invalid_request")
            try await expect("POST", "\(path)/members", by: alice, #"{"members": ["carol"], "history": "some"}"#, status: 400, code: "invalid_request")
            try await expect("PATCH", path, by: alice, #"{}"#, status: 400, code: "invalid_request")

            // Past the limit (3 here): adding, or creating.
            try await expect("POST", "\(path)/members", by: alice, #"{"members": ["carol", "dave"]}"#, status: 409, code: "member_limit")
            try await expect("POST", "/v1/conversations", by: alice, #"{"kind": "group", "members": ["bob", "carol", "dave"]}"#,
                             status: 409, code: "member_limit")

            // A direct chat never changes.
            let directPath = "/v1/conversations/\(direct)"
            try await expect("POST", "\(directPath)/members", by: alice, #"{"members": ["carol"]}"#, status: 409, code: "direct_conversation")
            try await expect("PATCH", directPath, by: alice, #"{"title": "Us"}"#, status: 409, code: "direct_conversation")
            try await expect("DELETE", "\(directPath)/members/bob", by: alice, status: 409, code: "direct_conversation")
            try await expect("DELETE", directPath, by: alice, status: 409, code: "direct_conversation")

            // Someone who is not a member; the last owner; a conversation that does not exist.
            try await expect("DELETE", "\(path)/members/carol", by: alice, status: 404, code: "member_not_found")
            try await expect("PUT", "\(path)/owners/carol", by: alice, status: 404, code: "member_not_found")
            try await expect("DELETE", "\(path)/owners/alice", by: alice, status: 409, code: "last_owner")
            try await expect("PATCH", "/v1/conversations/no-such-group", by: alice, #"{"title": "x"}"#, status: 404, code: "conversation_not_found")

            // Nothing changed.
            let shown = try await server.request("GET", path, token: alice)
            #expect(shown.text.contains(#""members":["alice","bob"]"#) && shown.text.contains(#""owners":["alice"]"#)
                    && shown.text.contains(#""title":"Team Chat""#), "\(shown.text)")
            let history = try await server.request("GET", "\(path)/messages", token: alice).decode(MessageListJSON.self)
            #expect(history.messages.isEmpty, "no event was written")
            // Up to the limit is fine.
            #expect(try await server.request("POST", "\(path)/members", token: alice, body: #"{"members": ["carol"]}"#).status == 200)
        }
    }

    @Test("changes count against the per-user limit: past it, 429 rate_limited with Retry-After")
    func rateLimited() async throws {
        try await TestServer.run(configure: { $0.limits.changesPerHour = 2 }) { server in
            let (alice, _) = try await (server.token("alice"), server.token("bob"))
            let group = try await server.createConversation(alice, kind: "group", title: "One", members: ["bob"])
            for title in ["Two", "Three"] {
                #expect(try await server.request("PATCH", "/v1/conversations/\(group)", token: alice, body: #"{"title": "\#(title)"}"#).status == 200)
            }
            let third = try await server.request("PATCH", "/v1/conversations/\(group)", token: alice, body: #"{"title": "Four"}"#)
            #expect(third.status == 429 && third.errorCode == "rate_limited" && third.headers[.retryAfter] != nil)
        }
    }
}
