import Foundation
import HeraldClient
import HeraldProtocol
import HeraldTransport
import Testing

/// A device's push keys as `PUT /v1/devices/{id}` sends them (spec of issue 60): `"keys": {"p256dh", "auth"}` beside
/// platform and token, nothing when there are none, and the server's refusals of them.
@Suite("HeraldAPI registers a device's push keys")
struct PushKeysAPITests {
    static let keys = WirePushKeys(
        p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        auth: "BTBZMqHH6r4Tts7J_aSIgg")

    @Test("with keys: {keys: {auth, p256dh}} beside platform and token; without them, no keys key")
    func registerWithKeys() async throws {
        let server = RecordingHTTP { _ in .json(#"{"deviceKey":"hdk_abc"}"#) }
        let api = server.api()
        let registered = try await api.registerDevice("phone", platform: .apns, token: "00ff", keys: Self.keys)
        #expect(registered.deviceKey == "hdk_abc")
        _ = try await api.registerDevice("phone", platform: .fcm, token: "f-1", permission: .granted, keys: Self.keys)
        _ = try await api.registerDevice("phone", platform: .apns, token: "00ff")
        #expect(server.requests.map(\.method) == [.PUT, .PUT, .PUT])
        #expect(server.requests.map(\.url.path) == ["/v1/devices/phone", "/v1/devices/phone", "/v1/devices/phone"])
        let keys = #""keys":{"auth":"BTBZMqHH6r4Tts7J_aSIgg","p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"}"#
        #expect(server.requests.map(\.bodyText) == [
            #"{"# + keys + #","platform":"apns","token":"00ff"}"#,
            #"{"# + keys + #","permission":"granted","platform":"fcm","token":"f-1"}"#,
            #"{"platform":"apns","token":"00ff"}"#,
        ])
    }

    @Test("bad keys: invalid_request (400); no keys where the server requires them: encryption_required (400)")
    func refusals() async throws {
        let bad = RecordingHTTP { _ in .refusal(400, "invalid_request", "keys.p256dh is not a P-256 public key") }
        let badError = await #expect(throws: HeraldAPIError.self) {
            try await bad.api().registerDevice("phone", platform: .apns, token: "00ff", keys: WirePushKeys(p256dh: "x", auth: "y"))
        }
        #expect(badError?.status == 400 && badError?.code == "invalid_request")

        let required = RecordingHTTP { _ in .refusal(400, "encryption_required", "this server sends encrypted pushes only") }
        let requiredError = await #expect(throws: HeraldAPIError.self) {
            try await required.api().registerDevice("phone", platform: .apns, token: "00ff")
        }
        #expect(requiredError?.status == 400 && requiredError?.code == "encryption_required")
    }
}
