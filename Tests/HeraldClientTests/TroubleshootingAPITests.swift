import Foundation
import HeraldClient
import HeraldProtocol
import HeraldTransport
import Testing

/// HeraldAPI's troubleshooting calls as the server sees them: each request's method, path (its ids escaped), query,
/// body and credential, over a transport that records them and answers as the contract says; and the refusals the
/// caller gets back. The server's tests run the same calls against a live server.
@Suite("HeraldAPI's troubleshooting requests")
struct TroubleshootingAPITests {
    @Test("reporting a permission: PUT /v1/devices/{id}/permission with {permission}, the id escaped; a 204 is success")
    func reportPermission() async throws {
        let server = RecordingHTTP { _ in TransportResponse(status: 204, body: Data()) }
        let api = server.api(token: "tok-1")
        try await api.reportPermission(.notAsked, forDevice: "phone 1/a")
        try await api.reportPermission(.provisional, forDevice: "ipad")
        let sent = server.requests
        #expect(sent.map(\.method) == [.PUT, .PUT])
        #expect(sent.map(\.url.absoluteString) == ["http://herald.test/v1/devices/phone%201%2Fa/permission",
                                                   "http://herald.test/v1/devices/ipad/permission"])
        #expect(sent.map(\.bodyText) == [#"{"permission":"not_asked"}"#, #"{"permission":"provisional"}"#])
        #expect(sent[0].header("Authorization") == "Bearer tok-1")
        #expect(sent[0].header("Content-Type") == "application/json")
    }

    @Test("reporting for a device the user does not have: not_found (404)")
    func reportPermissionNotFound() async throws {
        let server = RecordingHTTP { _ in .refusal(404, "not_found", "no such device") }
        let error = await #expect(throws: HeraldAPIError.self) {
            try await server.api().reportPermission(.granted, forDevice: "gone")
        }
        #expect(error?.status == 404 && error?.code == "not_found")
    }

    @Test("registering a device with its permission sends it beside platform and token; without one, no permission key")
    func registerWithPermission() async throws {
        let server = RecordingHTTP { _ in .json(#"{"deviceKey":"hdk_abc"}"#) }
        let api = server.api()
        let registered = try await api.registerDevice("phone", platform: .apns, token: "00ff", permission: .denied)
        #expect(registered.deviceKey == "hdk_abc")
        _ = try await api.registerDevice("phone", platform: .apns, token: "00ff")
        #expect(server.requests.map(\.method) == [.PUT, .PUT])
        #expect(server.requests.map(\.url.path) == ["/v1/devices/phone", "/v1/devices/phone"])
        #expect(server.requests.map(\.bodyText) == [#"{"permission":"denied","platform":"apns","token":"00ff"}"#,
                                                    #"{"platform":"apns","token":"00ff"}"#])
    }

    @Test("a test notification: POST /v1/devices/{id}/test with no body, its answer read")
    func testNotification() async throws {
        let server = RecordingHTTP { _ in
            .json(#"{"device":"phone-1","platform":"apns","outcome":"device_removed","providerID":null,"reason":"BadDeviceToken"}"#)
        }
        let answer = try await server.api().sendTestNotification(toDevice: "phone-1")
        #expect(answer == WireTestNotification(device: "phone-1", platform: .apns, outcome: .deviceRemoved, reason: "BadDeviceToken"))
        #expect(server.requests.map(\.method) == [.POST])
        #expect(server.requests.map(\.url.absoluteString) == ["http://herald.test/v1/devices/phone-1/test"])
        #expect(server.requests.first?.body == nil)
    }

    @Test("too many test notifications: rate_limited (429), with the server's words")
    func testNotificationRateLimited() async throws {
        let server = RecordingHTTP { _ in .refusal(429, "rate_limited", "at most 5 test notifications a minute") }
        let error = await #expect(throws: HeraldAPIError.self) {
            try await server.api().sendTestNotification(toDevice: "phone-1")
        }
        #expect(error == HeraldAPIError(status: 429, code: "rate_limited", message: "at most 5 test notifications a minute"))
    }

    @Test("the check: GET /v1/me/notifications/check; an expired token is renewed and the request made once more")
    func notificationCheckRenewsItsToken() async throws {
        let server = RecordingHTTP { request in
            if request.header("Authorization") == "Bearer old" { return .refusal(401, "token_expired", "expired") }
            return .json("""
                {"checkedAt":"2026-11-28T23:40:00Z",
                 "checks":[{"id":"devices","state":"problem","title":"Devices","detail":"No device can get pushes.","action":"Allow notifications in the app."}],
                 "devices":[]}
                """)
        }
        let api = server.api(token: "old", renew: { "new" })
        let check = try await api.notificationCheck()
        #expect(check.checks.map(\.id) == ["devices"] && check.checks.first?.state == .problem && check.devices.isEmpty)
        #expect(server.requests.map(\.method) == [.GET, .GET])
        #expect(server.requests.map(\.url.absoluteString) == Array(repeating: "http://herald.test/v1/me/notifications/check", count: 2))
        #expect(server.requests.map { $0.header("Authorization") } == ["Bearer old", "Bearer new"])
        #expect(api.configuration.token == "new")
    }

    @Test("a message's trail: GET /v1/me/deliveries with the conversation and the message in the query, every reserved character escaped")
    func deliveries() async throws {
        let server = RecordingHTTP { _ in
            .json("""
                {"conversation":"a&b=c","message":{"id":"m+1 #2","seq":7,"sender":"alice","sentAt":"2026-11-28T23:40:00Z"},
                 "trailHours":24,"members":[{"user":"bob","summary":"confirmed","read":false,"steps":[],"devices":[]}]}
                """)
        }
        let trail = try await server.api().deliveries(ofMessage: "m+1 #2", in: "a&b=c")
        #expect(trail.message.seq == 7 && trail.members.first?.summary == "confirmed")
        let url = try #require(server.requests.first?.url)
        #expect(server.requests.map(\.method) == [.GET])
        #expect(url.absoluteString == "http://herald.test/v1/me/deliveries?conversation=a%26b%3Dc&message=m%2B1%20%232")
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems
        #expect(items == [URLQueryItem(name: "conversation", value: "a&b=c"), URLQueryItem(name: "message", value: "m+1 #2")],
                "the server reads back the ids as they were")
    }

    @Test("a trail the user cannot see: not_found (404); an answer that is not a trail: bad_response")
    func deliveriesRefused() async throws {
        let hidden = RecordingHTTP { _ in .refusal(404, "not_found", "no such message") }
        let error = await #expect(throws: HeraldAPIError.self) {
            try await hidden.api().deliveries(ofMessage: "m", in: "c")
        }
        #expect(error?.code == "not_found" && error?.status == 404)
        let garbled = RecordingHTTP { _ in .json(#"{"conversation":"c"}"#) }
        let unread = await #expect(throws: HeraldAPIError.self) {
            try await garbled.api().deliveries(ofMessage: "m", in: "c")
        }
        #expect(unread?.code == "bad_response")
    }

    @Test("the system's authorization as the server is told it: authorized and ephemeral granted, denied denied, provisional provisional, not determined not_asked")
    func authorizationMapping() {
        let told = NotificationAuthorization.allCases.map { ($0, DevicePermission($0).rawValue) }
        #expect(told.map(\.0) == [.notDetermined, .denied, .authorized, .provisional, .ephemeral])
        #expect(told.map(\.1) == ["not_asked", "denied", "granted", "provisional", "granted"])
    }
}

/// An HTTP transport that keeps every request and answers each with `answer`.
final class RecordingHTTP: HTTPTransport, StreamTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [TransportRequest] = []
    private let answer: @Sendable (TransportRequest) -> TransportResponse

    init(_ answer: @escaping @Sendable (TransportRequest) -> TransportResponse) {
        self.answer = answer
    }

    /// The requests so far, in order.
    var requests: [TransportRequest] {
        lock.withLock { recorded }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        lock.withLock { recorded.append(request) }
        return answer(request)
    }

    /// These tests open no stream.
    func connect(
        to url: URL, maximumMessageSize: Int,
        session: @escaping @Sendable (AsyncThrowingStream<String, any Error>, any StreamWriter) async throws -> Void
    ) async throws -> StreamClosing? {
        throw TransportError(reason: "these tests open no stream")
    }

    /// An API client of `token` (renewed by `renew`) on this transport.
    func api(token: String = "token", renew: (@Sendable () async throws -> String)? = nil) -> HeraldAPI {
        HeraldAPI(configuration: ClientConfiguration(
            server: URL(string: "http://herald.test")!, token: token, renewToken: renew,
            transport: ClientTransport(http: self, stream: self)))
    }
}

extension TransportRequest {
    /// The body as text.
    var bodyText: String? {
        body.map { String(decoding: $0, as: UTF8.self) }
    }

    /// The value of the header `name`.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

extension TransportResponse {
    /// A 200 with `text` as its JSON body.
    static func json(_ text: String) -> TransportResponse {
        TransportResponse(status: 200, body: Data(text.utf8))
    }

    /// A refusal with Herald's error body.
    static func refusal(_ status: Int, _ code: String, _ message: String) -> TransportResponse {
        TransportResponse(status: status, body: Data(#"{"error":{"code":"\#(code)","message":"\#(message)"}}"#.utf8))
    }
}
