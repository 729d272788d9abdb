import Foundation
import HeraldCore
import HeraldPresentation
import Testing

/// An encrypted push (issue 60): the ids in clear, the words in `encrypted`, opened with the device's key. Here the
/// decryption is a closure (on Linux there is no CryptoKit); the server's tests open a real one
/// (EncryptedPushClientTests).
@Suite("An encrypted push, opened")
struct EncryptedPushTests {
    /// What the closure is handed: the `encrypted` field, base64url-decoded.
    static let sealed = Data("opaque aes128gcm body".utf8)

    static let plaintext = #"""
        {"title": "New message from Ann", "body": "hello", "summary": "3 new messages", "badge": 2,
         "data": {"type": "message", "conversationId": "c1", "messageId": "m1", "seq": "12", "notificationId": "herald-1",
                  "senderId": "ann", "senderName": "Ann", "isGroup": "false", "mentioned": "true", "quiet": "true",
                  "category": "HERALD_MESSAGE", "count": "3"},
         "localization": {"title": {"key": "HERALD_MESSAGE_FROM", "arguments": ["Ann"]}}}
        """#

    /// An APNs payload as the spec has it: `aps` with the generic alert, the clear fields beside it.
    static func payload(type: String = "message", messageID: String? = "m1", encrypted: Any? = sealed.base64URLEncodedString())
        -> [AnyHashable: Any]
    {
        var userInfo: [AnyHashable: Any] = [
            "aps": ["alert": ["body": "New message"], "mutable-content": 1, "badge": 2, "thread-id": "c1",
                    "category": "HERALD_MESSAGE"] as [String: Any],
            "type": type, "conversationId": "c1", "seq": "12", "notificationId": "herald-1", "category": "HERALD_MESSAGE",
            "badge": 2, "withheld": "encrypted",
        ]
        if let messageID { userInfo["messageId"] = messageID }
        if let encrypted { userInfo["encrypted"] = encrypted }
        return userInfo
    }

    /// A decryption that opens only ``sealed``, into `plaintext`.
    static func opening(_ plaintext: String) -> (Data) throws -> Data {
        { body in
            guard body == sealed else { throw Refused() }
            return Data(plaintext.utf8)
        }
    }

    struct Refused: Error {}

    static func open(_ plaintext: String, _ userInfo: [AnyHashable: Any] = payload()) throws(EncryptedPush.Failure) -> EncryptedPush.Opened {
        guard let push = EncryptedPush(userInfo: userInfo) else { throw .malformed }
        return try push.open(userInfo: userInfo, decrypt: opening(plaintext))
    }

    @Test("read from the clear fields: type, conversation, message; the extension decrypts it and can still fetch it")
    func read() throws {
        let userInfo = Self.payload()
        let push = try #require(EncryptedPush(userInfo: userInfo))
        #expect(push.type == "message" && push.conversationID == "c1" && push.messageID == "m1")
        let withheld = try #require(WithheldPush(userInfo: userInfo), "a device that cannot decrypt fetches it")
        #expect(withheld.conversationID == "c1" && withheld.messageID == "m1")
        #expect(ServiceExtensionWork(userInfo: userInfo) == .message(withheld: withheld, encrypted: push))
    }

    @Test("opened: the title, body, summary as subtitle and badge; the data merged into the payload, withheld and encrypted gone, aps kept")
    func opened() throws {
        let opened = try Self.open(Self.plaintext)
        #expect(opened.title == "New message from Ann")
        #expect(opened.body == "hello")
        #expect(opened.subtitle == "3 new messages")
        #expect(opened.badge == 2)
        let userInfo = opened.userInfo
        #expect(userInfo["withheld"] == nil && userInfo["encrypted"] == nil)
        #expect(userInfo["senderName"] as? String == "Ann" && userInfo["count"] as? String == "3")
        #expect((userInfo["aps"] as? [String: Any])?["mutable-content"] as? Int == 1)
        let communication = try #require(CommunicationNotification(userInfo: userInfo), "read as a full push")
        #expect(communication.senderName == "Ann" && communication.mentioned)
        #expect(RemoteNotification(userInfo: userInfo) == .message(conversationID: "c1", messageID: "m1", seq: 12, senderID: "ann"))
    }

    @Test("an edit's follow-up opens the same way")
    func edit() throws {
        let plaintext = Self.plaintext.replacingOccurrences(of: #""type": "message""#, with: #""type": "message_edited""#)
        let opened = try Self.open(plaintext, Self.payload(type: "message_edited"))
        #expect(opened.body == "hello")
        let userInfo = Self.payload(type: "message_edited")
        #expect(ServiceExtensionWork(userInfo: userInfo)
            == .message(withheld: WithheldPush(userInfo: userInfo), encrypted: EncryptedPush(userInfo: userInfo)))
        #expect(WithheldPush(userInfo: userInfo) != nil)
    }

    @Test("about another message, conversation or type than the clear ids (byte for byte): refused as a replay", arguments: [
        (#""conversationId": "c1""#, #""conversationId": "c2""#),
        (#""messageId": "m1""#, #""messageId": "m2""#),
        (#""messageId": "m1", "#, ""),
        (#""type": "message""#, #""type": "message_deleted""#),
    ])
    func otherMessage(_ replace: (String, String)) throws {
        let plaintext = Self.plaintext.replacingOccurrences(of: replace.0, with: replace.1)
        #expect(plaintext != Self.plaintext)
        #expect(throws: EncryptedPush.Failure.otherMessage) { try Self.open(plaintext) }
    }

    @Test("ids equal only as Unicode (é composed in clear, decomposed inside) are another message's")
    func bytes() throws {
        var userInfo = Self.payload()
        userInfo["conversationId"] = "caf\u{E9}"
        let plaintext = Self.plaintext.replacingOccurrences(of: #""conversationId": "c1""#, with: "\"conversationId\": \"cafe\u{301}\"")
        #expect(throws: EncryptedPush.Failure.otherMessage) { try Self.open(plaintext, userInfo) }
    }

    @Test("not the expected JSON: refused", arguments: [
        "not json", "[1, 2]", #"{"body": "hi"}"#, #"{"body": "hi", "data": "x"}"#,
        #"{"title": 7, "body": "hi", "data": {"type": "message", "conversationId": "c1", "messageId": "m1"}}"#,
        #"{"body": "hi", "badge": "2", "data": {"type": "message", "conversationId": "c1", "messageId": "m1"}}"#,
        #"{"data": {"type": "message", "conversationId": "c1", "messageId": "m1"}}"#,
    ])
    func unexpected(_ plaintext: String) throws {
        #expect(throws: EncryptedPush.Failure.unexpectedPlaintext) { try Self.open(plaintext) }
    }

    @Test("not UTF-8: refused")
    func notUTF8() throws {
        let push = try #require(EncryptedPush(userInfo: Self.payload()))
        #expect(throws: EncryptedPush.Failure.unexpectedPlaintext) {
            try push.open(userInfo: Self.payload(), decrypt: { _ in Data([0x7B, 0xFF, 0xFE, 0x7D]) })
        }
    }

    @Test("a decryption that fails (another key, a lost one): undecryptable, and the same payload is a withheld push to fetch")
    func fallback() throws {
        let userInfo = Self.payload()
        let push = try #require(EncryptedPush(userInfo: userInfo))
        #expect(throws: EncryptedPush.Failure.undecryptable) {
            try push.open(userInfo: userInfo, decrypt: { _ in throw Refused() })
        }
        let withheld = try #require(WithheldPush(userInfo: userInfo))
        #expect(withheld.conversationID == "c1" && withheld.messageID == "m1")
        let filled = try #require(withheld.filled(
            title: "New message from Ann", body: "hello", data: ["conversationId": "c1", "messageId": "m1", "senderName": "Ann"],
            userInfo: userInfo))
        #expect(filled.userInfo["withheld"] == nil && filled.userInfo["encrypted"] == nil)
        #expect(filled.userInfo["senderName"] as? String == "Ann")
    }

    @Test("an encrypted field over the bound is refused before it is decoded or decrypted; a missing or malformed one too")
    func bounds() throws {
        var decrypted = 0
        for (field, failure) in [
            (String(repeating: "A", count: EncryptedPush.maximumLength + 4) as Any?, EncryptedPush.Failure.tooLong),
            (nil, .malformed), (42, .malformed), ("", .malformed), ("not base64url!", .malformed), ("a+b/", .malformed),
        ] {
            let userInfo = Self.payload(encrypted: field)
            let push = try #require(EncryptedPush(userInfo: userInfo))
            #expect(throws: failure) {
                try push.open(userInfo: userInfo, decrypt: { _ in decrypted += 1; return Data() })
            }
            #expect(WithheldPush(userInfo: userInfo) != nil, "fetched instead")
        }
        #expect(decrypted == 0)
        let longest = Data(repeating: 7, count: EncryptedPush.maximumLength / 4 * 3).base64URLEncodedString()
        #expect(longest.count == EncryptedPush.maximumLength)
        let push = try #require(EncryptedPush(userInfo: Self.payload(encrypted: longest)))
        #expect(throws: EncryptedPush.Failure.undecryptable) { try push.open(userInfo: Self.payload(), decrypt: { _ in throw Refused() }) }
    }

    @Test("hostile values: words lose their control characters (a body keeps its lines), a negative badge is none, data that is not a string is dropped, aps is never overwritten")
    func hostile() throws {
        let plaintext = #"""
            {"title": "New\u0007 message\u009b from Ann\n", "body": "line one\nline\u0000 two\r", "summary": "\u001b[3 new",
             "badge": -1,
             "data": {"type": "message", "conversationId": "c1", "messageId": "m1", "senderName": 7, "senderId": ["ann"],
                      "aps": "gone", "withheld": "none", "encrypted": "again", "quiet": "true"}}
            """#
        let opened = try Self.open(plaintext)
        #expect(opened.title == "New message from Ann")
        #expect(opened.body == "line one\nline two")
        #expect(opened.subtitle == "[3 new")
        #expect(opened.badge == nil)
        #expect(opened.userInfo["senderName"] == nil && opened.userInfo["senderId"] == nil)
        #expect(opened.userInfo["aps"] is [String: Any])
        #expect(opened.userInfo["withheld"] == nil && opened.userInfo["encrypted"] == nil)
        #expect(opened.userInfo["quiet"] as? String == "true")
        let blank = try Self.open(plaintext.replacingOccurrences(of: #""title": "New\u0007 message\u009b from Ann\n""#, with: #""title": "\u0007""#))
        #expect(blank.title == nil)
    }

    @Test("only a push that says withheld encrypted, with a type and a conversation, and a message id that is a string")
    func notEncrypted() throws {
        var userInfo = Self.payload()
        userInfo["withheld"] = "none"
        #expect(EncryptedPush(userInfo: userInfo) == nil)
        #expect(ServiceExtensionWork(userInfo: userInfo) == .message(withheld: WithheldPush(userInfo: userInfo), encrypted: nil))
        for (key, value) in [("type", 1 as Any), ("conversationId", ""), ("messageId", 5), ("messageId", ""), ("withheld", true)] {
            var changed = Self.payload()
            changed[key] = value
            #expect(EncryptedPush(userInfo: changed) == nil, "\(key)")
        }
        var unnamed = Self.payload()
        unnamed["conversationId"] = nil
        #expect(EncryptedPush(userInfo: unnamed) == nil)
    }

    @Test("a clear and a deletion are read from their clear fields (the app's background path), and their plaintexts open too")
    func clearAndDeletion() throws {
        let clear: [AnyHashable: Any] = [
            "aps": ["content-available": 1, "badge": 0] as [String: Any], "type": "read", "conversationId": "c1", "seq": "12",
            "badge": 0, "withheld": "encrypted", "encrypted": Self.sealed.base64URLEncodedString(),
        ]
        #expect(RemoteNotification(userInfo: clear) == .clear(conversationID: "c1", badge: 0))
        #expect(ServiceExtensionWork(userInfo: clear) == .asItCame)
        let openedClear = try Self.open(#"{"badge": 0, "data": {"type": "read", "conversationId": "c1", "seq": "12"}}"#, clear)
        #expect(openedClear.body == nil && openedClear.badge == 0 && openedClear.title == nil)

        var deletion = Self.payload(type: "message_deleted")
        deletion["aps"] = ["alert": ["body": "This message was deleted"], "mutable-content": 1, "badge": 1] as [String: Any]
        deletion["badge"] = 1
        #expect(RemoteNotification(userInfo: deletion) == .withdraw(conversationID: "c1", notificationID: "herald-1", badge: 1))
        #expect(ServiceExtensionWork(userInfo: deletion) == .asItCame)
        let openedDeletion = try Self.open(
            #"{"body": "This message was deleted", "badge": 1, "data": {"type": "message_deleted", "conversationId": "c1", "messageId": "m1", "notificationId": "herald-1"}}"#,
            deletion)
        #expect(openedDeletion.body == "This message was deleted" && openedDeletion.badge == 1)
    }

    @Test("each failure has a stable code and says what happened")
    func failures() {
        let all: [EncryptedPush.Failure] = [.malformed, .tooLong, .undecryptable, .unexpectedPlaintext, .otherMessage]
        #expect(Set(all.map(\.code)).count == all.count)
        for failure in all { #expect(failure.description.hasPrefix(failure.code + ": ")) }
    }
}

/// The key pair kept where the extension reads it: the kept one reused, a new one kept before it is registered.
@Suite("Keeping the push key pair")
struct PushKeyKeepingTests {
    /// A stand-in for `PushKeyPair` (no CryptoKit here): a pair is its bytes, and 48 bytes make one.
    struct Pair: Equatable {
        var raw: Data
    }

    final class Store {
        var kept: Data?
        var saves = 0
        var refuses = false

        func pair(making new: Data = Data(repeating: 9, count: 48)) -> Pair? {
            PushKeyKeeping.pair(
                load: { kept }, read: { $0.count == 48 ? Pair(raw: $0) : nil }, make: { Pair(raw: new) }, raw: \.raw,
                save: { data in
                    saves += 1
                    guard !refuses else { return false }
                    kept = data
                    return true
                })
        }
    }

    @Test("none kept: a new pair, kept first; then the kept one again, not saved twice")
    func made() {
        let store = Store()
        #expect(store.pair() == Pair(raw: Data(repeating: 9, count: 48)))
        #expect(store.kept == Data(repeating: 9, count: 48) && store.saves == 1)
        #expect(store.pair(making: Data(repeating: 1, count: 48)) == Pair(raw: Data(repeating: 9, count: 48)))
        #expect(store.saves == 1)
    }

    @Test("kept bytes that are not a pair are replaced; a pair that cannot be kept is not registered")
    func replacedOrNone() {
        let store = Store()
        store.kept = Data([1, 2, 3])
        #expect(store.pair() == Pair(raw: Data(repeating: 9, count: 48)))
        let refusing = Store()
        refusing.refuses = true
        #expect(refusing.pair() == nil)
        #expect(PushKeyKeeping.account == "herald.push-keys")
    }
}
