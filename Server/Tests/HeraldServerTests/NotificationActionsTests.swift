import Foundation
import HeraldClient
import HeraldPresentation
import Testing

/// A notification's Reply and Mark as read, through the API paths HeraldUI takes for them: the answer is read from
/// the push exactly as APNs delivered it, then carried out with the member's own `HeraldAPI`.
@Suite("Answering a notification", .timeLimit(.minutes(2)))
struct NotificationActionsTests {
    @Test("Mark as read clears the user's other device, not this one; a Reply retried is stored once, another reply is another message")
    func replyAndMarkRead() async throws {
        try await PushHarness.run { push in
            let server = push.server
            let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob", name: "Bob"))
            let chat = try await server.createConversation(alice, kind: "direct", members: ["bob"])
            let (phone, tablet) = (PushHarness.apnsToken(11), PushHarness.apnsToken(12))
            try await push.register(bob, device: "bob-phone", platform: "apns", pushToken: phone)
            try await push.register(bob, device: "bob-tablet", platform: "apns", pushToken: tablet)
            try await server.post(alice, to: chat, id: "m-1", text: "Lunch at one?")
            let pushed = try #require(try await push.fake.wait("the alerts") { _ in
                !push.apns(phone).isEmpty && !push.apns(tablet).isEmpty }.last { $0.path.hasSuffix(phone) })
            // The answers, read from the push as the app gets it (a Reply, its retry, another reply, a Mark as read).
            let (reply, second, markRead, pushedSeq) = Self.answers(to: try #require(pushed.json))

            var configuration = ClientConfiguration.local(port: server.port, token: bob, .nio)
            configuration.deviceID = "bob-phone"
            let api = HeraldAPI(configuration: configuration)

            // Mark as read first: the marker moves to the message; the tablet's notification is cleared, the phone's
            // is not (it is the one that was answered).
            guard case .markRead(let readConversation, let seq) = markRead else { throw TestFailure("a mark as read: \(markRead)") }
            #expect(readConversation == chat && String(seq) == pushedSeq)
            try await api.markRead(readConversation, upTo: seq)
            let cleared = try await push.fake.wait("the tablet's clear") { _ in
                push.apns(tablet).contains { $0.headers["apns-push-type"] == "background" } }
            #expect(!cleared.contains { $0.path.hasSuffix(phone) && $0.headers["apns-push-type"] == "background" })
            let summary = try await api.conversations().first { $0.conversation.id == chat }
            #expect(summary?.unreadCount == 0 && summary?.readUpTo == seq)

            // Reply, twice (the system retried it), then a second, different reply.
            guard case .reply(let conversationID, let messageID, let text) = reply else {
                Issue.record("a reply: \(reply)")
                return
            }
            #expect(conversationID == chat && text == "See you there")
            try await api.postMessage(in: conversationID, text: text, id: messageID)
            try await api.postMessage(in: conversationID, text: text, id: messageID)
            guard case .reply(_, let otherID, let other) = second else { throw TestFailure("a second reply: \(second)") }
            #expect(otherID != messageID)
            try await api.postMessage(in: chat, text: other, id: otherID)
            let texts = try await api.messages(in: chat).compactMap(\.text)
            #expect(texts == ["Lunch at one?", "See you there", "Or two?"])
        }
    }

    /// A Reply, another reply and a Mark as read of the notification whose data is `userInfo`, and its `seq`.
    static func answers(to userInfo: [String: Any]) -> (NotificationAnswer, NotificationAnswer, NotificationAnswer, String?) {
        (NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: userInfo, text: "  See you there \n"),
         NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: userInfo, text: "Or two?"),
         NotificationAnswer(action: NotificationAnswer.markReadAction, userInfo: userInfo),
         userInfo["seq"] as? String)
    }

    @Test("answers are read from the notification's data only when it is Herald's and whole")
    func reading() {
        let info: [AnyHashable: Any] = ["conversationId": "c1", "messageId": "m1", "seq": "7", "type": "message"]
        #expect(NotificationAnswer(action: NotificationAnswer.tapAction, userInfo: info) == .open(conversationID: "c1"))
        #expect(NotificationAnswer(action: NotificationAnswer.markReadAction, userInfo: info) == .markRead(conversationID: "c1", seq: 7))
        #expect(NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: info, text: " \n ") == .none, "an empty reply")
        #expect(NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: info, text: "ok")
            == NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: info, text: "ok"), "the same id every time")
        // The same ids the JavaScript package's notificationAnswer makes (its test holds the same two).
        #expect(NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: info, text: "  See you there \n")
            == .reply(conversationID: "c1", messageID: "reply-7-fe510fa78766fff9", text: "See you there"))
        #expect(NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: info, text: "Café ☕ 👍🏽")
            == .reply(conversationID: "c1", messageID: "reply-7-b572801fe1316dda", text: "Café ☕ 👍🏽"))
        #expect(NotificationAnswer(action: NotificationAnswer.markReadAction, userInfo: ["conversationId": "c1", "seq": 7]) == .none,
                "a seq that is not a string of digits")
        #expect(NotificationAnswer(action: NotificationAnswer.markReadAction, userInfo: ["conversationId": "c1", "seq": "-3"]) == .none)
        #expect(NotificationAnswer(action: "com.apple.UNNotificationDismissActionIdentifier", userInfo: info) == .none)
        #expect(NotificationAnswer(action: NotificationAnswer.tapAction, userInfo: ["conversationId": 5]) == .none)
        guard case .reply(_, _, let long) = NotificationAnswer(
            action: NotificationAnswer.replyAction, userInfo: info, text: String(repeating: "a", count: 5_000))
        else { Issue.record("a long reply"); return }
        #expect(long.count == NotificationAnswer.maxReplyCharacters)
    }
}
