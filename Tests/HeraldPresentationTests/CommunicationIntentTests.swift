import Foundation
import HeraldPresentation
import Testing

/// What the `INSendMessageIntent` of a message push names: a group's recipients make iOS show it as a group's (more
/// than one, and the group's name), its text loses the sender's name the plain alert starts with; a direct chat's
/// names no group.
@Suite("A push's communication intent")
struct CommunicationIntentTests {
    static func payload(_ json: String) throws -> [AnyHashable: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [AnyHashable: Any])
    }

    static let me = CommunicationParticipant(id: "alice", displayName: "Alice Johnson")

    @Test("a group's intent: this member and the group's other members as recipients, the group's name, the text without 'Bob: '")
    func group() throws {
        let push = try Self.payload(#"""
            {"aps": {"alert": {"title": "New message in Team", "body": "Bob: hi all"}, "category": "HERALD_MESSAGE"},
             "type": "message", "conversationId": "c1", "messageId": "m1", "seq": "7", "senderId": "bob",
             "senderName": "Bob", "isGroup": "true", "conversationTitle": "Team", "mentioned": "true"}
            """#)
        let parts = try #require(CommunicationNotification(userInfo: push))
        let intent = parts.intent(body: "Bob: hi all", me: Self.me)
        #expect(intent.recipients.count > 1, "iOS takes one recipient for a direct chat")
        #expect(intent.recipients == [
            CommunicationParticipant(id: "alice", displayName: "Alice Johnson", isMe: true),
            CommunicationParticipant(id: "group:c1", displayName: "Team"),
        ])
        #expect(intent.groupName == "Team")
        #expect(intent.text == "hi all")
        #expect(intent.sender == CommunicationParticipant(id: "bob", displayName: "Bob"))
        #expect(intent.conversationID == "c1" && intent.mentionsMe)
        #expect(intent.recipientCount >= 2)

        // Without knowing who is signed in, still two recipients: this member stands unnamed.
        let unknown = parts.intent(body: "Bob: hi all", me: nil)
        #expect(unknown.recipients.count == 2)
        #expect(unknown.recipients.first == CommunicationParticipant(id: "", displayName: nil, isMe: true))
    }

    @Test("a group's text keeps what does not start with the sender's name, and never becomes empty")
    func groupText() throws {
        let parts = try #require(CommunicationNotification(userInfo: try Self.payload(#"""
            {"type": "message", "conversationId": "c1", "senderId": "bob", "senderName": "Bob", "isGroup": "true",
             "conversationTitle": "Team"}
            """#)))
        #expect(parts.intent(body: "Bob: 📷 Image", me: Self.me).text == "📷 Image")
        #expect(parts.intent(body: "Bobby: hi", me: Self.me).text == "Bobby: hi", "another sender's name is not this one's")
        #expect(parts.intent(body: "Bob:", me: Self.me).text == "Bob:")
        #expect(parts.intent(body: "Bob: ", me: Self.me).text == "Bob: ", "nothing would be left")
        #expect(parts.intent(body: "New message", me: Self.me).text == "New message", "a withheld push's words")
    }

    @Test("a direct chat's intent: this member alone as recipient (none when unknown), no group name, the body as it is")
    func direct() throws {
        let parts = try #require(CommunicationNotification(userInfo: try Self.payload(#"""
            {"aps": {"alert": {"title": "New message from Bob", "body": "Bob: this is how I start"}},
             "type": "message", "conversationId": "c2", "senderId": "bob", "senderName": "Bob", "isGroup": "false",
             "conversationTitle": "ignored"}
            """#)))
        let intent = parts.intent(body: "Bob: this is how I start", me: Self.me)
        #expect(intent.groupName == nil)
        #expect(intent.recipients == [CommunicationParticipant(id: "alice", displayName: "Alice Johnson", isMe: true)])
        #expect(intent.text == "Bob: this is how I start", "a direct chat's body is the message itself")
        #expect(parts.intent(body: "hi", me: nil).recipients.isEmpty)
        #expect(intent.recipientCount == 1 && parts.intent(body: "hi", me: nil).recipientCount == 1)
        #expect(!intent.mentionsMe)
    }
}
