import Foundation
@testable import HeraldRecords
import HeraldProtocol
import HeraldServer
import Testing

@Suite("The HTTP API", .timeLimit(.minutes(3)))
struct APITests {
    @Test("creating a conversation: 201 with the caller always a member; the same direct chat again is 200, not a copy")
    func createConversation() async throws {
        try await TestServer.run { server in
            let (alice, bob, _) = try await (server.token("alice"), server.token("bob"), server.token("charlie"))
            let group = try await server.request(
                "POST", "/v1/conversations", token: alice, body: #"{"kind": "group", "title": "Team Chat", "members": ["bob", "charlie"]}"#)
            #expect(group.status == 201)
            let created = try group.decode(ConversationJSON.self)
            #expect(created.kind == "group")
            #expect(created.title == "Team Chat")
            #expect(created.members == ["alice", "bob", "charlie"])

            let direct = try await server.request(
                "POST", "/v1/conversations", token: alice, body: #"{"kind": "direct", "members": ["bob"]}"#)
            #expect(direct.status == 201)
            let again = try await server.request(
                "POST", "/v1/conversations", token: bob, body: #"{"kind": "direct", "members": ["alice"]}"#)
            #expect(again.status == 200)
            #expect(try again.decode(ConversationJSON.self) == direct.decode(ConversationJSON.self))
            #expect(try direct.decode(ConversationJSON.self).title == nil)
        }
    }

    @Test("the list: the caller's conversations, newest first, each with its last message and the caller's unread count")
    func list() async throws {
        try await TestServer.run { server in
            let (alice, bob, charlie) = try await (server.token("alice"), server.token("bob"), server.token("charlie"))
            let withBob = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let team = try await server.createConversation(alice, kind: "group", title: "Team Chat", members: ["bob", "charlie"])
            _ = try await server.createConversation(bob, kind: "direct", members: ["charlie"])
            try await server.post(bob, to: withBob, text: "one")
            try await server.post(alice, to: withBob, text: "mine")
            try await server.post(bob, to: withBob, text: "two")
            try await server.post(bob, to: withBob, text: "three")
            let last = try await server.post(charlie, to: team, text: "standup?")

            let listed = try await server.request("GET", "/v1/conversations", token: alice).decode(ListJSON.self)
            #expect(listed.conversations.map(\.id) == [team, withBob], "newest activity first, only alice's")
            #expect(listed.conversations[0].lastMessage == last)
            #expect(listed.conversations[0].unreadCount == 1)
            #expect(listed.conversations[1].lastMessage?.text == "three")
            #expect(listed.conversations[1].unreadCount == 2, "her own message is not unread, and posting it read what came before")
            #expect(listed.conversations.allSatisfy { !$0.muted })
        }
    }

    @Test("read markers lower the unread count and never move back; muting shows in the list")
    func readAndMute() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let first = try await server.post(bob, to: chat, text: "one")
            try await server.post(bob, to: chat, text: "two")
            #expect(try await server.request("POST", "/v1/conversations/\(chat)/read", token: alice, body: #"{"upTo": \#(first.seq)}"#).status == 204)
            var listed = try await server.request("GET", "/v1/conversations", token: alice).decode(ListJSON.self)
            #expect(listed.conversations.first?.unreadCount == 1)
            _ = try await server.request("POST", "/v1/conversations/\(chat)/read", token: alice, body: #"{"upTo": 0}"#)
            listed = try await server.request("GET", "/v1/conversations", token: alice).decode(ListJSON.self)
            #expect(listed.conversations.first?.unreadCount == 1, "a marker never moves back")

            #expect(try await server.request("PUT", "/v1/conversations/\(chat)/mute", token: alice).status == 204)
            listed = try await server.request("GET", "/v1/conversations", token: alice).decode(ListJSON.self)
            #expect(listed.conversations.first?.muted == true)
            let bobsView = try await server.request("GET", "/v1/conversations", token: bob).decode(ListJSON.self)
            #expect(bobsView.conversations.first?.muted == false, "muting is per member")
            #expect(try await server.request("DELETE", "/v1/conversations/\(chat)/mute", token: alice).status == 204)
            listed = try await server.request("GET", "/v1/conversations", token: alice).decode(ListJSON.self)
            #expect(listed.conversations.first?.muted == false)
        }
    }

    @Test("history: the last 50 by default, or pages with after, before and limit, always oldest first")
    func history() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "group", title: "Log", members: [])
            var seqs: [Int64] = []
            for index in 0..<60 {
                seqs.append(try await server.post(alice, to: chat, text: "n\(index)").seq)
            }
            func page(_ query: String) async throws -> [Int64] {
                try await server.request("GET", "/v1/conversations/\(chat)/messages\(query)", token: alice)
                    .decode(MessageListJSON.self).messages.map(\.seq)
            }
            #expect(try await page("") == Array(seqs.suffix(50)))
            #expect(try await page("?limit=5") == Array(seqs.suffix(5)))
            #expect(try await page("?after=\(seqs[9])&limit=3") == Array(seqs[10..<13]))
            #expect(try await page("?before=\(seqs[9])&limit=3") == Array(seqs[6..<9]))
            #expect(try await page("?after=\(seqs[9])&before=\(seqs[12])") == Array(seqs[10..<12]))
            #expect(try await page("?after=\(seqs[59])").isEmpty)
        }
    }

    @Test("devices: a push token is registered (and replaced), listed, and removed on sign-out; another user's is not theirs to remove")
    func devices() async throws {
        try await TestServer.run { server in
            let (alice, bob) = try await (server.token("alice"), server.token("bob"))
            let first = String(repeating: "ab", count: 32), second = String(repeating: "cd", count: 32)
            let put = try await server.request(
                "PUT", "/v1/devices/phone-1", token: alice, body: #"{"platform": "apns", "token": "\#(first)"}"#)
            #expect(put.status == 200)
            _ = try await server.request(
                "PUT", "/v1/devices/phone-1", token: alice, body: #"{"platform": "apns", "token": "\#(second)"}"#)
            let stored = try await server.environment.store.devices(of: "alice")
            #expect(stored == [DeviceRegistration(id: "phone-1", userID: "alice", platform: .apns, token: second)])
            #expect(try await server.request(
                "PUT", "/v1/devices/pixel", token: alice, body: #"{"platform": "fcm", "token": "fcm:APA91b-x_y.z"}"#).status == 200)
            #expect(try await server.request(
                "PUT", "/v1/devices/rn", token: alice, body: #"{"platform": "expo", "token": "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]"}"#).status == 200)

            let listed = try await server.request("GET", "/v1/devices", token: alice)
            #expect(listed.status == 200)
            let listedDevices = try #require((try JSONSerialization.jsonObject(with: listed.body) as? [String: Any])?["devices"] as? [[String: Any]])
            // Each with when it was last seen (its registration) and without push keys; no permission reported.
            #expect(listedDevices.allSatisfy { $0["encrypted"] as? Bool == false })
            let devices = listedDevices.map { $0.compactMapValues { $0 as? String } }
            #expect(devices.allSatisfy { device in device["lastSeen"].flatMap { WireJSON.date($0) } != nil && device["permission"] == nil })
            #expect(devices.map { $0.filter { $0.key != "lastSeen" } } == [
                ["id": "phone-1", "platform": "apns", "token": second],
                ["id": "pixel", "platform": "fcm", "token": "fcm:APA91b-x_y.z"],
                ["id": "rn", "platform": "expo", "token": "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]"],
            ])
            #expect(try await server.request("GET", "/v1/devices", token: bob).text == #"{"devices":[]}"#)
            #expect(try await server.request("GET", "/v1/devices").status == 401)

            let wrongPlatform = try await server.request(
                "PUT", "/v1/devices/phone-2", token: alice, body: #"{"platform": "pager", "token": "x"}"#)
            #expect(wrongPlatform.errorCode == "invalid_request")
            #expect(try await server.request("DELETE", "/v1/devices/phone-1", token: bob).status == 404)
            #expect(try await server.request("DELETE", "/v1/devices/phone-1", token: alice).status == 204)
            #expect(try await server.environment.store.devices(of: "alice").map(\.id) == ["pixel", "rn"])
            #expect(try await server.request("DELETE", "/v1/devices/phone-1", token: alice).errorCode == "not_found")
        }
    }

    @Test("push tokens are checked per platform: APNs hex, FCM bounded and plain, Expo's own form")
    func pushTokenShapes() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let refused: [(String, String)] = [
                ("apns", "abc123"), ("apns", String(repeating: "g", count: 64)), ("apns", String(repeating: "a", count: 65)),
                ("apns", String(repeating: "a", count: 202)), ("apns", ""),
                ("fcm", ""), ("fcm", "has space"), ("fcm", "slash/../x"), ("fcm", String(repeating: "a", count: 4_097)),
                ("fcm", "nul\\u0000"), ("fcm", "é"),
                ("expo", "abc"), ("expo", "ExponentPushToken[]"), ("expo", "ExponentPushToken[a b]"), ("expo", "ExponentPushToken[abc"),
                ("expo", "ExponentPushToken[abc]x"),
            ]
            for (platform, token) in refused {
                let result = try await server.request(
                    "PUT", "/v1/devices/d", token: alice, body: #"{"platform": "\#(platform)", "token": "\#(token)"}"#)
                #expect(result.status == 400, "\(platform) \(token.prefix(40))")
                #expect(result.errorCode == "invalid_request")
            }
            #expect(try await server.environment.store.devices(of: "alice").isEmpty)
            for (platform, token) in [("apns", String(repeating: "0F", count: 32)), ("apns", String(repeating: "a", count: 200)),
                                      ("expo", "ExpoPushToken[abc-DEF_123]"), ("fcm", String(repeating: "a", count: 4_096))] {
                let result = try await server.request(
                    "PUT", "/v1/devices/d-\(platform)-\(token.count)", token: alice, body: #"{"platform": "\#(platform)", "token": "\#(token)"}"#)
                #expect(result.status == 200, "\(platform) \(token.prefix(40))")
            }
        }
    }

    @Test("the stream's device parameter and a read's device must be usable ids")
    func deviceParameters() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let plain = try await server.request("GET", "/v1/stream?device=phone%00", token: alice)
            #expect(plain.status == 400)
            #expect(plain.errorCode == "invalid_request")
            #expect(try await server.request("GET", "/v1/stream?device=phone-1", token: alice).status == 426)
            let read = try await server.request(
                "POST", "/v1/conversations/\(chat)/read", token: alice, body: #"{"upTo": 1, "device": ""}"#)
            #expect(read.errorCode == "invalid_request")
        }
    }

    @Test("users are created and renamed from their tokens' claims, and streams show the current name")
    func usersFromClaims() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice", name: "Alice")
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let bob = try await server.token("bob", name: "Bob")
            let stream = try await server.stream(bob)
            var frames = FrameReader(stream)
            _ = try await frames.untilReady()
            let renamed = try await server.token("alice", name: "Alice Johnson")
            try await server.post(renamed, to: chat, text: "new name")
            #expect(try await frames.next().sender?.name == "Alice Johnson")
            stream.close()
            let resumed = try await server.stream(bob, after: 0)
            var resumedFrames = FrameReader(resumed)
            #expect(try await resumedFrames.untilReady().messages.first?.sender?.name == "Alice Johnson")
            resumed.close()
        }
    }

    @Test("the demo: alice, bob and charlie, a direct chat for each pair, Team Chat, a few messages; twice adds nothing")
    func demo() async throws {
        try await TestServer.run(configure: { $0.demo = true }) { server in
            let alice = try await server.token("alice", name: "Alice Johnson")
            let listed = try await server.request("GET", "/v1/conversations", token: alice).decode(ListJSON.self)
            #expect(listed.conversations.count == 3)
            #expect(listed.conversations.contains { $0.kind == "group" && $0.title == "Team Chat" && $0.members == ["alice", "bob", "charlie"] })
            #expect(listed.conversations.allSatisfy { $0.lastMessage != nil })
            let bob = try await server.token("bob", name: "Bob")
            #expect(try await server.request("GET", "/v1/conversations", token: bob).decode(ListJSON.self).conversations.count == 3)
            let before = try await server.environment.store.latestSeq()
            try await DemoData.seed(server.environment)
            #expect(try await server.environment.store.latestSeq() == before)
            #expect(try await server.request("GET", "/v1/conversations", token: alice).decode(ListJSON.self).conversations.count == 3)
        }
    }

    @Test("health, and the API description, are open to anyone")
    func open() async throws {
        try await TestServer.run { server in
            let health = try await server.request("GET", "/health")
            #expect(health.status == 200)
            #expect(health.text == #"{"database":"reachable","status":"ok","version":"\#(HeraldVersion.current)"}"#)
            let description = try await server.request("GET", "/openapi.yaml")
            #expect(description.status == 200)
            #expect(description.text.hasPrefix("openapi: 3.1"))
        }
    }
}

struct ListJSON: Decodable {
    struct Item: Decodable {
        var id: String
        var kind: String
        var title: String?
        var members: [String]
        var lastMessage: MessageJSON?
        var unreadCount: Int
        var muted: Bool
    }

    var conversations: [Item]
}
