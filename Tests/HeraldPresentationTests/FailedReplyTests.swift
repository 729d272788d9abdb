import Foundation
import HeraldPresentation
import Testing

/// A Reply that did not reach the server: its text is kept in a notice in the same conversation, answerable again
/// with the same message id logic; and an answer's work is bounded in time.
@Suite("A Reply that was not sent")
struct FailedReplyTests {
    /// The data of the notification answered: a push's.
    static var answered: [AnyHashable: Any] {
        [
            "type": "message", "conversationId": "c1", "messageId": "m1", "seq": "7", "senderId": "bob",
            "aps": ["alert": ["title": "New message from Bob", "body": "lunch?"]],
        ]
    }

    @Test("the notice keeps the text, says it was not sent, sits in the conversation's thread in Herald's category")
    func keepsText() throws {
        let answer = NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: Self.answered, text: "  yes, at noon \n")
        guard case .reply(_, let messageID, let text) = answer else {
            Issue.record("a reply: \(answer)")
            return
        }
        let notice = try #require(FailedReply(answer, answered: Self.answered))
        #expect(notice.body == "yes, at noon" && notice.body == text)
        #expect(notice.title == FailedReply.standardTitle && notice.title == "Not sent")
        #expect(notice.thread == "c1")
        #expect(notice.category == NotificationAnswer.category)
        #expect(notice.identifier == "herald-\(messageID)", "the same text failing again replaces it")
        #expect(notice.userInfo == ["type": "reply_not_sent", "conversationId": "c1", "seq": "7", "messageId": "m1", "senderId": "bob"])
        #expect(FailedReply(answer, answered: Self.answered, title: "Nicht gesendet")?.title == "Nicht gesendet")
    }

    @Test("a Reply from the notice is the same message when the text is the same (stored once), another when it is not; Mark as read works from it")
    func answerableAgain() throws {
        let first = NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: Self.answered, text: "yes")
        let notice = try #require(FailedReply(first, answered: Self.answered))
        let again = NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: notice.userInfo, text: "yes")
        #expect(again == first)
        let other = NotificationAnswer(action: NotificationAnswer.replyAction, userInfo: notice.userInfo, text: "no")
        guard case .reply("c1", let otherID, "no") = other, case .reply(_, let firstID, _) = first else {
            Issue.record("replies: \(other), \(first)")
            return
        }
        #expect(otherID != firstID)
        #expect(NotificationAnswer(action: NotificationAnswer.markReadAction, userInfo: notice.userInfo) == .markRead(conversationID: "c1", seq: 7))
        #expect(NotificationAnswer(action: NotificationAnswer.tapAction, userInfo: notice.userInfo) == .open(conversationID: "c1"))
        #expect(HeraldNotificationKind(userInfo: notice.userInfo) == .replyNotSent)
    }

    @Test("only a Reply has a notice")
    func onlyReplies() {
        #expect(FailedReply(.markRead(conversationID: "c1", seq: 7), answered: Self.answered) == nil)
        #expect(FailedReply(.open(conversationID: "c1"), answered: Self.answered) == nil)
        #expect(FailedReply(.none, answered: Self.answered) == nil)
    }

    @Test("an answer's requests are bounded: 10 s each, 20 s in all, below the API's 30 s default")
    func bounded() {
        #expect(NotificationAnswer.requestTimeout == .seconds(10))
        #expect(NotificationAnswer.timeLimit == .seconds(20))
        #expect(NotificationAnswer.requestTimeout < .seconds(30) && NotificationAnswer.timeLimit < .seconds(30))
    }

    @Test("work within its deadline gives its result; work past it is cancelled and fails with DeadlinePassed; its own error is its own")
    func deadline() async throws {
        #expect(try await withDeadline(.seconds(10)) { 42 } == 42)
        let started = ContinuousClock.now
        await #expect(throws: DeadlinePassed(limit: .milliseconds(50))) {
            try await withDeadline(.milliseconds(50)) { try await Task.sleep(for: .seconds(30)) }
        }
        #expect(ContinuousClock.now - started < .seconds(10), "the slow work was cancelled, not waited for")
        struct Refused: Error, Equatable {}
        await #expect(throws: Refused()) {
            try await withDeadline(.seconds(10)) { throw Refused() }
        }
    }
}
