import Crypto
import Foundation
@testable import HeraldServer
import HeraldTestSupport
import Hummingbird
import JWTKit
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

/// ID tokens from an identity provider (`HERALD_OIDC_*`), against a local provider whose keys the test makes: its
/// discovery document and JWKS served by a Hummingbird app.
@Suite("Signing in with an identity provider's ID tokens", .timeLimit(.minutes(3)))
struct OpenIDTests {
    static let audience = "herald-test-project"

    /// The ID token claims a provider signs.
    struct IDClaims: JWTPayload {
        var sub: SubjectClaim
        var iss: IssuerClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var name: String?
        var email: String? = nil

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// A local identity provider: its keys (by kid), which it publishes, and whether it answers at all.
    final class Provider: Sendable {
        let published = NIOLockedValueBox<[String]>([])
        let fetches = NIOLockedValueBox(0)
        let issuer = NIOLockedValueBox("")
        /// Whether its discovery document answers with a redirect (to `/elsewhere`, which serves it), and how often
        /// that was followed.
        let redirects = NIOLockedValueBox(false)
        let detours = NIOLockedValueBox(0)

        /// Names itself the issuer at `port`, and the server's settings that take its tokens for this test's audience.
        func settings(port: Int) -> OpenIDSettings {
            let address = "http://127.0.0.1:\(port)"
            issuer.withLockedValue { $0 = address }
            var settings = OpenIDSettings()
            settings.issuers = [address]
            settings.audiences = [OpenIDTests.audience]
            settings.allowPrivate = true  // it is on this machine
            return settings
        }

        var jwks: String { #"{"keys": [\#(published.withLockedValue { $0 }.joined(separator: ", "))]}"# }

        static func ecJWK(_ key: ES256PrivateKey, kid: String) throws -> String {
            let parameters = try #require(key.publicKey.parameters)
            return #"{"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "\#(kid)", "x": "\#(parameters.x)", "y": "\#(parameters.y)"}"#
        }

        static func rsaJWK(_ key: JWTKit.Insecure.RSA.PrivateKey, kid: String) throws -> String {
            let (modulus, exponent) = try key.publicKey.getKeyPrimitives()
            return #"{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": "\#(kid)", "n": "\#(modulus.base64URLEncodedString())", "e": "\#(exponent.base64URLEncodedString())"}"#
        }
    }

    @Test("ID tokens signed with the provider's keys are taken (ES256 and RS256), a rotated key is picked up, the cached keys serve while the provider is away; wrong issuer, audience, algorithm, expired, unknown kid are refused, each saying why")
    func idTokens() async throws {
        let provider = Provider()
        let ecKey = ES256PrivateKey(), rotated = ES256PrivateKey(), stranger = ES256PrivateKey()
        let rsaKey = try await Self.rsaKey()
        provider.published.withLockedValue { $0 = [try! Provider.ecJWK(ecKey, kid: "ec-1"), try! Provider.rsaJWK(rsaKey, kid: "rsa-1")] }
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: ecKey, kid: "ec-1")
        await signers.add(ecdsa: rotated, kid: "ec-2")
        await signers.add(ecdsa: stranger, kid: "ec-9")
        await signers.add(rsa: rsaKey, digestAlgorithm: .sha256, kid: "rsa-1")

        try await Self.serving(provider) { port, stopProvider in
            var openID = provider.settings(port: port)
            let issuer = openID.issuers[0]
            openID.refetchWait = .milliseconds(200)
            func token(
                _ kid: String, sub: String = "firebase-uid-1", iss: String? = nil, aud: String = OpenIDTests.audience,
                expires: TimeInterval = 3600, name: String? = "Ada Lovelace"
            ) async throws -> String {
                try await signers.sign(IDClaims(
                    sub: .init(value: sub), iss: .init(value: iss ?? issuer), aud: .init(value: [aud]),
                    exp: .init(value: Date().addingTimeInterval(expires)), iat: .init(value: Date()), name: name), kid: JWKIdentifier(string: kid))
            }
            try await TestServer.run(configure: { $0.openID = openID }) { server in
                func call(_ token: String) async throws -> HTTPResult {
                    try await server.request("GET", "/v1/conversations", token: token)
                }
                func refusal(_ token: String) async throws -> (code: String?, message: String) {
                    let answer = try await call(token)
                    #expect(answer.status == 401)
                    return (answer.errorCode, (try? answer.decode(ErrorJSON.self).error.message) ?? "")
                }
                #expect(try await call(try await token("ec-1")).status == 200)
                #expect(try await call(try await token("rsa-1", sub: "firebase-uid-2")).status == 200)
                #expect(try await server.environment.store.user(id: "firebase-uid-1")?.displayName == "Ada Lovelace")
                // A token without a name keeps the name the user has.
                #expect(try await call(try await token("ec-1", name: nil)).status == 200)
                #expect(try await server.environment.store.user(id: "firebase-uid-1")?.displayName == "Ada Lovelace")

                let wrongIssuer = try await refusal(try await token("ec-1", iss: "https://elsewhere.example.com"))
                #expect(wrongIssuer.code == "invalid_token" && wrongIssuer.message.contains("issuer"), "\(wrongIssuer)")
                let wrongAudience = try await refusal(try await token("ec-1", aud: "another-project"))
                #expect(wrongAudience.code == "invalid_token" && wrongAudience.message.contains("audience"), "\(wrongAudience)")
                let expired = try await refusal(try await token("ec-1", expires: -600))
                #expect(expired.code == "token_expired" && expired.message.contains("ago"), "\(expired)")
                let unknownKid = try await refusal(try await token("ec-9"))
                #expect(unknownKid.code == "invalid_token" && unknownKid.message.contains("no key `ec-9`"), "\(unknownKid)")
                // `none`, and HS256 with the provider's public key as the secret: the algorithm decides nothing.
                let body = Data(#"{"sub":"firebase-uid-1","iss":"\#(issuer)","aud":"\#(Self.audience)","exp":4102444800,"name":"Mallory"}"#.utf8)
                    .base64URLEncodedString()
                let none = "\(Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64URLEncodedString()).\(body)."
                #expect(try await refusal(none).message.contains("alg"))
                let publicPEM = rsaKey.publicKey.pemRepresentation
                let hsHeader = Data(#"{"alg":"HS256","typ":"JWT","kid":"rsa-1"}"#.utf8).base64URLEncodedString()
                let mac = HMAC<SHA256>.authenticationCode(
                    for: Data("\(hsHeader).\(body)".utf8), using: SymmetricKey(data: Data(publicPEM.utf8)))
                let confused = "\(hsHeader).\(body).\(Data(mac).base64URLEncodedString())"
                #expect(try await refusal(confused).code == "invalid_token")

                // The provider rotates: its new key is fetched when a token first names it.
                provider.published.withLockedValue { $0.append(try! Provider.ecJWK(rotated, kid: "ec-2")) }
                try await Task.sleep(for: .milliseconds(300))
                #expect(try await call(try await token("ec-2")).status == 200)

                // The provider goes away: tokens signed by the keys held are still taken.
                await stopProvider()
                let fetchesBefore = provider.fetches.withLockedValue { $0 }
                #expect(try await call(try await token("ec-1", sub: "firebase-uid-3")).status == 200)
                #expect(try await call(try await token("rsa-1", sub: "firebase-uid-4")).status == 200)
                #expect(provider.fetches.withLockedValue { $0 } == fetchesBefore)
            }
        }
    }

    @Test("two issuers: one sub from each is two users (the prefixed issuer's are `prefix:sub`), neither reads the other's chats; a sub of the unprefixed issuer that starts with a prefix is refused")
    func twoIssuers() async throws {
        let (firebase, apple) = (Provider(), Provider())
        let (firebaseKey, appleKey) = (ES256PrivateKey(), ES256PrivateKey())
        firebase.published.withLockedValue { $0 = [try! Provider.ecJWK(firebaseKey, kid: "f-1")] }
        apple.published.withLockedValue { $0 = [try! Provider.ecJWK(appleKey, kid: "a-1")] }
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: firebaseKey, kid: "f-1")
        await signers.add(ecdsa: appleKey, kid: "a-1")
        try await Self.serving(firebase) { firebasePort, _ in
            try await Self.serving(apple) { applePort, _ in
                let (first, second) = ("http://127.0.0.1:\(firebasePort)", "http://127.0.0.1:\(applePort)")
                firebase.issuer.withLockedValue { $0 = first }
                apple.issuer.withLockedValue { $0 = second }
                var openID = OpenIDSettings()
                openID.issuers = [first, second]
                openID.userPrefixes = [second: "apple"]
                openID.audiences = [Self.audience]
                openID.allowPrivate = true
                func token(_ kid: String, issuer: String, sub: String) async throws -> String {
                    try await Self.idToken(signers, kid: kid, issuer: issuer, sub: sub, name: "Same Sub")
                }
                try await TestServer.run(configure: { $0.openID = openID }) { server in
                    let fromFirebase = try await token("f-1", issuer: first, sub: "uid-7")
                    let fromApple = try await token("a-1", issuer: second, sub: "uid-7")
                    _ = try await server.token("bob")
                    let chat = try await server.request(
                        "POST", "/v1/conversations", token: fromFirebase, body: #"{"kind": "direct", "members": ["bob"]}"#)
                    #expect(chat.status == 201, "\(chat.text)")
                    let firebaseList = try await server.request("GET", "/v1/conversations", token: fromFirebase).text
                    let appleList = try await server.request("GET", "/v1/conversations", token: fromApple)
                    #expect(firebaseList.contains("bob") && appleList.status == 200 && !appleList.text.contains("bob"))
                    #expect(try await server.environment.store.user(id: "uid-7") != nil)
                    #expect(try await server.environment.store.user(id: "apple:uid-7") != nil, "the prefixed issuer's user")
                    let posing = try await token("f-1", issuer: first, sub: "apple:uid-7")
                    let refused = try await server.request("GET", "/v1/conversations", token: posing)
                    #expect(refused.status == 401 && refused.errorCode == "invalid_token", "\(refused.text)")
                }
            }
        }
    }

    @Test("a nameless sign-in is a user: the email's local part stands in (in people, the service API, a banner's frame and a push) and never over a name the backend set; with no email, \"Someone\"")
    func namelessUsers() async throws {
        let provider = Provider()
        let key = ES256PrivateKey()
        provider.published.withLockedValue { $0 = [try! Provider.ecJWK(key, kid: "n-1")] }
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: key, kid: "n-1")
        let serviceKey = String(repeating: "s", count: 40)
        try await Self.serving(provider) { port, _ in
            let openID = provider.settings(port: port)
            let issuer = openID.issuers[0]
            func token(_ sub: String, email: String?) async throws -> String {
                try await signers.sign(IDClaims(
                    sub: .init(value: sub), iss: .init(value: issuer), aud: .init(value: [Self.audience]),
                    exp: .init(value: Date().addingTimeInterval(3600)), iat: .init(value: Date()), name: nil, email: email),
                    kid: JWKIdentifier(string: "n-1"))
            }
            try await PushHarness.run(configure: { configuration in
                configuration.openID = openID
                configuration.serviceKeys = try! ServiceKeys([serviceKey])
            }) { push in
                let server = push.server
                let (dana, nobody) = (try await token("uid-dana", email: "dana.lee@example.com"), try await token("uid-nobody", email: nil))
                let bob = try await server.token("bob")
                let phone = PushHarness.apnsToken(0xB0B)
                try await push.register(bob, device: "phone", platform: "apns", pushToken: phone)
                let stream = try await server.stream(bob)
                var frames = FrameReader(stream)
                _ = try await frames.untilReady()
                stream.send(#"{"type": "app", "state": "background"}"#)
                _ = try await frames.drain(stream)

                func post(_ token: String, _ text: String) async throws -> (alert: [String: Any], sender: String?) {
                    let chat = try await server.request("POST", "/v1/conversations", token: token, body: #"{"kind": "direct", "members": ["bob"]}"#)
                    let id = try #require(try JSONSerialization.jsonObject(with: chat.body) as? [String: Any])["id"] as? String
                    let posted = try await server.request(
                        "POST", "/v1/conversations/\(try #require(id))/messages", token: token, body: #"{"id": "\#(text)", "text": "\#(text)"}"#)
                    #expect(posted.status == 201, "\(posted.text)")
                    var frame = try await frames.next()
                    while frame.message?.id != text { frame = try await frames.next() }
                    try await push.fake.wait("the push of \(text)") { _ in push.apns(phone).contains { $0.messageID == text } }
                    let request = try #require(push.apns(phone).first { $0.messageID == text })
                    let alert = try #require((request.json?["aps"] as? [String: Any])?["alert"] as? [String: Any])
                    return (alert, frame.sender?.name)
                }

                let first = try await post(dana, "from-dana")
                #expect(first.sender == "dana.lee", "the frame a banner is made of names her")
                #expect((first.alert["title"] as? String)?.contains("dana.lee") == true, "\(first.alert)")
                let listed = try await server.request("GET", "/v1/conversations", token: bob).text
                #expect(listed.contains(#""id":"uid-dana","name":"dana.lee""#) || listed.contains(#""name":"dana.lee""#), "\(listed)")
                let found = try await server.request("GET", "/v1/service/users/uid-dana", token: serviceKey)
                #expect(found.status == 200 && found.text.contains(#""name":"dana.lee""#), "\(found.text)")

                // The backend names her; her next sign-in (no name, the same email) does not undo it.
                let named = try await server.request("PUT", "/v1/service/users/uid-dana", token: serviceKey, body: #"{"name": "Dana Lee"}"#)
                #expect(named.status == 200)
                let second = try await post(dana, "from-dana-2")
                #expect(second.sender == "Dana Lee" && (second.alert["title"] as? String)?.contains("Dana Lee") == true, "\(second)")

                // Neither a name nor an email: a user all the same, shown as "Someone", never by id.
                let third = try await post(nobody, "from-nobody")
                #expect(third.sender == "", "no name to show: clients say Someone")
                #expect((third.alert["title"] as? String)?.contains("Someone") == true && !(third.alert["title"] as? String ?? "").contains("uid-nobody"), "\(third.alert)")
                let nameless = try await server.request("GET", "/v1/service/users/uid-nobody", token: serviceKey)
                #expect(nameless.status == 200, "\(nameless.text)")
                #expect(try await server.request("GET", "/v1/conversations", token: bob).text.contains(#""id":"uid-nobody""#))
                stream.close()
                _ = try await stream.closed()
            }
        }
    }

    @Test("an issuer's keys are read one by one (an `oct` key beside a good one does not refuse the issuer); a discovery document that redirects is not followed")
    func keysOneByOneNoRedirects() async throws {
        let provider = Provider()
        let key = ES256PrivateKey()
        provider.published.withLockedValue {
            $0 = [#"{"kty": "oct", "kid": "hmac-1", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}"#, try! Provider.ecJWK(key, kid: "ec-1")]
        }
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: key, kid: "ec-1")
        try await Self.serving(provider) { port, _ in
            var openID = provider.settings(port: port)
            let issuer = openID.issuers[0]
            openID.refetchWait = .milliseconds(1)
            let token = try await Self.idToken(signers, kid: "ec-1", issuer: issuer, sub: "uid-1")
            try await TestServer.run(configure: { $0.openID = openID }) { server in
                let answer = try await server.request("GET", "/v1/conversations", token: token)
                #expect(answer.status == 200, "\(answer.text)")
            }
            // A fresh server, and the provider's discovery now redirects: the fetch fails rather than following it.
            provider.redirects.withLockedValue { $0 = true }
            try await TestServer.run(configure: { $0.openID = openID }) { server in
                let refused = try await server.request("GET", "/v1/conversations", token: token)
                #expect(refused.status == 401 && refused.text.contains("302"), "\(refused.text)")
                #expect(provider.detours.withLockedValue { $0 } == 0, "the redirect was not followed")
            }
        }
    }

    @Test("HERALD_OIDC_ISSUER and HERALD_OIDC_AUDIENCE go together; issuers are https on a public host, on this machine or a private network (http too) only with HERALD_OIDC_ALLOW_PRIVATE=1")
    func settings() throws {
        // Webhooks' and Web Push's address policy: an issuer or keys on this machine or a private network (over https
        // or http) only with HERALD_OIDC_ALLOW_PRIVATE=1, which the refusal names; http nowhere else.
        let local: [String: String] = ["HERALD_OIDC_ISSUER": "http://127.0.0.1:9400", "HERALD_OIDC_AUDIENCE": "x"]
        for environment in [
            local, ["HERALD_OIDC_ISSUER": "https://localhost:9400", "HERALD_OIDC_AUDIENCE": "x"],
            ["HERALD_OIDC_ISSUER": "https://10.1.2.3/realms/app", "HERALD_OIDC_AUDIENCE": "x"],
            ["HERALD_OIDC_ISSUER": "https://[fe80::1]/", "HERALD_OIDC_AUDIENCE": "x"],
            ["HERALD_OIDC_ISSUER": "https://idp.example.com", "HERALD_OIDC_AUDIENCE": "x", "HERALD_OIDC_JWKS_URL": "https://169.254.169.254/keys"],
        ] {
            let refusal = #expect(throws: ConfigurationError.self, "\(environment)") { _ = try ServerConfiguration.fromEnvironment(environment) }
            #expect(refusal?.description.contains("HERALD_OIDC_ALLOW_PRIVATE=1") == true, "\(refusal.map { "\($0)" } ?? "")")
            let allowed = try ServerConfiguration.fromEnvironment(environment.merging(["HERALD_OIDC_ALLOW_PRIVATE": "1"]) { $1 })
            #expect(allowed.openID.allowPrivate && allowed.openID.issuers.count == 1)
        }
        for environment in [
            ["HERALD_OIDC_ISSUER": "http://idp.example.com", "HERALD_OIDC_AUDIENCE": "x", "HERALD_OIDC_ALLOW_PRIVATE": "1"],
            local.merging(["HERALD_OIDC_ALLOW_PRIVATE": "yes"]) { $1 },
        ] {
            #expect(throws: ConfigurationError.self, "\(environment)") { _ = try ServerConfiguration.fromEnvironment(environment) }
        }

        let both = try ServerConfiguration.fromEnvironment([
            "HERALD_OIDC_ISSUER": "https://securetoken.google.com/my-app, apple=https://appleid.apple.com",
            "HERALD_OIDC_AUDIENCE": "my-app,com.example.app",
        ])
        #expect(both.openID.issuers == ["https://securetoken.google.com/my-app", "https://appleid.apple.com"])
        #expect(both.openID.userPrefixes == ["https://appleid.apple.com": "apple"])
        #expect(both.openID.audiences == ["my-app", "com.example.app"])
        for environment in [
            // Two issuers, neither with a user id prefix: one's user could be another's.
            ["HERALD_OIDC_ISSUER": "https://securetoken.google.com/my-app, https://appleid.apple.com", "HERALD_OIDC_AUDIENCE": "x"],
            ["HERALD_OIDC_ISSUER": "Apple=https://appleid.apple.com", "HERALD_OIDC_AUDIENCE": "x"],
            ["HERALD_OIDC_ISSUER": "a=https://a.example.com, a=https://b.example.com", "HERALD_OIDC_AUDIENCE": "x"],
            ["HERALD_OIDC_ISSUER": "https://securetoken.google.com/my-app"],
            ["HERALD_OIDC_AUDIENCE": "my-app"],
            ["HERALD_OIDC_ISSUER": "http://idp.example.com", "HERALD_OIDC_AUDIENCE": "my-app"],
            ["HERALD_OIDC_ISSUER": "https://a.example.com,https://b.example.com", "HERALD_OIDC_AUDIENCE": "x",
             "HERALD_OIDC_JWKS_URL": "https://a.example.com/keys"],
        ] {
            #expect(throws: ConfigurationError.self, "\(environment)") { _ = try ServerConfiguration.fromEnvironment(environment) }
        }
    }

    @Test("without HERALD_OIDC_ALLOW_PRIVATE, keys are never fetched from a private address: not from a public name that resolves to one, nor from a jwks_uri a discovery document names there")
    func keysFetchedOnlyFromPublicAddresses() async throws {
        var logger = Logger(label: "oidc-test")
        logger.logLevel = .critical
        // A public name that resolves to this machine: refused before anything connects.
        var publicIssuer = OpenIDSettings()
        publicIssuer.issuers = ["https://idp.example.com"]
        publicIssuer.audiences = [Self.audience]
        let rebound = GuardedHTTP(
            policy: AddressPolicy(allowPrivate: false), configuration: PushHTTP.configuration(tls: .makeClientConfiguration()),
            timeout: .seconds(10), resolver: { _ in [IPAddress("127.0.0.1")!] })
        let verifier = OpenIDVerifier(settings: publicIssuer, logger: logger, http: rebound)
        let refused = await #expect(throws: APIError.self) {
            _ = try await verifier.verify("x.y.z", kid: "k-1", payload: ["iss": "https://idp.example.com"])
        }
        #expect("\(refused.map { "\($0)" } ?? "")".contains("not allowed"), "\(refused.map { "\($0)" } ?? "")")
        await rebound.shutdown()

        // A provider reached by name (here on this machine, through a client that lets it) whose discovery document
        // points the keys at a loopback address: the jwks_uri is held to the issuer's rule, and never fetched.
        let provider = Provider()
        let key = ES256PrivateKey()
        provider.published.withLockedValue { $0 = [try! Provider.ecJWK(key, kid: "ec-1")] }
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: key, kid: "ec-1")
        try await Self.serving(provider) { port, _ in
            provider.issuer.withLockedValue { $0 = "http://127.0.0.1:\(port)" }
            var settings = OpenIDSettings()
            settings.issuers = ["http://idp.example.com:\(port)"]
            settings.audiences = [Self.audience]
            let lenient = GuardedHTTP(
                policy: AddressPolicy(allowPrivate: true), configuration: PushHTTP.configuration(tls: .makeClientConfiguration()),
                timeout: .seconds(10), resolver: { _ in [IPAddress("127.0.0.1")!] })
            let verifier = OpenIDVerifier(settings: settings, logger: logger, http: lenient)
            let token = try await Self.idToken(signers, kid: "ec-1", issuer: settings.issuers[0], sub: "uid-1")
            let refused = await #expect(throws: APIError.self) {
                _ = try await verifier.verify(token, kid: "ec-1", payload: ["iss": settings.issuers[0]])
            }
            let message = refused.map { "\($0)" } ?? ""
            #expect(message.contains("jwks_uri") && message.contains("HERALD_OIDC_ALLOW_PRIVATE=1"), "\(message)")
            #expect(provider.fetches.withLockedValue { $0 } == 0, "the keys were not fetched")
            await lenient.shutdown()
        }
    }

    /// An ID token for `sub` from `issuer`, for this test's audience, signed with `signers`' key `kid`, valid an hour.
    static func idToken(
        _ signers: JWTKeyCollection, kid: String, issuer: String, sub: String, name: String? = "Ada Lovelace"
    ) async throws -> String {
        try await signers.sign(IDClaims(
            sub: .init(value: sub), iss: .init(value: issuer), aud: .init(value: [Self.audience]),
            exp: .init(value: Date().addingTimeInterval(3600)), iat: .init(value: Date()), name: name),
            kid: JWKIdentifier(string: kid))
    }

    /// An RSA key made with openssl (2048 bits).
    static func rsaKey() async throws -> JWTKit.Insecure.RSA.PrivateKey {
        let folder = try makeTemporaryFolder("herald-oidc")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("rsa.pem").path
        let made = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/openssl"), ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", file])
        guard made.status == 0 else { throw TestFailure("openssl genpkey failed: \(made.stderr)") }
        return try JWTKit.Insecure.RSA.PrivateKey(pem: try String(contentsOfFile: file, encoding: .utf8))
    }

    /// Serves `provider`'s discovery document and keys on a free port for the length of `body`, which is given the
    /// port and a stop that takes the provider away (returning once it is gone).
    static func serving<T: Sendable>(
        _ provider: Provider, _ body: (_ port: Int, _ stop: @escaping @Sendable () async -> Void) async throws -> T
    ) async throws -> T {
        let router = Router()
        router.get(".well-known/openid-configuration") { _, _ -> Response in
            let issuer = provider.issuer.withLockedValue { $0 }
            if provider.redirects.withLockedValue({ $0 }) {
                return Response(status: .found, headers: [.location: issuer + "/elsewhere"])
            }
            return Self.json(#"{"issuer": "\#(issuer)", "jwks_uri": "\#(issuer)/jwks"}"#)
        }
        router.get("elsewhere") { _, _ -> Response in
            provider.detours.withLockedValue { $0 += 1 }
            let issuer = provider.issuer.withLockedValue { $0 }
            return Self.json(#"{"issuer": "\#(issuer)", "jwks_uri": "\#(issuer)/jwks"}"#)
        }
        router.get("jwks") { _, _ -> Response in
            provider.fetches.withLockedValue { $0 += 1 }
            return Self.json(provider.jwks)
        }
        var logger = Logger(label: "identity-provider")
        logger.logLevel = .critical
        let (ports, sink) = AsyncStream<Int>.makeStream()
        let (ended, endedSink) = AsyncStream<Void>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { sink.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let services = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        return try await withBackground({
            defer { endedSink.finish() }
            try await services.run()
        }) {
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TestFailure("the identity provider did not start") }
            return try await body(port, {
                await services.triggerGracefulShutdown()
                for await _ in ended {}
            })
        }
    }

    private static func json(_ text: String) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
