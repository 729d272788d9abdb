import Foundation
import HeraldClient
import HeraldCore
import HeraldProtocol
import HeraldTestSupport
import Testing

/// HeraldAPI's troubleshooting calls (issue 59) against a live server: a device's permission reported, a test
/// notification, the notification check, one's own delivery trail of a message.
@Suite("HeraldAPI's troubleshooting, against a live server", .timeLimit(.minutes(3)))
struct TroubleshootingClientTests {
    /// An APNs device token's shape: 64 hex digits.
    static let apnsToken = String(repeating: "00ff", count: 16)

    @Test("a device's permission, given at registration and reported after, is listed with when it was last seen; a device the user does not have is not_found",
          arguments: TestTransport.allCases)
    func reportPermission(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let bob = APIClientTests.api(port: server.port, token: try await server.token("bob"), transport)
            try await bob.registerDevice("bob-phone", platform: .apns, token: Self.apnsToken, permission: .notAsked)
            let registered = try #require(try await bob.devices().first)
            #expect(registered.id == "bob-phone" && registered.permission == .notAsked && registered.lastSeen != nil)

            try await bob.reportPermission(.provisional, forDevice: "bob-phone")
            let reported = try #require(try await bob.devices().first)
            #expect(reported.permission == .provisional)
            #expect(try #require(reported.lastSeen) >= #require(registered.lastSeen))

            let missing = await APIClientTests.refusal { try await bob.reportPermission(.granted, forDevice: "no-such-device") }
            #expect(missing?.status == 404 && missing?.code == "not_found")
        }
    }

    @Test("a test notification on a server without APNs: no_provider, the reason naming the setting; another user's device is not_found; the sixth in a minute is rate_limited",
          arguments: TestTransport.allCases)
    func testNotification(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let bob = APIClientTests.api(port: server.port, token: try await server.token("bob"), transport)
            let alice = APIClientTests.api(port: server.port, token: try await server.token("alice"), transport)
            try await bob.registerDevice("bob-phone", platform: .apns, token: Self.apnsToken)

            let answer = try await bob.sendTestNotification(toDevice: "bob-phone")
            #expect(answer.device == "bob-phone" && answer.platform == .apns)
            #expect(answer.outcome == .noProvider && answer.providerID == nil)
            #expect(answer.reason?.contains("HERALD_APNS") == true, "\(answer.reason ?? "no reason")")

            let foreign = await APIClientTests.refusal { _ = try await alice.sendTestNotification(toDevice: "bob-phone") }
            #expect(foreign?.status == 404 && foreign?.code == "not_found")

            for _ in 2...5 { _ = try await bob.sendTestNotification(toDevice: "bob-phone") }
            let sixth = await APIClientTests.refusal { _ = try await bob.sendTestNotification(toDevice: "bob-phone") }
            #expect(sixth?.status == 429 && sixth?.code == "rate_limited")
        }
    }

    @Test("the check: the seven checks in order, each with words for people; the device with the permission it reported, a denial a problem",
          arguments: TestTransport.allCases)
    func notificationCheck(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let bob = APIClientTests.api(port: server.port, token: try await server.token("bob"), transport)
            try await bob.registerDevice("bob-phone", platform: .apns, token: Self.apnsToken)
            try await bob.reportPermission(.denied, forDevice: "bob-phone")

            let check = try await bob.notificationCheck()
            #expect(check.checks.map(\.id) == ["devices", "permission", "level", "snooze", "quiet_hours", "pushes", "confirmations"])
            #expect(check.checks.allSatisfy { !$0.title.isEmpty && !$0.detail.isEmpty })
            let permission = try #require(check.checks.first { $0.id == "permission" })
            #expect(permission.state == .problem && permission.action != nil, "\(permission)")
            #expect(check.devices.map(\.id) == ["bob-phone"])
            #expect(check.devices.first?.permission == .denied && check.devices.first?.connected == false)
        }
    }

    @Test("one's own trail of a message: the message, oneself alone among the members, one's device's step; a message one cannot see is message_not_found, and for someone never a member not_a_member",
          arguments: TestTransport.allCases)
    func deliveries(_ transport: TestTransport) async throws {
        try await TestServer.run { server in
            let alice = APIClientTests.api(port: server.port, token: try await server.token("alice"), transport)
            let bob = APIClientTests.api(port: server.port, token: try await server.token("bob"), transport)
            let charlie = APIClientTests.api(port: server.port, token: try await server.token("charlie"), transport)
            try await bob.registerDevice("bob-phone", platform: .apns, token: Self.apnsToken)
            let chat = try await alice.createConversation(kind: .group, title: "Plans", members: ["bob"])
            let message = try await alice.postMessage(in: chat.id, text: "Lunch?")

            // The push decision is made after the post's answer: its step comes when it is made.
            var trail = try await bob.deliveries(ofMessage: message.id, in: chat.id)
            try await eventually("Bob's phone's step", detail: { "\(trail)" }) {
                trail = try await bob.deliveries(ofMessage: message.id, in: chat.id)
                return trail.members.first?.devices.isEmpty == false
            }
            #expect(trail.conversation == chat.id)
            #expect(trail.message.id == message.id && trail.message.seq == message.seq && trail.message.sender == "alice")
            #expect(trail.trailHours == 24)
            #expect(trail.members.map(\.user) == ["bob"], "one sees one's own part only")
            let part = try #require(trail.members.first)
            #expect(!part.read && part.summary == "not_pushed")
            #expect(part.devices.map(\.id) == ["bob-phone"] && part.devices.first?.platform == .apns)
            #expect(part.devices.first?.steps.map(\.step) == ["skipped"])
            #expect(part.devices.first?.steps.first?.reasons == ["no_provider"], "this server has no APNs settings")

            let own = try await alice.deliveries(ofMessage: message.id, in: chat.id)
            #expect(own.members.map(\.user) == ["alice"] && own.members.first?.summary == "own")

            let dana = APIClientTests.api(port: server.port, token: try await server.token("dana"), transport)
            try await alice.addMembers(["dana"], to: chat.id, history: .none)
            let before = await APIClientTests.refusal { _ = try await dana.deliveries(ofMessage: message.id, in: chat.id) }
            #expect(before?.status == 404 && before?.code == "message_not_found", "from before she joined, without the history")
            let outsider = await APIClientTests.refusal { _ = try await charlie.deliveries(ofMessage: message.id, in: chat.id) }
            #expect(outsider?.status == 403 && outsider?.code == "not_a_member")
            let unknown = await APIClientTests.refusal { _ = try await bob.deliveries(ofMessage: "no-such-message", in: chat.id) }
            #expect(unknown?.status == 404 && unknown?.code == "message_not_found")
        }
    }
}
