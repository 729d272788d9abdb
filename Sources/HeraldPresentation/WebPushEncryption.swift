// The Web Push message encryption (RFC 8291 over RFC 8188's `aes128gcm`), both sides: the server seals a push for a
// device's key, the device opens it. One file serves both: it is HeraldPresentation's (CryptoKit, on Apple
// platforms), and the server's target compiles the same file through a symbolic link
// (Server/Sources/HeraldServer/Push/WebPushEncryption.swift) with swift-crypto, whose API is CryptoKit's. So the code
// an app decrypts with is the code the server's tests run on Linux. Without CryptoKit or the server's
// `HERALD_SWIFT_CRYPTO` (HeraldPresentation on Linux) it compiles to nothing, and so it does on tvOS and watchOS,
// where the package's minimums predate CryptoKit's HKDF (tvOS 14, watchOS 7).
#if canImport(CryptoKit)
import CryptoKit
#elseif HERALD_SWIFT_CRYPTO
import Crypto
#endif
import Foundation
import HeraldCore

#if (canImport(CryptoKit) && !os(tvOS) && !os(watchOS)) || HERALD_SWIFT_CRYPTO

/// Encrypted content coding `aes128gcm` (RFC 8188): a header (salt, record size, key id) and records sealed with
/// AES-128-GCM under a key and nonce derived from the input keying material and the salt.
enum ContentEncoding {
    /// Why a body cannot be read.
    enum Failure: Error, Equatable {
        /// Shorter than its header says.
        case truncated
        /// A record size too small to hold anything.
        case badRecordSize
        /// A record that does not open under the key (wrong key, or tampered with).
        case unauthentic
        /// A record without its delimiter, or with one in the wrong place.
        case badPadding
    }

    static let tagLength = 16

    /// The content-encryption key and the base nonce for `salt` (RFC 8188, section 2.2 and 2.3).
    static func keys(ikm: SymmetricKey, salt: Data) -> (key: SymmetricKey, nonce: Data) {
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let key = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: aes128gcm\u{0}".utf8), outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: nonce\u{0}".utf8), outputByteCount: 12)
        return (key, nonce.withUnsafeBytes { Data($0) })
    }

    /// The nonce of record `index`: the base nonce XOR the index, as a 96-bit big-endian number.
    static func nonce(_ base: Data, record index: UInt64) -> AES.GCM.Nonce {
        var bytes = [UInt8](base)
        for shift in 0..<8 {
            bytes[11 - shift] ^= UInt8(truncatingIfNeeded: index >> (8 * UInt64(shift)))
        }
        // 12 bytes always make a nonce.
        return try! AES.GCM.Nonce(data: bytes)
    }

    /// `plaintext` as one record (it must fit: `plaintext.count + 17 + padding <= recordSize`), with the header,
    /// and `padding` zero bytes after the delimiter.
    static func encrypt(
        _ plaintext: Data, ikm: SymmetricKey, salt: Data, keyID: Data, recordSize: UInt32 = 4096, padding: Int = 0
    ) throws -> Data {
        let (key, base) = keys(ikm: ikm, salt: salt)
        var record = plaintext
        record.append(0x02)  // the last record's delimiter
        record.append(Data(count: max(0, padding)))
        let sealed = try AES.GCM.seal(record, using: key, nonce: nonce(base, record: 0))
        var body = salt
        withUnsafeBytes(of: recordSize.bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(keyID.count))
        body.append(keyID)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }

    /// The key id in `body`'s header (for Web Push, the sender's public key).
    static func keyID(of body: Data) throws -> Data {
        let bytes = [UInt8](body)
        guard bytes.count >= 21, bytes.count >= 21 + Int(bytes[20]) else { throw Failure.truncated }
        return Data(bytes[21..<(21 + Int(bytes[20]))])
    }

    /// The plaintext of `body`, every record opened and its padding removed.
    static func decrypt(_ body: Data, ikm: SymmetricKey) throws -> Data {
        let bytes = [UInt8](body)
        guard bytes.count >= 21 else { throw Failure.truncated }
        let salt = Data(bytes[0..<16])
        let recordSize = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let keyIDLength = Int(bytes[20])
        guard recordSize > tagLength + 1 else { throw Failure.badRecordSize }
        guard bytes.count >= 21 + keyIDLength else { throw Failure.truncated }
        let (key, base) = keys(ikm: ikm, salt: salt)
        var offset = 21 + keyIDLength
        var index: UInt64 = 0
        var plaintext = Data()
        while offset < bytes.count {
            let end = min(offset + recordSize, bytes.count)
            guard end - offset > tagLength else { throw Failure.truncated }
            let box = try AES.GCM.SealedBox(
                nonce: nonce(base, record: index), ciphertext: bytes[offset..<(end - tagLength)], tag: bytes[(end - tagLength)..<end])
            let record: Data
            do {
                record = try AES.GCM.open(box, using: key)
            } catch {
                throw Failure.unauthentic
            }
            let last = end == bytes.count
            guard let delimiter = record.lastIndex(where: { $0 != 0 }), record[delimiter] == (last ? 0x02 : 0x01) else {
                throw Failure.badPadding
            }
            plaintext.append(record[record.startIndex..<delimiter])
            offset = end
            index += 1
        }
        return plaintext
    }
}

/// Message encryption for Web Push (RFC 8291): the payload sealed for one browser subscription, so that the push
/// service carrying it cannot read it.
public enum WebPushEncryption {
    /// Why a subscription's keys cannot be used.
    public enum KeyFailure: Error, Equatable {
        /// `p256dh` is not an uncompressed P-256 point.
        case badPublicKey
        /// `auth` is not 16 bytes.
        case badAuthSecret
    }

    /// `plaintext` encrypted for the subscription whose keys are `p256dh` (the browser's public key, 65 bytes)
    /// and `auth` (its 16-byte secret): a fresh ephemeral key and salt each time unless given (tests give the
    /// RFC's), with `padding` zero bytes inside the record (so its length says less of the plaintext's).
    public static func encrypt(
        _ plaintext: Data, p256dh: Data, auth: Data,
        salt: Data? = nil, ephemeralKey: P256.KeyAgreement.PrivateKey? = nil, padding: Int = 0
    ) throws -> Data {
        guard auth.count == 16 else { throw KeyFailure.badAuthSecret }
        let browserKey: P256.KeyAgreement.PublicKey
        do {
            browserKey = try P256.KeyAgreement.PublicKey(x963Representation: p256dh)
        } catch {
            throw KeyFailure.badPublicKey
        }
        let serverKey = ephemeralKey ?? P256.KeyAgreement.PrivateKey()
        let serverPublic = serverKey.publicKey.x963Representation
        let shared = try serverKey.sharedSecretFromKeyAgreement(with: browserKey)
        let ikm = inputKey(shared, auth: auth, receiver: p256dh, sender: serverPublic)
        var randomSalt = Data(count: 16)
        if salt == nil {
            var generator = SystemRandomNumberGenerator()
            for index in randomSalt.indices { randomSalt[index] = UInt8.random(in: 0...255, using: &generator) }
        }
        return try ContentEncoding.encrypt(plaintext, ikm: ikm, salt: salt ?? randomSalt, keyID: serverPublic, padding: padding)
    }
}

extension WebPushEncryption {
    /// Why a body cannot be opened with a key.
    public enum OpenFailure: Error, Equatable {
        /// The header holds no P-256 public key of the sender's.
        case badSenderKey
        /// The body is cut short, malformed, or does not open under this key (another device's, or tampered with).
        case unreadable
    }

    /// The input keying material both sides derive (RFC 8291, section 3.4).
    static func inputKey(_ shared: SharedSecret, auth: Data, receiver: Data, sender: Data) -> SymmetricKey {
        var info = Data("WebPush: info\u{0}".utf8)
        info.append(receiver)
        info.append(sender)
        return shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: info, outputByteCount: 32)
    }

    /// The plaintext of `body` (as ``encrypt(_:p256dh:auth:salt:ephemeralKey:)`` made it) for the receiver holding
    /// `keys`: the sender's public key is the header's key id.
    ///
    /// - Throws: ``OpenFailure``.
    public static func decrypt(_ body: Data, with keys: PushKeyPair) throws -> Data {
        let sender: P256.KeyAgreement.PublicKey
        do {
            sender = try P256.KeyAgreement.PublicKey(x963Representation: ContentEncoding.keyID(of: body))
        } catch {
            throw OpenFailure.badSenderKey
        }
        do {
            let shared = try keys.privateKey.sharedSecretFromKeyAgreement(with: sender)
            let ikm = inputKey(shared, auth: keys.auth, receiver: keys.publicKey, sender: sender.x963Representation)
            return try ContentEncoding.decrypt(body, ikm: ikm)
        } catch {
            throw OpenFailure.unreadable
        }
    }
}

/// A device's push keys (`PUT /v1/devices/{id}` with `"keys": {"p256dh", "auth"}`): a P-256 key pair and a 16-byte
/// authentication secret, as a browser's push subscription holds them. The server encrypts every push to the device
/// for ``publicKey`` and ``auth``; only the holder of the private key opens it.
///
/// Keep ``rawRepresentation`` where the app's Notification Service Extension reads it (a Keychain item in a shared
/// access group), and register ``publicKey`` and ``auth`` (base64url) with the device.
public struct PushKeyPair: Sendable {
    /// The private key.
    public let privateKey: P256.KeyAgreement.PrivateKey
    /// The authentication secret: 16 random bytes.
    public let auth: Data

    /// A new pair and secret.
    public init() {
        privateKey = P256.KeyAgreement.PrivateKey()
        var generator = SystemRandomNumberGenerator()
        auth = Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// The pair kept as ``rawRepresentation``; nil when `raw` is not one (48 bytes: the private key's 32, the
    /// secret's 16).
    public init?(rawRepresentation raw: Data) {
        guard raw.count == 48, let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: raw.prefix(32)) else { return nil }
        privateKey = key
        auth = Data(raw.suffix(16))
    }

    /// What to keep: the private key's 32 bytes, then the secret's 16.
    public var rawRepresentation: Data { privateKey.rawRepresentation + auth }

    /// The public key, uncompressed (65 bytes): `keys.p256dh` of the registration, in base64url.
    public var publicKey: Data { privateKey.publicKey.x963Representation }

    /// `{"p256dh": …, "auth": …}` as the registration sends them: base64url without padding.
    public var registration: (p256dh: String, auth: String) {
        (publicKey.base64URLEncodedString(), auth.base64URLEncodedString())
    }

    /// The plaintext of a push encrypted for this device (the push's `encrypted` field, base64url-decoded).
    ///
    /// - Throws: ``WebPushEncryption/OpenFailure``.
    public func decrypt(_ body: Data) throws -> Data {
        try WebPushEncryption.decrypt(body, with: self)
    }
}
#endif
