import Foundation
import HeraldClient
import HeraldCore
import HeraldPresentation
import HeraldProtocol
import HeraldTestSupport
import Testing

@Suite("HeraldAPI, the client's HTTP side, against a live server", .timeLimit(.minutes(3)))
struct APIClientTests {
    static func api(port: Int, token: String, _ transport: TestTransport) -> HeraldAPI {
        HeraldAPI(configuration: .local(port: port, token: token, transport))
    }

    @Test("conversations with unread counts and read markers; history in pages; marking read clears the count", arguments: TestTransport.allCases)
    func conversationsAndReadMarkers(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let aliceAPI = Self.api(port: server.port, token: alice, transport), bobAPI = Self.api(port: server.port, token: bob, transport)
            let chat = try await aliceAPI.createConversation(kind: .direct, members: ["bob"])
            #expect(chat.kind == .direct && Set(chat.members) == ["alice", "bob"])
            #expect(try await bobAPI.createConversation(kind: .direct, members: ["alice"]).id == chat.id,
                    "the same direct chat, not a second one")
            for index in 1...5 {
                _ = try await server.post(alice, to: chat.id, text: "message \(index)")
            }

            let list = try await bobAPI.conversations()
            #expect(list.map(\.conversation.id) == [chat.id])
            #expect(list.first?.unreadCount == 5)
            #expect(list.first?.readUpTo == 0)
            #expect(list.first?.lastMessage?.text == "message 5")
            #expect(try await aliceAPI.conversations().first?.unreadCount == 0, "one's own messages are never unread")

            let all = try await bobAPI.messages(in: chat.id)
            #expect(all.map(\.text) == (1...5).map { "message \($0)" })
            let page = try await bobAPI.messages(in: chat.id, after: all[1].seq, limit: 2)
            #expect(page.map(\.text) == ["message 3", "message 4"])
            #expect(try await bobAPI.messages(in: chat.id, before: all[2].seq).map(\.text) == ["message 1", "message 2"])

            try await bobAPI.markRead(chat.id, upTo: all[2].seq)
            let read = try await bobAPI.conversations().first
            #expect(read?.unreadCount == 2)
            #expect(read?.readUpTo == all[2].seq)
            try await bobAPI.markRead(chat.id, upTo: all[0].seq)
            #expect(try await bobAPI.conversations().first?.readUpTo == all[2].seq, "a read marker never moves back")
        }
    }

    @Test("people: the members with their current names; one whose token named no one is there with an empty name (clients say Someone)", arguments: TestTransport.allCases)
    func people(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice", name: "Alice Johnson"), server.token("bob", name: "Bob"))
            let bobAPI = Self.api(port: server.port, token: bob, transport)
            _ = try await bobAPI.conversations()  // Bob signs in once
            let aliceAPI = Self.api(port: server.port, token: alice, transport)
            let direct = try await aliceAPI.createConversation(kind: .direct, members: ["bob"])
            #expect(direct.people == [WirePerson(id: "alice", name: "Alice Johnson", avatarURL: nil), WirePerson(id: "bob", name: "Bob", avatarURL: nil)])
            _ = try await server.token("dana", name: "")  // signed in with a token that gives no name
            let group = try await aliceAPI.createConversation(kind: .group, title: "Launch", members: ["bob", "dana"])
            #expect(group.members == ["alice", "bob", "dana"])
            #expect(group.people.map(\.id) == ["alice", "bob", "dana"], "Dana is a user, with no name to show yet")
            #expect(group.people.last?.name == "")

            let renamed = try await server.token("bob", name: "Bob Smith")
            _ = try await Self.api(port: server.port, token: renamed, transport).conversations()
            let list = try await aliceAPI.conversations()
            #expect(Set(list.map(\.conversation.id)) == [direct.id, group.id], "listed with no messages yet")
            for summary in list {
                #expect(summary.conversation.people.first { $0.id == "bob" }?.name == "Bob Smith", "the name from his latest token")
            }
            let dana = try await server.token("dana", name: "Dana")
            _ = try await Self.api(port: server.port, token: dana, transport).conversations()
            #expect(try await aliceAPI.conversations().first { $0.conversation.id == group.id }?.conversation.people.map(\.id)
                    == ["alice", "bob", "dana"], "once she signs in with one, she has a name")
        }
    }

    @Test("posting without a stream: the message as stored; the same id again is that message, not a second one", arguments: TestTransport.allCases)
    func posting(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let aliceAPI = Self.api(port: server.port, token: alice, transport), bobAPI = Self.api(port: server.port, token: bob, transport)
            let chat = try await aliceAPI.createConversation(kind: .direct, members: ["bob"])
            let reply = try await bobAPI.postMessage(in: chat.id, text: "On my way", id: "quick-reply-1")
            #expect(reply.id == "quick-reply-1" && reply.senderId == "bob" && reply.conversationId == chat.id && reply.seq > 0)
            #expect(try await bobAPI.postMessage(in: chat.id, text: "On my way", id: "quick-reply-1") == reply,
                    "a repeated post (its answer lost) returns the first one")
            let picture = try await aliceAPI.postMessage(in: chat.id, text: nil, imageURL: "https://example.com/cat.jpg")
            #expect(picture.imageURL == "https://example.com/cat.jpg" && !picture.id.isEmpty && picture.seq > reply.seq)
            #expect(try await aliceAPI.messages(in: chat.id).map(\.id) == [reply.id, picture.id])
            let tooLong = await Self.refusal { try await bobAPI.postMessage(in: chat.id, text: String(repeating: "a", count: 4_001)) }
            #expect(tooLong?.status == 400 && tooLong?.code == "text_too_long")
        }
    }

    @Test("a notification's Reply whose id another member took first is posted under an id no one can guess; a repeat of one's own is stored once",
          arguments: TestTransport.allCases)
    func replyIDTaken(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let (alice, bob, mallory) = try await (server.token("alice"), server.token("bob"), server.token("mallory"))
            let aliceAPI = Self.api(port: server.port, token: alice, transport)
            let bobAPI = Self.api(port: server.port, token: bob, transport)
            let malloryAPI = Self.api(port: server.port, token: mallory, transport)
            let chat = try await aliceAPI.createConversation(kind: .group, title: "Plans", members: ["bob", "mallory"])
            let question = try await aliceAPI.postMessage(in: chat.id, text: "Lunch?")
            let answer = NotificationAnswer(
                action: NotificationAnswer.replyAction,
                userInfo: ["conversationId": chat.id, "seq": String(question.seq)], text: "yes")
            guard case .reply(_, let id, let text) = answer else { throw TestFailure("no reply: \(answer)") }
            try await malloryAPI.postMessage(in: chat.id, text: "squatted", id: id)
            let taken = await Self.refusal { try await bobAPI.postMessage(in: chat.id, text: text, id: id) }
            #expect(taken?.code == "id_conflict")

            let reply = try await bobAPI.postReply(in: chat.id, text: text, id: id)
            #expect(reply.senderId == "bob" && reply.text == "yes")
            #expect(reply.id.hasPrefix(id + "-") && reply.id.count == id.count + 17)
            let own = try await bobAPI.postReply(in: chat.id, text: "ok", id: "reply-\(question.seq)-0000000000000001")
            #expect(try await bobAPI.postReply(in: chat.id, text: "ok", id: own.id) == own, "a retry is stored once")
        }
    }

    @Test("refusals arrive as HeraldAPIError with the status and the stable code", arguments: TestTransport.allCases)
    func refusals(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let (alice, charlie) = try await (server.token("alice"), server.token("charlie"))
            let chat = try await Self.api(port: server.port, token: alice, transport).createConversation(kind: .group, title: "Private", members: [])
            let outsider = Self.api(port: server.port, token: charlie, transport)
            let forbidden = await Self.refusal { _ = try await outsider.messages(in: chat.id) }
            #expect(forbidden?.status == 403 && forbidden?.code == "not_a_member")
            let unknown = await Self.refusal { try await outsider.markRead("no-such-chat", upTo: 1) }
            #expect(unknown?.status == 404 && unknown?.code == "conversation_not_found")
            let badToken = await Self.refusal { _ = try await Self.api(port: server.port, token: "not-a-token", transport).conversations() }
            #expect(badToken?.status == 401 && badToken?.code == "invalid_token")
        }
    }

    /// The ``HeraldAPIError`` that `body` throws, or nil (recorded as an issue) if it throws nothing or another error.
    static func refusal(_ body: () async throws -> Void) async -> HeraldAPIError? {
        do {
            try await body()
            Issue.record("the server accepted it")
        } catch let error as HeraldAPIError {
            return error
        } catch {
            Issue.record("not a HeraldAPIError: \(error)")
        }
        return nil
    }
}

@Suite("HeraldClient and groups whose members change", .timeLimit(.minutes(3)))
struct ClientMembershipTests {
    @Test("HeraldAPI adds, renames, makes owners, removes and deletes; the added person's client shows the banner, the others' a quiet skip", arguments: TestTransport.allCases)
    func membersThroughTheClient(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let (alice, bob, carol) = try await (server.token("alice", name: "Alice"), server.token("bob"), server.token("carol", name: "Carol"))
            let aliceAPI = APIClientTests.api(port: server.port, token: alice, transport)
            let bobAPI = APIClientTests.api(port: server.port, token: bob, transport)
            let group = try await aliceAPI.createConversation(kind: .group, title: "Team Chat", members: ["bob"])
            #expect(group.owners == ["alice"])

            // Carol's and Bob's devices, live.
            let records = [ClientRecord(), ClientRecord()]
            var devices: [@Sendable () async throws -> Void] = []
            for (record, token, user) in [(records[0], carol, "carol"), (records[1], bob, "bob")] {
                let client = ClientTests.client(port: server.port, token: token, transport)
                let live = LiveNotifications(client: client, userID: user)
                devices += [record.watching(client), record.watching(live), { await live.run() }]
            }
            try await withBackground(devices) {
                for record in records { try await record.wait { $0.liveCount >= 1 } }

                _ = try await aliceAPI.postMessage(in: group.id, text: "before Carol", id: "before")
                let added = try await aliceAPI.addMembers(["carol"], to: group.id, history: .none)
                #expect(added.members == ["alice", "bob", "carol"])
                try await records[0].wait { $0.shows.count == 1 && !$0.messages.isEmpty }
                let event = try #require(records[0].messages.first)
                #expect(event.event?.kind == .memberAdded && event.event?.members.map(\.id) == ["carol"])
                try await records[1].wait { $0.skips[event.id] != nil }
                #expect(records[1].skips[event.id] == .quiet, "Bob gets a quiet line, no banner")
                #expect(records[0].messages.allSatisfy { $0.id != "before" }, "no history for Carol")
                #expect(try await APIClientTests.api(port: server.port, token: carol, transport).messages(in: group.id).map(\.kind) == ["event"])

                #expect(try await aliceAPI.rename(group.id, to: "Team Room").title == "Team Room")
                #expect(try await aliceAPI.setOwner("bob", in: group.id).owners == ["alice", "bob"])
                #expect(try await bobAPI.setOwner("alice", false, in: group.id).owners == ["bob"])
                let shown = try await bobAPI.conversation(group.id)
                #expect(shown.conversation.title == "Team Room" && shown.conversation.members == ["alice", "bob", "carol"])
                try await bobAPI.removeMember("carol", from: group.id)
                await #expect(throws: HeraldAPIError.self) { _ = try await APIClientTests.api(port: server.port, token: carol, transport).conversation(group.id) }
                do {
                    _ = try await aliceAPI.rename(group.id, to: "Mine")
                    Issue.record("Alice is no longer an owner")
                } catch let error as HeraldAPIError {
                    #expect(error.code == "not_an_owner" && error.status == 403)
                }
                try await aliceAPI.removeMember("alice", from: group.id)  // leaves
                try await bobAPI.deleteConversation(group.id)
                await #expect(throws: HeraldAPIError.self) { _ = try await bobAPI.conversation(group.id) }
                try await records[1].wait { $0.messages.contains { $0.event?.kind == .deleted } }
            }
        }
    }

    @Test("an entry this client cannot read (a newer server's event type, or kind) is not shown")
    func unknownEventsAreSkipped() throws {
        func frame(kind: String, event: String) -> String {
            #"{"type":"message","message":{"kind":"\#(kind)","id":"e1","seq":3,"conversationId":"c","senderId":"bob","text":null,"imageURL":null,"createdAt":"2026-01-01T00:00:00Z","event":\#(event)},"conversation":{"id":"c","kind":"group","title":"T"},"sender":{"id":"bob","name":"Bob","avatarURL":null}}"#
        }
        #expect(throws: UnknownFrameType.self) { try ServerFrame(parsing: frame(kind: "event", event: #"{"type":"poll_closed","members":[],"title":null}"#)) }
        #expect(throws: UnknownFrameType.self) { try ServerFrame(parsing: frame(kind: "sticker", event: "null")) }
        guard case .message(let incoming) = try ServerFrame(parsing: frame(kind: "event", event: #"{"type":"member_left","members":[],"title":null}"#)) else {
            Issue.record("a known event is a message frame")
            return
        }
        #expect(incoming.message.event?.kind == .memberLeft)
    }
}
