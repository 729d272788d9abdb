import Foundation
import HeraldCore

/// A push whose words travel encrypted to this device (the server's `HERALD_PUSH_CONTENT` is `encrypted` and the
/// device registered push keys): its data says `withheld: "encrypted"` and carries `encrypted`, an RFC 8291
/// `aes128gcm` body in base64url, beside the ids in clear. What a Notification Service Extension (or an Android
/// messaging service) opens with the device's private key, and how what it says fills the notification in.
///
/// Opening fails when the device cannot decrypt (a lost or replaced key pair), the plaintext is not what the server
/// sends, or it is about another message than the ids in clear (a push replayed onto another one): the caller then
/// falls back to the device key's fetch, as for any withheld push (``WithheldPush`` reads the same payload).
///
/// Everything in the payload came over the network: the `encrypted` field is refused over ``maximumLength``
/// before it is decoded, values are taken only with their expected types, and the words shown lose their control
/// characters. On Linux there is no CryptoKit: the decryption is a closure (`PushKeyPair.decrypt` on Apple
/// platforms, where ``open(userInfo:with:)`` takes the pair itself).
public struct EncryptedPush: Hashable, Sendable {
    /// The longest `encrypted` field read (base64url characters): a push's whole payload is at most 4 KB.
    public static let maximumLength = 8192

    /// The push's `type`: `message`, `message_edited`, `message_deleted` or `read`.
    public var type: String
    /// The conversation, in clear.
    public var conversationID: String
    /// The message, in clear; nil for a clear (`read`), which names none.
    public var messageID: String?
    /// The encrypted body, or why it cannot be read.
    private var body: Result<Data, Failure>

    /// Reads an APNs payload (or FCM data); nil unless it says `withheld: "encrypted"` with a `type` and a
    /// `conversationId` (and a `messageId`, when it has one, as a non-empty string). A missing, oversized or
    /// malformed `encrypted` field is not refused here: ``open(userInfo:decrypt:)`` says so, and the caller falls
    /// back.
    public init?(userInfo: [AnyHashable: Any]) {
        guard userInfo["withheld"] as? String == "encrypted",
              let type = userInfo["type"] as? String, !type.isEmpty,
              let conversationID = userInfo["conversationId"] as? String, !conversationID.isEmpty
        else { return nil }
        if let message = userInfo["messageId"] {
            guard let message = message as? String, !message.isEmpty else { return nil }
            messageID = message
        } else {
            messageID = nil
        }
        self.type = type
        self.conversationID = conversationID
        body = Self.body(userInfo["encrypted"])
    }

    /// The `encrypted` field's bytes: a string of at most ``maximumLength`` base64url characters.
    private static func body(_ field: Any?) -> Result<Data, Failure> {
        guard let text = field as? String, !text.isEmpty else { return .failure(.malformed) }
        guard text.utf8.count <= maximumLength else { return .failure(.tooLong) }
        guard text.utf8.allSatisfy({ Self.base64URLAlphabet.contains($0) }), let body = Data(base64URL: text) else {
            return .failure(.malformed)
        }
        return .success(body)
    }

    private static let base64URLAlphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=".utf8)

    /// The notification filled in from the decrypted push, as ``WithheldPush/filled(title:body:data:userInfo:)``
    /// fills it from the fetched message: its words, and `userInfo` (the push's) with the plaintext's data in it and
    /// `withheld` and `encrypted` taken out, so ``CommunicationNotification/init(userInfo:)`` reads it as a full push.
    ///
    /// - Parameters:
    ///   - userInfo: the push's payload, the one this was read from.
    ///   - decrypt: the `aes128gcm` body's plaintext (`PushKeyPair.decrypt`); whatever it throws is ``Failure/undecryptable``.
    /// - Throws: ``Failure``: fall back to the device key's fetch (``WithheldPush``).
    public func open(userInfo: [AnyHashable: Any], decrypt: (Data) throws -> Data) throws(Failure) -> Opened {
        let body: Data
        switch self.body {
        case .success(let bytes): body = bytes
        case .failure(let failure): throw failure
        }
        let plaintext: Data
        do {
            plaintext = try decrypt(body)
        } catch {
            throw .undecryptable
        }
        let content: Plaintext
        do {
            content = try JSONDecoder().decode(Plaintext.self, from: plaintext)
        } catch {
            throw .unexpectedPlaintext
        }
        guard type == "read" || content.body != nil else { throw .unexpectedPlaintext }
        guard Self.same(content.data["type"], type), Self.same(content.data["conversationId"], conversationID),
              Self.same(content.data["messageId"], messageID)
        else { throw .otherMessage }
        var filled = userInfo
        filled["withheld"] = nil
        filled["encrypted"] = nil
        for (key, value) in content.data where !Self.reserved.contains(key) { filled[key] = value }
        return Opened(
            title: content.title.map { Self.plain($0, keepingLines: false) }.flatMap { $0.isEmpty ? nil : $0 },
            body: content.body.map { Self.plain($0, keepingLines: true) },
            subtitle: content.summary.map { Self.plain($0, keepingLines: false) }.flatMap { $0.isEmpty ? nil : $0 },
            badge: content.badge.flatMap { $0 >= 0 ? $0 : nil },
            userInfo: filled)
    }

    /// Keys of the payload the plaintext's data never overwrites.
    private static let reserved: Set<String> = ["aps", "withheld", "encrypted"]

    /// Whether `found` is `expected`, byte for byte (both absent counts).
    private static func same(_ found: String?, _ expected: String?) -> Bool {
        switch (found, expected) {
        case (nil, nil): true
        case let (found?, expected?): found.utf8.elementsEqual(expected.utf8)
        default: false
        }
    }

    /// `text` without control characters (C0, DEL, C1), but for line breaks in a body.
    private static func plain(_ text: String, keepingLines: Bool) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter {
            (keepingLines && $0 == "\n") || !(0..<0x20 ~= $0.value || 0x7F...0x9F ~= $0.value)
        }))
    }
}

extension EncryptedPush {
    /// Why an encrypted push was not opened: fall back to the device key's fetch.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// No `encrypted` field, or not base64url.
        case malformed
        /// An `encrypted` field over ``EncryptedPush/maximumLength``, left undecoded.
        case tooLong
        /// It does not open with this device's key (another key, a lost one, or tampered with).
        case undecryptable
        /// It opened, but is not the JSON the server sends (or a message's has no body).
        case unexpectedPlaintext
        /// It opened, but it is about another message than the ids in clear say: a push replayed onto another one.
        case otherMessage

        /// A stable code, for logs and tests.
        public var code: String {
            switch self {
            case .malformed: "encrypted_malformed"
            case .tooLong: "encrypted_too_long"
            case .undecryptable: "encrypted_undecryptable"
            case .unexpectedPlaintext: "encrypted_unexpected_plaintext"
            case .otherMessage: "encrypted_other_message"
            }
        }

        /// What happened, for a person reading a log.
        public var description: String {
            switch self {
            case .malformed: "\(code): the push's encrypted field is missing or not base64url"
            case .tooLong: "\(code): the push's encrypted field is over \(EncryptedPush.maximumLength) characters"
            case .undecryptable: "\(code): the push does not decrypt with this device's key"
            case .unexpectedPlaintext: "\(code): the decrypted push is not the JSON Herald sends"
            case .otherMessage: "\(code): the decrypted push is about another message than its ids in clear"
            }
        }
    }

    /// An opened push: what the notification shows, and its data.
    public struct Opened {
        /// The title (`New message from Ann`); nil: none (keep the push's, if any).
        public var title: String?
        /// The body; nil only for a clear (`read`), which shows nothing.
        public var body: String?
        /// The plaintext's `summary` (`3 new messages`), shown as the subtitle; nil: none.
        public var subtitle: String?
        /// The app icon's badge, when the plaintext says.
        public var badge: Int?
        /// The push's payload with the plaintext's data (the data of a full push) in it, `withheld` and `encrypted`
        /// taken out.
        public var userInfo: [AnyHashable: Any]
    }

    /// The plaintext as the server writes it (spec: issue 60): each field taken only with its type; data's values
    /// that are not strings are dropped.
    private struct Plaintext: Decodable {
        var title: String?
        var body: String?
        var summary: String?
        var badge: Int?
        var data: [String: String]

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            title = try container.decodeIfPresent(String.self, forKey: Key(stringValue: "title"))
            body = try container.decodeIfPresent(String.self, forKey: Key(stringValue: "body"))
            summary = try container.decodeIfPresent(String.self, forKey: Key(stringValue: "summary"))
            badge = try container.decodeIfPresent(Int.self, forKey: Key(stringValue: "badge"))
            let values = try container.nestedContainer(keyedBy: Key.self, forKey: Key(stringValue: "data"))
            var data: [String: String] = [:]
            for key in values.allKeys {
                if let value = try? values.decode(String.self, forKey: key) { data[key.stringValue] = value }
            }
            self.data = data
        }
    }
}

#if canImport(CryptoKit) && !os(tvOS) && !os(watchOS)
extension EncryptedPush {
    /// ``open(userInfo:decrypt:)`` with this device's key pair (kept where the extension reads it,
    /// ``PushKeyKeeping``).
    ///
    /// - Throws: ``Failure``: fall back to the device key's fetch (``WithheldPush``).
    public func open(userInfo: [AnyHashable: Any], with keys: PushKeyPair) throws(Failure) -> Opened {
        try open(userInfo: userInfo, decrypt: { try keys.decrypt($0) })
    }
}
#endif
