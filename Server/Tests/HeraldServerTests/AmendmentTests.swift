import Foundation
import HeraldCore
@testable import HeraldPostgres
import HeraldPresentation
import HeraldProtocol
@testable import HeraldRecords
import HeraldTestSupport
import Logging
import PostgresNIO
@testable import HeraldServer
import Testing

/// Editing and deleting messages (docs/behaviour.md §6), end to end: real streams, both stores, fake push services.
@Suite("Edit and delete", .timeLimit(.minutes(3)))
struct AmendmentTests {
    /// The app backend's key, for its system messages.
    static let serviceKey = "service-key-0123456789-abcdefghijklmnopqrstuvwxyz"

    @Test("an edit reaches every member once, in order, live and on catch-up; a delete leaves a tombstone, and its text is in no file and no table",
          arguments: StoreKind.available)
    func editAndDelete(kind: StoreKind) async throws {
        let folder = try makeTemporaryFolder("herald-amend")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("herald.sqlite").path
        try await kind.withServerDatabase { database in
            try await TestServer.run(configure: {
                $0.databasePath = path
                $0.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
            }) { server in
                let (alice, bob, carol) = try await (
                    server.token("alice", name: "Alice"), server.token("bob", name: "Bob"), server.token("carol", name: "Carol"))
                let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob", "carol"])
                let bobs = try await server.stream(bob)
                var live = FrameReader(bobs)
                _ = try await live.untilReady()

                let secret = try await server.post(alice, to: team, id: "m1", text: "the password is hunter2")
                let next = try await server.post(alice, to: team, id: "m2", text: "and the plans")
                let edited = try await server.request(
                    "PATCH", "/v1/conversations/\(team)/messages/m1", token: alice, body: #"{"text": "the password is swordfish"}"#)
                #expect(edited.status == 200, "\(edited.text)")
                let now = try edited.decode(MessageJSON.self)
                #expect(now.text == "the password is swordfish" && now.edited == true && now.seq == secret.seq)
                #expect(try await unread(of: bob, in: team, on: server) == 2)
                let deleted = try await server.request("DELETE", "/v1/conversations/\(team)/messages/m1", token: alice)
                #expect(deleted.status == 200, "\(deleted.text)")
                let tombstone = try deleted.decode(MessageJSON.self)
                #expect(tombstone.deleted == true && tombstone.text == nil && tombstone.seq == secret.seq)

                // Live: the two messages, then the edit (with its text) and the deletion, each once, in order.
                let frames = try await live.drain(bobs).compactMap(\.message)
                #expect(frames.map(\.id).prefix(2) == ["m1", "m2"])
                let amendments = frames.dropFirst(2)
                #expect(amendments.map { $0.event?.type } == ["message_edited", "message_deleted"])
                #expect(amendments.allSatisfy { $0.event?.messageId == "m1" && $0.kind == "event" })
                #expect(amendments.first?.text == "the password is swordfish")
                #expect(amendments.map(\.seq) == amendments.map(\.seq).sorted() && (amendments.first?.seq ?? 0) > next.seq)
                bobs.close()

                // Catch-up: the message as it is now (a tombstone), and both amendments; the edit's text is gone.
                let carols = try await server.stream(carol, after: 0)
                var caught = FrameReader(carols)
                let (messages, _) = try await caught.untilReady()
                let entries = messages.compactMap(\.message).filter { $0.conversationId == team && $0.kind != "event" || $0.event?.messageId != nil }
                #expect(entries.map(\.id).prefix(2) == ["m1", "m2"])
                #expect(entries.first?.deleted == true && entries.first?.text == nil)
                #expect(entries.dropFirst(2).map { $0.event?.type } == ["message_edited", "message_deleted"])
                #expect(entries.dropFirst(2).allSatisfy { $0.text == nil }, "an edit of a deleted message keeps no text")
                carols.close()

                // History shows the tombstone in its place; the unread count drops it.
                let history = try await server.request("GET", "/v1/conversations/\(team)/messages", token: bob)
                let listed = try history.decode(MessageListJSON.self).messages.filter { $0.kind != "event" }
                #expect(listed.map(\.id) == ["m1", "m2"] && listed.first?.deleted == true && listed.first?.text == nil)
                #expect(try await unread(of: bob, in: team, on: server) == 1)

                // Gone, not hidden: in no byte of the database's files, in no table a query reads.
                for word in ["hunter2", "swordfish"] {
                    switch kind {
                    case .sqlite:
                        for file in [path, path + "-wal"] {
                            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
                            #expect(bytes.range(of: Data(word.utf8)) == nil, "\(word) in \(file)")
                        }
                    case .postgres:
                        let store = try #require(server.environment.store as? PostgresStore)
                        #expect(try await Self.rows(containing: word, in: store) == 0, "\(word) in a table")
                    }
                }
                // What stays is still there: the other message's text.
                if kind == .sqlite {
                    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                    #expect(bytes.range(of: Data("and the plans".utf8)) != nil || FileManager.default.fileExists(atPath: path + "-wal"))
                }
            }
        }
    }

    @Test("an edit of a message from before a member came reaches them in no frame, catch-up or history: it carries the text",
          arguments: StoreKind.available)
    func editsBeforeJoining(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            try await TestServer.run(configure: { $0.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil }) { server in
                let (alice, carol) = try await (server.token("alice", name: "Alice"), server.token("carol", name: "Carol"))
                _ = try await server.token("bob", name: "Bob")
                let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob"])
                try await server.post(alice, to: team, id: "old", text: "the old plan")
                let added = try await server.request(
                    "POST", "/v1/conversations/\(team)/members", token: alice, body: #"{"members": ["carol"], "history": "none"}"#)
                #expect(added.status == 200, "\(added.text)")
                let carols = try await server.stream(carol)
                var live = FrameReader(carols)
                _ = try await live.untilReady()
                #expect(try await server.request(
                    "PATCH", "/v1/conversations/\(team)/messages/old", token: alice, body: #"{"text": "the secret plan"}"#).status == 200)
                try await server.post(alice, to: team, id: "new", text: "after carol came")
                let frames = try await live.drain(carols)
                #expect(frames.compactMap(\.message?.id).contains("new"))
                #expect(!frames.contains { $0.message?.event?.type == "message_edited" }, "no edit of a message she cannot see")
                carols.close()

                let again = try await server.stream(carol, after: 0)
                var caught = FrameReader(again)
                let (messages, _) = try await caught.untilReady()
                #expect(!messages.contains { $0.message?.event?.type == "message_edited" || $0.message?.text == "the secret plan" })
                again.close()
                let history = try await server.request("GET", "/v1/conversations/\(team)/messages", token: carol)
                #expect(!history.text.contains("secret") && history.text.contains("after carol came"))
                // Bob, who was there, has the edit in his history.
                let bobs = try await server.request(
                    "GET", "/v1/conversations/\(team)/messages", token: try await server.token("bob", name: "Bob"))
                #expect(bobs.text.contains("the secret plan"))
            }
        }
    }

    @Test("refused, with nothing changed: another's message, not an owner, the backend's system message, past the window, a deleted message, too long, too often, no such message",
          arguments: StoreKind.available)
    func refusals(kind: StoreKind) async throws {
        let clock = WallClock()
        let keys = try ServiceKeys([Self.serviceKey])
        try await kind.withServerDatabase { database in
            try await TestServer.run(configure: {
                $0.clock = clock
                $0.limits.editLimit = 2
                $0.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
                $0.serviceKeys = keys
            }) { server in
                let (alice, bob, carol) = try await (
                    server.token("alice", name: "Alice"), server.token("bob", name: "Bob"), server.token("carol", name: "Carol"))
                let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob"])
                let direct = try await server.createConversation(alice, kind: "direct", members: ["bob"])
                try await server.post(alice, to: team, id: "a1", text: "alice's")
                try await server.post(bob, to: team, id: "b1", text: "bob's")
                try await server.post(bob, to: direct, id: "d1", text: "bob's, direct")
                let notice = try await server.request(
                    "POST", "/v1/service/conversations/\(team)/messages", token: Self.serviceKey, body: #"{"id": "s1", "text": "Your order has shipped"}"#)
                #expect(notice.status == 201)
                func edit(_ token: String, _ conversation: String, _ id: String, _ body: String) async throws -> HTTPResult {
                    try await server.request("PATCH", "/v1/conversations/\(conversation)/messages/\(id)", token: token, body: body)
                }
                func delete(_ token: String, _ conversation: String, _ id: String) async throws -> HTTPResult {
                    try await server.request("DELETE", "/v1/conversations/\(conversation)/messages/\(id)", token: token)
                }
                func texts() async throws -> [String?] {
                    let page = try await server.request("GET", "/v1/conversations/\(team)/messages", token: alice)
                    return try page.decode(MessageListJSON.self).messages.filter { $0.kind != "event" }.map(\.text)
                }
                let before = try await texts()

                #expect(try await edit(bob, team, "a1", #"{"text": "mine now"}"#).errorCode == "not_the_sender")
                #expect(try await delete(bob, team, "a1").errorCode == "not_the_sender", "bob owns nothing here")
                #expect(try await delete(alice, direct, "d1").errorCode == "not_the_sender", "a direct chat has no owner")
                #expect(try await delete(alice, team, "s1").errorCode == "not_the_sender", "the backend's word is not an owner's to take back")
                #expect(try await edit(alice, team, "s1", #"{"text": "x"}"#).errorCode == "not_the_sender")
                #expect(try await edit(alice, team, "b1", #"{"text": "owners do not edit"}"#).errorCode == "not_the_sender")
                #expect(try await edit(carol, team, "a1", #"{"text": "x"}"#).status == 403, "not a member")
                #expect(try await edit(alice, team, "nope", #"{"text": "x"}"#).errorCode == "message_not_found")
                #expect(try await edit(alice, team, "a1", #"{"text": "   "}"#).errorCode == "invalid_request")
                #expect(try await edit(alice, team, "a1", #"{"text": "\#(String(repeating: "x", count: 4_001))"}"#).errorCode == "text_too_long")
                #expect(try await edit(alice, team, "a1", #"{"text": "\u0000"}"#).errorCode == "invalid_request")
                #expect(try await edit(alice, team, "a1", #"{"nothing": 1}"#).status == 400)
                let events = try await server.request("GET", "/v1/conversations/\(team)/messages", token: alice)
                    .decode(MessageListJSON.self).messages.filter { $0.kind == "event" }
                if let event = events.first {
                    #expect(try await edit(alice, team, event.id, #"{"text": "x"}"#).errorCode == "message_not_found", "an event is no message")
                }
                #expect(try await texts() == before, "nothing changed")

                // Twice is the limit here; the third is refused.
                #expect(try await edit(alice, team, "a1", #"{"text": "one"}"#).status == 200)
                #expect(try await edit(alice, team, "a1", #"{"text": "two"}"#).status == 200)
                #expect(try await edit(alice, team, "a1", #"{"text": "three"}"#).errorCode == "edit_limit")
                // Past the window (24 hours by default), edits are refused; deletion is not.
                clock.advance(by: 24 * 3600 + 1)
                #expect(try await edit(bob, team, "b1", #"{"text": "late"}"#).errorCode == "edit_window_passed")
                // An owner deletes anyone's message; a deleted one changes no more.
                #expect(try await delete(alice, team, "b1").status == 200)
                #expect(try await delete(bob, team, "b1").errorCode == "message_deleted")
                #expect(try await edit(bob, team, "b1", #"{"text": "back"}"#).errorCode == "message_deleted")
                #expect(try await texts() == ["two", nil, "Your order has shipped"])
            }
        }
    }

    @Test("follow-ups go only to the devices that were pushed the message: an edit replaces its words silently, a delete removes it; a waiting push is rewritten or dropped",
          arguments: StoreKind.available)
    func pushesFollow(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in try await pushesFollow(postgresURL: database["HERALD_POSTGRES_URL"] ?? nil) }
    }

    private func pushesFollow(postgresURL: String?) async throws {
        let clock = WallClock()
        // Pushes wait half an hour on the server's clock, which moves only when the test says; follow-ups go at once.
        try await PushHarness.run(configure: {
            $0.clock = clock
            $0.push.burstWindow = .zero
            $0.push.delay = .seconds(1800)
            $0.postgresURL = postgresURL
        }) { push in
            let server = push.server
            let (alice, bob, carol, dave) = try await (
                server.token("alice", name: "Alice"), server.token("bob", name: "Bob"), server.token("carol", name: "Carol"),
                server.token("dave", name: "Dave"))
            let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob", "carol", "dave"])
            let (phone, carolsPhone, davesPhone) = (PushHarness.apnsToken(0xB0B), PushHarness.apnsToken(0xCA401), PushHarness.apnsToken(0xDA7E))
            try await push.register(bob, device: "phone", platform: "apns", pushToken: phone)
            try await push.register(bob, device: "pixel", platform: "fcm", pushToken: "fcm-amend-pixel")
            try await push.register(bob, device: "rn", platform: "expo", pushToken: "ExponentPushToken[amend-rn]")
            try await push.register(carol, device: "phone", platform: "apns", pushToken: carolsPhone)
            // Carol hears nothing of this group: she is pushed nothing, so nothing follows.
            #expect(try await server.request("PUT", "/v1/conversations/\(team)/mute", token: carol).status == 204)
            func expo() -> [[String: Any]] {
                push.fake.requests(to: "/--/api/v2/push/send").compactMap { $0.jsonArray?.first }
                    .filter { $0["to"] as? String == "ExponentPushToken[amend-rn]" }
            }
            func fcm() -> [[String: Any]] {
                push.fake.requests(to: "/v1/projects").compactMap { $0.json?["message"] as? [String: Any] }
                    .filter { $0["token"] as? String == "fcm-amend-pixel" }
            }

            let sent = try await server.post(alice, to: team, id: "m1", text: "the password is hunter2")
            try await push.eventually("m1's pushes waiting") { try await server.environment.store.pushJobCount() == 3 }
            clock.advance(by: 1800)
            server.environment.push.wakeSenders()
            _ = try await push.fake.wait("the alert on bob's three devices") { _ in
                push.apns(phone).count == 1 && fcm().count == 1 && expo().count == 1
            }
            // Dave's phone comes after the push: it was never shown the message.
            try await push.register(dave, device: "phone", platform: "apns", pushToken: davesPhone)
            let identifier = "herald-\(sent.seq)"

            #expect(try await server.request(
                "PATCH", "/v1/conversations/\(team)/messages/m1", token: alice, body: #"{"text": "call me"}"#).status == 200)
            _ = try await push.fake.wait("the edit's follow-ups") { _ in
                push.apns(phone).count == 2 && fcm().count == 2 && expo().count == 2
            }
            let edit = try #require(push.apns(phone).last)
            let aps = try #require(edit.json?["aps"] as? [String: Any])
            #expect(edit.headers["apns-collapse-id"] == identifier && edit.headers["apns-push-type"] == "alert")
            #expect(aps["sound"] == nil && aps["interruption-level"] as? String == "passive", "an edit is not news")
            #expect((aps["alert"] as? [String: Any])?["body"] as? String == "Alice: call me")
            #expect(edit.json?["type"] as? String == "message_edited" && edit.json?["messageId"] as? String == "m1")
            // What the app reads of it: an edit, which the alert's collapse id already applied; still a message from
            // Alice for a communication notification.
            let editInfo: [AnyHashable: Any] = try #require(edit.json)
            #expect(RemoteNotification(userInfo: editInfo) == .edited(conversationID: team, messageID: "m1", notificationID: identifier))
            #expect(CommunicationNotification(userInfo: editInfo)?.senderName == "Alice")
            let android = try #require(fcm().last)
            #expect(((android["android"] as? [String: Any])?["notification"] as? [String: Any])?["tag"] as? String == identifier)
            #expect((android["data"] as? [String: String])?["type"] == "message_edited")
            // Expo has no collapse id: the edit is data, with its words, for the app to replace its notification.
            let rnEdit = try #require(expo().last)
            #expect(rnEdit["title"] == nil && rnEdit["sound"] == nil && rnEdit["_contentAvailable"] as? Bool == true)
            let rnData = try #require(rnEdit["data"] as? [String: String])
            #expect(rnData["type"] == "message_edited" && rnData["body"] == "Alice: call me" && rnData["notificationId"] == identifier)

            #expect(try await server.request("DELETE", "/v1/conversations/\(team)/messages/m1", token: alice).status == 200)
            _ = try await push.fake.wait("the delete's follow-ups") { _ in
                push.apns(phone).count == 3 && fcm().count == 3 && expo().count == 3
            }
            let removal = try #require(push.apns(phone).last)
            // A visible, passive replacement under the message's collapse id (a background push is throttled, and never
            // delivered after a force-quit), with content-available for an app that runs.
            #expect(removal.headers["apns-push-type"] == "alert" && removal.headers["apns-priority"] == "5")
            #expect(removal.headers["apns-collapse-id"] == identifier)
            #expect((removal.json?["aps"] as? [String: Any])?["content-available"] as? Int == 1)
            #expect((removal.json?["aps"] as? [String: Any])?["interruption-level"] as? String == "passive")
            #expect((removal.json?["aps"] as? [String: Any])?["sound"] == nil)
            #expect(removal.json?["type"] as? String == "message_deleted" && removal.json?["notificationId"] as? String == identifier)
            #expect(removal.json?["aps"].map { "\($0)" }?.contains("hunter2") == false && removal.text.contains("call me") == false)
            let removalInfo: [AnyHashable: Any] = try #require(removal.json)
            #expect(RemoteNotification(userInfo: removalInfo) == .withdraw(conversationID: team, notificationID: identifier, badge: 0),
                    "the app removes it and sets the badge: nothing is unread any more")
            let androidRemoval = try #require(fcm().last)
            #expect(androidRemoval["notification"] == nil && androidRemoval["android"].map { "\($0)" }?.contains("notification") != true)
            #expect((androidRemoval["data"] as? [String: String])?["notificationId"] == identifier)
            let rnRemoval = try #require(expo().last)
            #expect((rnRemoval["data"] as? [String: String])?["type"] == "message_deleted" && rnRemoval["body"] == nil)

            // A push waiting out its delay: rewritten by an edit, dropped by a delete. (Without the Expo device, whose
            // receipts wait in the outbox too.) First the outbox empties: a send a loaded machine made fail waits for
            // its retry on the server's clock, which moves here, 30 s a look, until nothing is left.
            let removed = try await server.request("DELETE", "/v1/devices/rn", token: bob)
            #expect(removed.status == 204, "\(removed.status) \(removed.text)")
            try await push.eventually("the outbox empty before the next messages") {
                clock.advance(by: 30)
                server.environment.push.wakeSenders()
                return try await server.environment.store.pushJobCount() == 0
            }
            try await server.post(alice, to: team, id: "m2", text: "first words")
            try await server.post(alice, to: team, id: "m3", text: "never sent")
            try await push.eventually("both waiting, for bob's two devices and dave's phone") {
                try await server.environment.store.pushJobCount() == 6
            }
            #expect(try await server.request(
                "PATCH", "/v1/conversations/\(team)/messages/m2", token: alice, body: #"{"text": "second words"}"#).status == 200)
            #expect(try await server.request("DELETE", "/v1/conversations/\(team)/messages/m3", token: alice).status == 200)
            #expect(try await server.environment.store.pushJobCount() == 3, "m3's pushes are gone")
            clock.advance(by: 1800)
            server.environment.push.wakeSenders()
            _ = try await push.fake.wait("m2's push, with its new words") { _ in push.apns(phone).contains { $0.messageID == "m2" } }
            let rewritten = try #require(push.apns(phone).last { $0.messageID == "m2" })
            #expect(((rewritten.json?["aps"] as? [String: Any])?["alert"] as? [String: Any])?["body"] as? String == "Alice: second words")
            #expect(push.apns(phone).allSatisfy { $0.messageID != "m3" } && !push.apns(phone).contains { $0.text.contains("never sent") })

            // Only devices that were pushed the message heard of it again.
            #expect(push.apns(davesPhone).allSatisfy { $0.messageID != "m1" }, "dave's phone was never shown m1")
            #expect(push.apns(carolsPhone).isEmpty, "carol muted the group")
        }
    }

    @Test("an edit's words reach no device of a member who no longer reads the message (removed, then added back without the history)",
          arguments: StoreKind.available)
    func editSkipsFormerReader(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            try await PushHarness.run(configure: {
                $0.push.delay = .zero
                $0.push.burstWindow = .zero
                $0.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
            }) { push in
                let server = push.server
                let (alice, bob, carol) = try await (
                    server.token("alice", name: "Alice"), server.token("bob", name: "Bob"), server.token("carol", name: "Carol"))
                let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob", "carol"])
                let (bobsPhone, carolsPhone) = (PushHarness.apnsToken(0xB0B1), PushHarness.apnsToken(0xCA41))
                try await push.register(bob, device: "phone", platform: "apns", pushToken: bobsPhone)
                try await push.register(carol, device: "phone", platform: "apns", pushToken: carolsPhone)
                try await server.post(alice, to: team, id: "m1", text: "before you left")
                _ = try await push.fake.wait("m1 on both phones") { _ in
                    push.apns(bobsPhone).count == 1 && push.apns(carolsPhone).count == 1
                }
                #expect(try await server.request("DELETE", "/v1/conversations/\(team)/members/bob", token: alice).status == 204)
                #expect(try await server.request(
                    "POST", "/v1/conversations/\(team)/members", token: alice,
                    body: #"{"members": ["bob"], "history": "none"}"#).status == 200)
                // His phone is told of his removal (a clear) and of his return (an alert): the notification is his again.
                _ = try await push.fake.wait("bob's phone told of his return") { _ in push.apns(bobsPhone).count == 3 }

                #expect(try await server.request(
                    "PATCH", "/v1/conversations/\(team)/messages/m1", token: alice, body: #"{"text": "secret plans"}"#).status == 200)
                // Carol's follow-up and any of Bob's are decided together; once the outbox is empty, all were sent.
                _ = try await push.fake.wait("carol's follow-up") { _ in push.apns(carolsPhone).count == 2 }
                try await push.eventually("the outbox empty") { try await server.environment.store.pushJobCount() == 0 }
                #expect(!push.apns(bobsPhone).contains { $0.json?["type"] as? String == "message_edited" },
                        "bob's history starts after m1: he is not told its new words")
                #expect(!push.apns(bobsPhone).contains { $0.text.contains("secret plans") })
            }
        }
    }

    @Test("another member's deletion does not remove a burst's notification of someone else's message: it goes back to the newest message left",
          arguments: StoreKind.available)
    func deletionKeepsBurst(kind: StoreKind) async throws {
        try await kind.withServerDatabase { database in
            // Pushes go at once and the server's clock stands still: every message is inside one burst.
            try await PushHarness.run(configure: {
                $0.clock = WallClock()
                $0.push.delay = .zero
                $0.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
            }) { push in
                let server = push.server
                let (alice, bob, mallory) = try await (
                    server.token("alice", name: "Alice"), server.token("bob", name: "Bob"), server.token("mallory", name: "Mallory"))
                let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob", "mallory"])
                let phone = PushHarness.apnsToken(0xB0B2)
                try await push.register(bob, device: "phone", platform: "apns", pushToken: phone)
                func body(_ request: RecordedRequest) -> String? {
                    ((request.json?["aps"] as? [String: Any])?["alert"] as? [String: Any])?["body"] as? String
                }
                let opener = try await server.post(mallory, to: team, id: "p1", text: "hello all")
                _ = try await push.fake.wait("the burst's alert") { _ in push.apns(phone).count == 1 }
                try await server.post(alice, to: team, id: "a1", text: "meet at noon")
                _ = try await push.fake.wait("alice's message in the burst") { _ in push.apns(phone).count == 2 }
                let deleted = try await server.post(mallory, to: team, id: "p2", text: "ignore this")
                _ = try await push.fake.wait("mallory's second") { _ in push.apns(phone).count == 3 }
                let identifier = "herald-\(opener.seq)"
                #expect(push.apns(phone).allSatisfy { $0.headers["apns-collapse-id"] == identifier })

                #expect(try await server.request("DELETE", "/v1/conversations/\(team)/messages/p2", token: mallory).status == 200)
                _ = try await push.fake.wait("the deletion's follow-up") { _ in push.apns(phone).count == 4 }
                let back = try #require(push.apns(phone).last)
                #expect(back.json?["type"] as? String == "message_edited" && back.json?["messageId"] as? String == "a1",
                        "the notification stays, showing alice's message")
                #expect(back.headers["apns-collapse-id"] == identifier && body(back) == "Alice: meet at noon")
                // Queued as the deleted message's follow-up (its seq), so it never overtakes that message's push.
                #expect(back.json?["seq"] as? String == String(deleted.seq))
                #expect((back.json?["aps"] as? [String: Any])?["sound"] == nil && !back.text.contains("ignore this"))

                // Alice's own deletion goes back to the message before hers; the last one left removes it.
                #expect(try await server.request("DELETE", "/v1/conversations/\(team)/messages/a1", token: alice).status == 200)
                _ = try await push.fake.wait("alice's deletion's follow-up") { _ in push.apns(phone).count == 5 }
                #expect(body(try #require(push.apns(phone).last)) == "Mallory: hello all")
                #expect(try await server.request("DELETE", "/v1/conversations/\(team)/messages/p1", token: mallory).status == 200)
                _ = try await push.fake.wait("the last deletion's follow-up") { _ in push.apns(phone).count == 6 }
                let removal = try #require(push.apns(phone).last)
                #expect(removal.json?["type"] as? String == "message_deleted" && removal.json?["notificationId"] as? String == identifier)
            }
        }
    }

    /// The member's unread count of `conversation`, as their list shows it.
    private func unread(of token: String, in conversation: String, on server: TestServer) async throws -> Int {
        let result = try await server.request("GET", "/v1/conversations/\(conversation)", token: token)
        return ((try? JSONSerialization.jsonObject(with: result.body)) as? [String: Any])?["unreadCount"] as? Int ?? -1
    }

    /// Rows of PostgreSQL's tables that hold `word` where Herald keeps text: messages (and edits), the push and
    /// webhook outboxes.
    static func rows(containing word: String, in store: PostgresStore) async throws -> Int64 {
        let pattern = "%\(word)%"
        let rows = try await store.database.query(
            """
            SELECT (SELECT count(*) FROM messages WHERE text LIKE \(pattern) OR event LIKE \(pattern))
                 + (SELECT count(*) FROM push_jobs WHERE content LIKE \(pattern))
                 + (SELECT count(*) FROM webhook_jobs WHERE data LIKE \(pattern))
            """, logger: Logger(label: "amendment-test"))
        return try rows.first.map { try $0.decode(Int64.self) } ?? -1
    }
}
