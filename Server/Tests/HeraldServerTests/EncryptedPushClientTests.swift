import Foundation
import HeraldCore
import HeraldPresentation
@testable import HeraldServer
import Testing

/// HeraldPresentation's `EncryptedPush` opening a real encrypted push (issue 60): a device's key pair, a plaintext in
/// the spec's format sealed for its registered keys as the server seals a Web Push body, carried in the APNs payload
/// as the spec has it. Another device's key does not open it, and the payload is still a withheld push to fetch.
@Suite("An encrypted push opened by the client, with real keys")
struct EncryptedPushClientTests {
    // On Linux, HeraldPresentation has no CryptoKit: the pair and the encryption are the server's, compiled from the
    // same file (HeraldPresentation/WebPushEncryption.swift). Named by module, since on Apple platforms both have them.
    typealias KeyPair = HeraldServer.PushKeyPair
    typealias Encryption = HeraldServer.WebPushEncryption

    static let plaintext = #"""
        {"title": "New message from Ann", "body": "hello", "summary": "3 new messages", "badge": 2,
         "data": {"type": "message", "conversationId": "c1", "messageId": "m1", "seq": "12", "notificationId": "herald-1",
                  "senderId": "ann", "senderName": "Ann", "senderAvatarURL": "https://pictures.example/ann.png",
                  "isGroup": "false", "mentioned": "true", "category": "HERALD_MESSAGE"}}
        """#

    /// `plaintext` sealed for the keys as the device registered them (base64url), as the server reads them.
    static func sealed(_ plaintext: String, for keys: KeyPair) throws -> String {
        let registration = keys.registration
        let p256dh = try #require(Data(base64URL: registration.p256dh))
        let auth = try #require(Data(base64URL: registration.auth))
        return try Encryption.encrypt(Data(plaintext.utf8), p256dh: p256dh, auth: auth).base64URLEncodedString()
    }

    /// The APNs payload of an encrypted alert: `aps` with the generic words, the ids and `encrypted` beside it.
    static func payload(_ encrypted: String, type: String = "message") -> [AnyHashable: Any] {
        [
            "aps": ["alert": ["body": "New message"], "mutable-content": 1, "badge": 2, "thread-id": "c1",
                    "category": "HERALD_MESSAGE"] as [String: Any],
            "type": type, "conversationId": "c1", "messageId": "m1", "seq": "12", "notificationId": "herald-1",
            "category": "HERALD_MESSAGE", "badge": 2, "withheld": "encrypted", "encrypted": encrypted,
        ]
    }

    @Test("sealed for the device's registered keys, it opens with its pair: the words, the subtitle, the badge, the data of a full push")
    func opens() throws {
        let keys = KeyPair()
        let userInfo = Self.payload(try Self.sealed(Self.plaintext, for: keys))
        guard case .message(let withheld, let encrypted?) = ServiceExtensionWork(userInfo: userInfo) else {
            Issue.record("not read as an encrypted message push")
            return
        }
        #expect(withheld != nil, "the fallback is there")
        let opened = try encrypted.open(userInfo: userInfo, decrypt: keys.decrypt)
        #expect(opened.title == "New message from Ann" && opened.body == "hello")
        #expect(opened.subtitle == "3 new messages" && opened.badge == 2)
        #expect(opened.userInfo["withheld"] == nil && opened.userInfo["encrypted"] == nil)
        let communication = try #require(CommunicationNotification(userInfo: opened.userInfo))
        #expect(communication.senderName == "Ann" && communication.senderPicture?.host == "pictures.example")
    }

    @Test("the pair as the extension reads it back from the Keychain (its raw bytes, kept first) opens it too")
    func keptPair() throws {
        var kept: Data?
        let keys = try #require(PushKeyKeeping.pair(
            load: { kept }, read: { KeyPair(rawRepresentation: $0) }, make: { KeyPair() }, raw: { $0.rawRepresentation },
            save: { kept = $0; return true }))
        let read = try #require(kept.flatMap { KeyPair(rawRepresentation: $0) })
        #expect(read.publicKey == keys.publicKey && read.auth == keys.auth)
        let userInfo = Self.payload(try Self.sealed(Self.plaintext, for: keys))
        let push = try #require(EncryptedPush(userInfo: userInfo))
        #expect(try push.open(userInfo: userInfo, decrypt: read.decrypt).body == "hello")
    }

    @Test("another pair's key, or a tampered body, does not open it: undecryptable, and the same payload is a withheld push to fetch")
    func otherKey() throws {
        let keys = KeyPair()
        let encrypted = try Self.sealed(Self.plaintext, for: keys)
        let userInfo = Self.payload(encrypted)
        let push = try #require(EncryptedPush(userInfo: userInfo))
        #expect(throws: EncryptedPush.Failure.undecryptable) {
            try push.open(userInfo: userInfo, decrypt: KeyPair().decrypt)
        }
        var bytes = try #require(Data(base64URL: encrypted))
        bytes[bytes.count - 1] ^= 1
        let tampered = Self.payload(bytes.base64URLEncodedString())
        #expect(throws: EncryptedPush.Failure.undecryptable) {
            try #require(EncryptedPush(userInfo: tampered)).open(userInfo: tampered, decrypt: keys.decrypt)
        }
        let withheld = try #require(WithheldPush(userInfo: userInfo))
        #expect(withheld.conversationID == "c1" && withheld.messageID == "m1")
    }

    @Test("a genuine body moved onto another message's ids is refused as a replay")
    func replayed() throws {
        let keys = KeyPair()
        var userInfo = Self.payload(try Self.sealed(Self.plaintext, for: keys))
        userInfo["messageId"] = "m2"
        #expect(throws: EncryptedPush.Failure.otherMessage) {
            try #require(EncryptedPush(userInfo: userInfo)).open(userInfo: userInfo, decrypt: keys.decrypt)
        }
    }

    @Test("the largest plaintext one 4 KB record holds, sealed, is within the bound the client reads")
    func largest() throws {
        let keys = KeyPair()
        let padding = String(repeating: "x", count: 4096 - 17 - (Self.plaintext.utf8.count - "hello".utf8.count))
        let plaintext = Self.plaintext.replacingOccurrences(of: #""body": "hello""#, with: #""body": "\#(padding)""#)
        let encrypted = try Self.sealed(plaintext, for: keys)
        #expect(encrypted.count <= EncryptedPush.maximumLength)
        let userInfo = Self.payload(encrypted)
        #expect(try #require(EncryptedPush(userInfo: userInfo)).open(userInfo: userInfo, decrypt: keys.decrypt).body == padding)
    }
}
