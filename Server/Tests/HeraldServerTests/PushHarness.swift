import Foundation
import HeraldServer
import HeraldTestSupport
import JWTKit
import Testing

/// A Herald server whose APNs, FCM and Expo providers all send to one local fake over HTTPS and HTTP/2 (its
/// self-signed certificate trusted through the CA-file setting), with a fresh `.p8` key and service account.
struct PushHarness {
    let server: TestServer
    let fake: FakePushService
    let apnsKey: ES256PrivateKey
    let fcmKey: Insecure.RSA.PrivateKey

    static let keyID = "KEYID12345"
    static let teamID = "TEAMID6789"
    static let topic = "app.herald.test"
    static let fcmProject = "herald-test"
    static let fcmEmail = "push@herald-test.iam.gserviceaccount.com"

    /// Runs `body` with a server and its fake push services; `configure` adjusts the server's settings.
    static func run(
        configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
        _ body: (PushHarness) async throws -> Void
    ) async throws {
        let certificate = try await TestCertificate.make()
        defer { certificate.remove() }
        let folder = try makeTemporaryFolder("herald-push")
        defer { try? FileManager.default.removeItem(at: folder) }

        let apnsKey = ES256PrivateKey()
        let keyFile = folder.appendingPathComponent("AuthKey.p8").path
        try apnsKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)

        // An RSA key in PKCS #8, as Google writes them into service-account files.
        let rsaFile = folder.appendingPathComponent("rsa.pem").path
        let generated = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", rsaFile])
        guard generated.status == 0 else { throw TestFailure("openssl genpkey failed: \(generated.stderr)") }
        let rsaPEM = try String(contentsOfFile: rsaFile, encoding: .utf8)
        let fcmKey = try Insecure.RSA.PrivateKey(pem: rsaPEM)

        try await FakePushService.run(certificate: certificate) { fake in
            let account: [String: String] = [
                "type": "service_account", "project_id": fcmProject, "private_key_id": "abc",
                "private_key": rsaPEM, "client_email": fcmEmail, "token_uri": fake.url + "/token",
            ]
            let accountFile = folder.appendingPathComponent("service-account.json").path
            try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: accountFile))
            try await TestServer.run(configure: { configuration in
                configuration.push.caFile = certificate.certificatePath
                configuration.push.apns = APNsProvider.Settings(
                    keyFile: keyFile, keyID: keyID, teamID: teamID, topic: topic, url: fake.url)
                configuration.push.fcmServiceAccount = accountFile
                configuration.push.fcmURL = fake.url
                configuration.push.expoURL = fake.url
                configuration.push.retryBase = .milliseconds(50)
                configuration.push.webPushAllowPrivate = true
                configuration.push.vapidSubject = "mailto:tests@herald.example"
                configure(&configuration)
            }) { server in
                try await body(PushHarness(server: server, fake: fake, apnsKey: apnsKey, fcmKey: fcmKey))
            }
        }
    }

    /// Registers a device of `token`'s user; its device key.
    @discardableResult
    func register(_ token: String, device: String, platform: String, pushToken: String) async throws -> String {
        let result = try await server.request(
            "PUT", "/v1/devices/\(device)", token: token, body: #"{"platform": "\#(platform)", "token": "\#(pushToken)"}"#)
        guard result.status == 200, let key = result.field("deviceKey") else {
            throw TestFailure("registering \(device) failed: \(result.status) \(result.text)")
        }
        return key
    }

    /// The ids of `userID`'s registered devices.
    func devices(of userID: String) async throws -> [String] {
        try await server.environment.store.devices(of: userID).map(\.id)
    }

    /// Waits (up to 15 s) until `condition` holds.
    func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
        try await HeraldServerTests.eventually(what, condition)
    }

    /// The APNs requests for `deviceToken`.
    func apns(_ deviceToken: String) -> [RecordedRequest] {
        fake.requests(to: "/3/device/\(deviceToken)")
    }

    /// An APNs device token: 64 hex digits from `seed`.
    static func apnsToken(_ seed: Int) -> String {
        String(format: "%064x", seed)
    }
}

/// The claims of an APNs provider token.
struct APNsProviderClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// The claims of an FCM OAuth assertion.
struct FCMAssertionClaims: JWTPayload {
    var iss: IssuerClaim
    var scope: String
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}

/// The JSON header of a JWT.
func jwtHeader(_ token: String) -> [String: Any] {
    guard let part = token.split(separator: ".").first else { return [:] }
    var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    guard let data = Data(base64Encoded: base64) else { return [:] }
    return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
}

/// A local fake APNs for `herald serve` processes: the fake, and the settings that send a server's APNs pushes to it
/// (a fresh `.p8` key, the fake's throwaway certificate trusted).
struct FakeAPNs {
    let fake: FakePushService
    /// `HERALD_APNS_*` and `HERALD_PUSH_CA_FILE`, to merge into a server's environment.
    let environment: [String: String?]

    /// Runs `body` with a fake APNs; everything it made is removed afterwards.
    static func run(_ body: (FakeAPNs) async throws -> Void) async throws {
        let certificate = try await TestCertificate.make()
        defer { certificate.remove() }
        let folder = try makeTemporaryFolder("herald-fake-apns")
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("AuthKey.p8").path
        try ES256PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try await FakePushService.run(certificate: certificate) { fake in
            try await body(FakeAPNs(fake: fake, environment: [
                "HERALD_APNS_KEY_FILE": keyFile, "HERALD_APNS_KEY_ID": PushHarness.keyID,
                "HERALD_APNS_TEAM_ID": PushHarness.teamID, "HERALD_APNS_TOPIC": PushHarness.topic,
                "HERALD_APNS_URL": fake.url, "HERALD_PUSH_CA_FILE": certificate.certificatePath,
                // These servers' tests follow each message's own push (restarts, confirmations); bursts, which make
                // a conversation's pushes share a collapse id, are PushBurstTests'.
                "HERALD_PUSH_BURST_WINDOW": "0",
            ]))
        }
    }
}
