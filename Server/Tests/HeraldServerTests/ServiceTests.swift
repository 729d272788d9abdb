import Foundation
import HeraldCore
@testable import HeraldRecords
import HeraldServer
import HeraldTestSupport
import Testing

/// The app's backend's routes (`/v1/service/…`): who may call them, and what erasing a user does, on each store.
@Suite("The app's backend: service keys and erasure", .timeLimit(.minutes(3)))
struct ServiceTests {
    static let key = "service-key-0123456789-abcdefghijklmnopqrstuvwxyz"
    static let otherKey = "another-service-key-0123456789-abcdefghijklmnop"

    @Test("a service key is needed, from no web page; a user's token, a wrong key or a short one is refused; either of two keys works, a key taken out does not")
    func keys() async throws {
        // No key set: every service call is refused, saying why.
        try await TestServer.run { server in
            let refused = try await server.request("GET", "/v1/service/users/alice", token: Self.key)
            #expect(refused.status == 401 && refused.errorCode == "invalid_service_key")
            #expect(refused.text.contains("HERALD_SERVICE_KEY"))
        }
        #expect(throws: ConfigurationError.self) {
            _ = try ServerConfiguration.fromEnvironment(["HERALD_SERVICE_KEY": "short"])
        }
        let configured = try ServerConfiguration.fromEnvironment(["HERALD_SERVICE_KEY": " \(Self.key) , \(Self.otherKey) "])
        #expect(configured.serviceKeys.ids == [ServiceKeys.id(of: Self.key), ServiceKeys.id(of: Self.otherKey)])

        try await TestServer.run(configure: { $0.serviceKeys = configured.serviceKeys }) { server in
            let alice = try await server.token("alice")
            for key in [Self.key, Self.otherKey] {
                let put = try await server.request("PUT", "/v1/service/users/bob", token: key, body: #"{"name": "Bob"}"#)
                #expect(put.status == 200, "\(put.text)")
            }
            let missing = try await server.request("GET", "/v1/service/users/bob")
            #expect(missing.status == 401 && missing.errorCode == "missing_token")
            let userToken = try await server.request("GET", "/v1/service/users/bob", token: alice)
            #expect(userToken.status == 401 && userToken.errorCode == "invalid_service_key")
            #expect(userToken.text.contains("user's token"))
            let wrong = try await server.request("GET", "/v1/service/users/bob", token: Self.key + "x")
            #expect(wrong.status == 401 && wrong.errorCode == "invalid_service_key")
            // Never from a browser, even with the right key.
            let browser = try await server.request(
                "GET", "/v1/service/users/bob", token: Self.key, headers: [.origin: "https://app.example.com"])
            #expect(browser.status == 403 && browser.errorCode == "browser_origin")
            // A service key is no user's token either.
            let asUser = try await server.request("GET", "/v1/conversations", token: Self.key)
            #expect(asUser.status == 401 && asUser.errorCode == "invalid_token")
            // Bodies are bounded as everywhere.
            let huge = #"{"name": "\#(String(repeating: "x", count: 70_000))"}"#
            let oversized = try await server.request("PUT", "/v1/service/users/bob", token: Self.key, body: huge)
            #expect(oversized.status == 413 && oversized.errorCode == "too_large")
        }
        // Rotated: the old key taken out of HERALD_SERVICE_KEY is refused.
        let rotated = try ServerConfiguration.fromEnvironment(["HERALD_SERVICE_KEY": Self.otherKey])
        try await TestServer.run(configure: { $0.serviceKeys = rotated.serviceKeys }) { server in
            let revoked = try await server.request("PUT", "/v1/service/users/bob", token: Self.key, body: #"{"name": "Bob"}"#)
            #expect(revoked.status == 401 && revoked.errorCode == "invalid_service_key")
            let current = try await server.request("PUT", "/v1/service/users/bob", token: Self.otherKey, body: #"{"name": "Bob"}"#)
            #expect(current.status == 200)
        }
    }

    @Test("conversations with the app's own ids: a retry finds it, another kind or a pair's other chat conflicts; changes and posts by the backend carry no sender",
          arguments: StoreKind.available)
    func conversations(kind: StoreKind) async throws {
        try await Self.withServer(kind) { server in
            func call(_ method: String, _ path: String, _ body: String? = nil) async throws -> HTTPResult {
                try await server.request(method, "/v1/service" + path, token: Self.key, body: body)
            }
            for id in ["alice", "bob", "carol"] {
                #expect(try await call("PUT", "/users/\(id)", #"{"name": "\#(id.capitalized)"}"#).status == 200)
            }
            let unknown = try await call("POST", "/conversations", #"{"id": "c-1", "kind": "group", "members": ["alice", "zed"]}"#)
            #expect(unknown.status == 400 && unknown.errorCode == "unknown_user")
            #expect(unknown.errorMessage.contains("PUT /v1/service/users/{id}"), "the backend is told what to do: \(unknown.text)")
            // A picture under its name in answers, or its older one; both, differing, is refused.
            let pictured = try await call("PUT", "/users/carol", #"{"name": "Carol", "avatarURL": "https://img.example/c.png"}"#)
            #expect(pictured.status == 200 && pictured.field("avatarURL") == "https://img.example/c.png", "\(pictured.text)")
            let older = try await call("PUT", "/users/carol", #"{"name": "Carol", "picture": "https://img.example/c2.png"}"#)
            #expect(older.status == 200 && older.field("avatarURL") == "https://img.example/c2.png", "\(older.text)")
            let both = try await call("PUT", "/users/carol", #"{"name": "Carol", "avatarURL": "https://a.example/1", "picture": "https://a.example/2"}"#)
            #expect(both.status == 400 && both.errorCode == "invalid_request" && both.text.contains("avatarURL"), "\(both.text)")
            let body = #"{"id": "order-42", "kind": "group", "title": "Order 42", "members": ["alice", "bob"], "owners": ["alice"]}"#
            let created = try await call("POST", "/conversations", body)
            #expect(created.status == 201, "\(created.text)")
            #expect(try created.decode(ConversationJSON.self) == ConversationJSON(
                id: "order-42", kind: "group", title: "Order 42", members: ["alice", "bob"], owners: ["alice"]))
            #expect(try await call("POST", "/conversations", body).status == 200, "a retry finds the same conversation")
            let otherKind = try await call("POST", "/conversations", #"{"id": "order-42", "kind": "direct", "members": ["alice", "bob"]}"#)
            #expect(otherKind.status == 409 && otherKind.errorCode == "conversation_exists")
            let direct = try await call("POST", "/conversations", #"{"id": "dm-ab", "kind": "direct", "members": ["alice", "bob"]}"#)
            #expect(direct.status == 201)
            let pairAgain = try await call("POST", "/conversations", #"{"id": "dm-ab-2", "kind": "direct", "members": ["bob", "alice"]}"#)
            #expect(pairAgain.status == 409 && pairAgain.errorCode == "conversation_exists" && pairAgain.text.contains("dm-ab"))

            let added = try await call("POST", "/conversations/order-42/members", #"{"members": ["carol"]}"#)
            #expect(try added.decode(ConversationJSON.self).members == ["alice", "bob", "carol"])
            let renamed = try await call("PATCH", "/conversations/order-42", #"{"title": "Order 42 (shipped)"}"#)
            #expect(try renamed.decode(ConversationJSON.self).title == "Order 42 (shipped)")
            #expect(try await call("PUT", "/conversations/order-42/owners/bob").status == 200)
            // The last owner stays one; removing an owner by the backend leaves the other.
            #expect(try await call("DELETE", "/conversations/order-42/members/alice").status == 204)
            let lastOwner = try await call("DELETE", "/conversations/order-42/owners/bob")
            #expect(lastOwner.status == 409 && lastOwner.errorCode == "last_owner")
            let directChange = try await call("POST", "/conversations/dm-ab/members", #"{"members": ["carol"]}"#)
            #expect(directChange.status == 409 && directChange.errorCode == "direct_conversation")

            let asBob = try await call("POST", "/conversations/order-42/messages", #"{"id": "m1", "senderId": "bob", "text": "Shipped?"}"#)
            #expect(asBob.status == 201)
            // The same post under the field's older name: the same message.
            let again = try await call("POST", "/conversations/order-42/messages", #"{"id": "m1", "sender": "bob", "text": "Shipped?"}"#)
            let (first, repeated) = (try asBob.decode(MessageJSON.self), try again.decode(MessageJSON.self))
            #expect(again.status == 200 && repeated == first)
            let notMember = try await call("POST", "/conversations/order-42/messages", #"{"senderId": "alice", "text": "hi"}"#)
            #expect(notMember.status == 403 && notMember.errorCode == "not_a_member")
            let twoSenders = try await call("POST", "/conversations/order-42/messages", #"{"senderId": "bob", "sender": "carol", "text": "hi"}"#)
            #expect(twoSenders.status == 400 && twoSenders.errorCode == "invalid_request")
            let nobody = try await call("POST", "/conversations/order-42/messages", #"{"senderId": "zed", "text": "hi"}"#)
            #expect(nobody.status == 400 && nobody.errorCode == "unknown_user" && nobody.errorMessage.contains("PUT /v1/service/users"))
            let system = try await call("POST", "/conversations/order-42/messages", #"{"text": "Your order has shipped", "silent": true}"#)
            #expect(system.status == 201)
            #expect(system.text.contains(#""silent":true"#))
            #expect(try system.decode(MessageJSON.self).senderId == "")
            let nowhere = try await call("POST", "/conversations/nowhere/messages", #"{"text": "hi"}"#)
            #expect(nowhere.status == 404 && nowhere.errorCode == "conversation_not_found")

            let history = try await call("GET", "/conversations/order-42/messages")
            let entries = try history.decode(MessageListJSON.self).messages
            #expect(entries.map { $0.event?.type ?? $0.text ?? "" } == [
                "member_added", "renamed", "owner_added", "member_removed", "Shipped?", "Your order has shipped"])
            #expect(entries.filter { $0.kind == "event" }.allSatisfy { $0.senderId == "" }, "the backend's changes have no sender")
            // Bob, a member, reads the same history with his token.
            let bob = try await server.environment.tokens.token(userID: "bob", name: "Bob")
            let bobs = try await server.request("GET", "/v1/conversations/order-42/messages", token: bob)
            #expect(try bobs.decode(MessageListJSON.self).messages == entries)
        }
    }

    @Test("erasing a user: they leave every chat, their devices and tokens go, their messages stay from a deleted user, the id never comes back",
          arguments: StoreKind.available)
    func erase(kind: StoreKind) async throws {
        try await Self.withServer(kind) { server in
            let store = server.environment.store
            let alice = try await server.token("alice")
            let bob = try await server.token("bob")
            let group = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob"])
            let direct = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            try await server.post(bob, to: group, id: "hello", text: "Hello from Bob")
            try await server.post(bob, to: direct, id: "psst", text: "Just us")
            let registered = try await server.request(
                "PUT", "/v1/devices/bobs-phone", token: bob, body: #"{"platform": "apns", "token": "\#(String(repeating: "b", count: 64))"}"#)
            #expect(registered.status == 200)
            #expect(try await server.request("PUT", "/v1/conversations/\(group)/mute", token: bob).status == 204)

            let erased = try await server.request("DELETE", "/v1/service/users/bob", token: Self.key)
            #expect(erased.status == 204, "\(erased.text)")
            #expect(try await store.devices(of: "bob").isEmpty)
            let refused = try await server.request("GET", "/v1/conversations", token: bob)
            #expect(refused.status == 401 && refused.errorCode == "user_erased")
            let stream = try await server.request("GET", "/v1/stream?token=\(bob)")
            #expect(stream.status == 401)
            let back = try await server.request("PUT", "/v1/service/users/bob", token: Self.key, body: #"{"name": "Bob again"}"#)
            #expect(back.status == 409 && back.errorCode == "user_erased")
            #expect(try await server.request("GET", "/v1/service/users/bob", token: Self.key).status == 404)
            // Again: nothing left to do, and no error.
            #expect(try await server.request("DELETE", "/v1/service/users/bob", token: Self.key).status == 204)
            #expect(try await server.request("DELETE", "/v1/service/users/nobody", token: Self.key).errorCode == "user_not_found")

            for conversation in [group, direct] {
                let history = try await server.request("GET", "/v1/conversations/\(conversation)/messages", token: alice)
                let entries = try history.decode(MessageListJSON.self).messages
                #expect(entries.first?.senderId == "bob" && entries.first?.text != nil, "Bob's messages stay")
                #expect(entries.last?.event?.type == "member_left" && entries.last?.senderId == "bob")
                let shown = try await server.request("GET", "/v1/conversations/\(conversation)", token: alice)
                let summary = try JSONSerialization.jsonObject(with: shown.body) as? [String: Any]
                #expect(summary?["members"] as? [String] == ["alice"], "\(shown.text)")
                #expect((summary?["people"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["alice"])
            }
            // A device catching up sees his messages and his leaving from a deleted user.
            let socket = try await server.stream(alice, after: 0)
            var reader = FrameReader(socket)
            let (frames, _) = try await reader.untilReady()
            socket.close()
            let his = frames.filter { $0.message?.senderId == "bob" }
            #expect(his.count == 4 && his.allSatisfy { $0.sender?.name == "Deleted user" && $0.sender?.avatarURL == nil })
            // Alice can no longer add him, or find him.
            let add = try await server.request("POST", "/v1/conversations/\(group)/members", token: alice, body: #"{"members": ["bob"]}"#)
            #expect(add.status == 400 && add.errorCode == "unknown_user")
            #expect(try await store.findUsers(UserSearch(userID: "alice", query: "", scope: .everyone, limit: 10)).isEmpty)
        }
    }

    /// A server on `kind`'s store (PostgreSQL: a fresh database) with ``key`` as its service key.
    static func withServer(
        _ kind: StoreKind, configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
        _ body: (TestServer) async throws -> Void
    ) async throws {
        let keys = try ServiceKeys([key])
        try await kind.withServerDatabase { database in
            try await TestServer.run(configure: { configuration in
                configuration.serviceKeys = keys
                configuration.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
                configure(&configuration)
            }, body)
        }
    }
}
