import Crypto
import Foundation
import HeraldProtocol
@testable import HeraldServer
import HeraldTestSupport
import JWTKit
import Testing

/// The message encryption of Web Push against the RFCs' own examples.
@Suite("Web Push encryption (RFC 8291, RFC 8188)", .timeLimit(.minutes(1)), .childProcesses)
struct WebPushEncryptionTests {
    private func bytes(_ base64URL: String) throws -> Data {
        try #require(Data(base64URL: base64URL))
    }

    @Test("RFC 8291 Appendix A: the example's keys and salt give the example's bytes, and they decrypt back")
    func rfc8291AppendixA() throws {
        let serverKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
        #expect(serverKey.publicKey.x963Representation.base64URLEncodedString()
            == "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        let p256dh = try bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
        let auth = try bytes("BTBZMqHH6r4Tts7J_aSIgg")
        let body = try WebPushEncryption.encrypt(
            Data("When I grow up, I want to be a watermelon".utf8), p256dh: p256dh, auth: auth,
            salt: bytes("DGv6ra1nlYgDCS1FRnbzlw"), ephemeralKey: serverKey)
        #expect(body.base64URLEncodedString()
            == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")

        // The browser's side: its private key and the sender's public key in the header give the same key.
        let browserKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"))
        #expect(browserKey.publicKey.x963Representation == p256dh)
        var info = Data("WebPush: info\u{0}".utf8)
        info.append(p256dh)
        info.append(serverKey.publicKey.x963Representation)
        let ikm = try browserKey.sharedSecretFromKeyAgreement(with: serverKey.publicKey)
            .hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: info, outputByteCount: 32)
        #expect(try ContentEncoding.decrypt(body, ikm: ikm) == Data("When I grow up, I want to be a watermelon".utf8))
    }

    @Test("RFC 8188 section 3.1 (one record) and 3.2 (several, with padding and a key id) decrypt")
    func rfc8188Examples() throws {
        let one = try ContentEncoding.decrypt(
            bytes("I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg"),
            ikm: SymmetricKey(data: bytes("yqdlZ-tYemfogSmv7Ws5PQ")))
        #expect(one == Data("I am the walrus".utf8))
        let several = try ContentEncoding.decrypt(
            bytes("uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA"),
            ikm: SymmetricKey(data: bytes("BO3ZVPxUlnLORbVGMpbT1Q")))
        #expect(several == Data("I am the walrus".utf8))
        // Encrypting section 3.1's plaintext with its key and salt gives its bytes.
        let again = try ContentEncoding.encrypt(
            Data("I am the walrus".utf8), ikm: SymmetricKey(data: bytes("yqdlZ-tYemfogSmv7Ws5PQ")),
            salt: bytes("I1BsxtFttlv3u_Oo94xnmw"), keyID: Data())
        #expect(again.base64URLEncodedString() == "I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg")
    }

    @Test("a fresh key and salt every time; tampering, a wrong key, a cut body and bad keys are refused")
    func refusals() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let p256dh = browser.publicKey.x963Representation
        let auth = Data((0..<16).map { UInt8($0) })
        let first = try WebPushEncryption.encrypt(Data("hi".utf8), p256dh: p256dh, auth: auth)
        let second = try WebPushEncryption.encrypt(Data("hi".utf8), p256dh: p256dh, auth: auth)
        #expect(first.prefix(16) != second.prefix(16), "a fresh salt")
        #expect(first[21..<86] != second[21..<86], "a fresh ephemeral key")

        let ikm = SymmetricKey(data: Data(repeating: 7, count: 16))
        let body = try ContentEncoding.encrypt(Data("secret".utf8), ikm: ikm, salt: Data(repeating: 1, count: 16), keyID: Data())
        var tampered = body
        tampered[tampered.count - 20] ^= 0x01
        #expect(throws: ContentEncoding.Failure.unauthentic) { try ContentEncoding.decrypt(tampered, ikm: ikm) }
        #expect(throws: ContentEncoding.Failure.unauthentic) {
            try ContentEncoding.decrypt(body, ikm: SymmetricKey(data: Data(repeating: 8, count: 16)))
        }
        #expect(throws: ContentEncoding.Failure.truncated) { try ContentEncoding.decrypt(body.prefix(20), ikm: ikm) }
        #expect(throws: WebPushEncryption.KeyFailure.badPublicKey) {
            try WebPushEncryption.encrypt(Data(), p256dh: Data(repeating: 4, count: 65), auth: auth)
        }
        #expect(throws: WebPushEncryption.KeyFailure.badAuthSecret) {
            try WebPushEncryption.encrypt(Data(), p256dh: p256dh, auth: Data(count: 15))
        }
    }
}

/// The server's VAPID identity: its token, its key kept beside the database, its public half for the page.
@Suite("VAPID", .timeLimit(.minutes(1)), .childProcesses)
struct VAPIDTests {
    @Test("the Authorization header: an ES256 JWT for the push service's origin, expiring within 24 hours, with the subject, and the public key")
    func authorization() async throws {
        let key = P256.Signing.PrivateKey()
        let vapid = try await VAPID(key: key, subject: "mailto:ops@example.com")
        let now = Date()
        let header = try await vapid.authorization(for: URL(string: "https://push.example.net:8443/send/abc?x=1")!, now: now)
        let parts = header.split(separator: " ")
        #expect(parts.count == 3 && parts[0] == "vapid" && parts[1].hasPrefix("t=") && parts[1].hasSuffix(","))
        #expect(parts[2] == "k=\(key.publicKey.x963Representation.base64URLEncodedString())")
        let token = String(parts[1].dropFirst(2).dropLast())
        let keys = await JWTKeyCollection().add(ecdsa: try ES256PublicKey(backing: key.publicKey))
        let claims = try await keys.verify(token, as: VAPID.Claims.self)
        #expect(claims.aud.value == ["https://push.example.net:8443"])
        #expect(claims.sub?.value == "mailto:ops@example.com")
        let expiry = claims.exp.value.timeIntervalSince(now)
        #expect(expiry > 0 && expiry <= 24 * 3600)
        #expect(jwtHeader(token)["alg"] as? String == "ES256")
        #expect(VAPID.origin(of: URL(string: "https://fcm.googleapis.com/fcm/send/x")!) == "https://fcm.googleapis.com")
    }

    @Test("the key is made on first start beside the database (owner-only), kept across restarts, or read from HERALD_VAPID_PRIVATE_KEY_FILE; GET /v1/webpush/key gives its public half")
    func keptBesideTheDatabase() async throws {
        let folder = try makeTemporaryFolder("herald-vapid")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let alice = try await tokens.token(userID: "alice", name: "Alice")
        func publicKey(_ environment: [String: String?] = [:]) async throws -> String {
            let server = try await ServerProcess(database: database, secret: TestServer.secret, environment: environment)
            defer { server.stop() }
            let result = try await HTTPClient.request(port: server.port, "GET", "/v1/webpush/key", token: alice)
            #expect(try await HTTPClient.request(port: server.port, "GET", "/v1/webpush/key").status == 401)
            await server.expectCleanStop()
            return try #require((try JSONSerialization.jsonObject(with: result.body) as? [String: String])?["publicKey"])
        }
        let first = try await publicKey()
        let attributes = try FileManager.default.attributesOfItem(atPath: database + ".vapid")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let stored = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: database + ".vapid", encoding: .utf8))
        #expect(first == stored.publicKey.x963Representation.base64URLEncodedString())
        #expect(Data(base64URL: first)?.count == 65)
        #expect(try await publicKey() == first, "the same key after a restart")

        let given = P256.Signing.PrivateKey()
        let file = folder.appendingPathComponent("vapid.pem")
        try given.pemRepresentation.write(to: file, atomically: true, encoding: .utf8)
        #expect(try await publicKey(["HERALD_VAPID_PRIVATE_KEY_FILE": file.path])
            == given.publicKey.x963Representation.base64URLEncodedString())
    }
}
