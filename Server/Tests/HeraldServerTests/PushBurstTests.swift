import Foundation
@testable import HeraldServer
import Testing

/// One interruption per burst (docs/push.md, "Bursts"): what the push services receive when a group is busy.
@Suite("Push bursts", .timeLimit(.minutes(3)))
struct PushBurstTests {
    @Test("HERALD_PUSH_BURST_WINDOW: seconds, 60 by default, 0 turns bursts off")
    func configuration() throws {
        #expect(try ServerConfiguration.fromEnvironment([:]).push.burstWindow == .seconds(60))
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_PUSH_BURST_WINDOW": "0"]).push.burstWindow == .zero)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["HERALD_PUSH_BURST_WINDOW": "soon"]) }
    }

    @Test("20 messages to an away member: one alerting push per device, 19 silent replacements with the count; a mention alerts; a read ends the burst")
    func burst() async throws {
        try await PushHarness.run(configure: { $0.push.localizationKeys = true }) { push in
            let server = push.server
            let (alice, bob) = try await (server.token("alice", name: "Alice"), server.token("bob", name: "Bob"))
            let team = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob"])
            let phone = PushHarness.apnsToken(4)
            try await push.register(bob, device: "phone", platform: "apns", pushToken: phone)
            try await push.register(bob, device: "pixel", platform: "fcm", pushToken: "fcm-burst-pixel")
            var seqs: [Int64] = []
            for index in 1...20 {
                seqs.append(try await server.post(alice, to: team, id: "m\(index)", text: "message \(index)").seq)
            }
            func fcm() -> [[String: Any]] {
                push.fake.requests(to: "/v1/projects").compactMap { $0.json?["message"] as? [String: Any] }
                    .filter { $0["token"] as? String == "fcm-burst-pixel" && $0["notification"] != nil }
            }
            _ = try await push.fake.wait("20 pushes to each device") { _ in push.apns(phone).count == 20 && fcm().count == 20 }
            let first = "herald-\(seqs[0])"

            // APNs: the first alerts; the rest are passive, under the first's collapse id, with the count.
            let apns = push.apns(phone)
            let sounding = apns.filter { ($0.json?["aps"] as? [String: Any])?["sound"] != nil }
            #expect(sounding.map(\.messageID) == ["m1"], "one sound for the burst")
            #expect(Set(apns.map { $0.headers["apns-collapse-id"] }) == [first], "every push replaces the first")
            #expect(Set(apns.map { $0.headers["apns-id"] }).count == 20, "each its own apns-id")
            for request in apns where request.messageID != "m1" {
                let aps = try #require(request.json?["aps"] as? [String: Any])
                #expect(aps["interruption-level"] as? String == "passive")
                let count = try #require((request.json?["count"] as? String).flatMap { Int($0) })
                let alert = try #require(aps["alert"] as? [String: Any])
                #expect(alert["subtitle"] as? String == "\(count) new messages")
                #expect(alert["subtitle-loc-key"] as? String == "HERALD_NEW_MESSAGES" && alert["subtitle-loc-args"] as? [String] == [String(count)])
                #expect(alert["body"] as? String == "Alice: message \(count)", "the latest text")
            }
            #expect(Set(apns.compactMap { $0.json?["count"] as? String }) == Set((2...20).map(String.init)))

            // FCM: the same tag; one at high priority, the rest low and silent.
            let android = fcm().compactMap { $0["android"] as? [String: Any] }
            #expect(Set(android.compactMap { ($0["notification"] as? [String: Any])?["tag"] as? String }) == [first])
            #expect(android.filter { $0["priority"] as? String == "high" }.count == 1)
            #expect(android.filter { ($0["notification"] as? [String: Any])?["default_sound"] as? Bool == false }.count == 19)

            // A mention inside the burst alerts, still replacing.
            let mention = try await server.request(
                "POST", "/v1/conversations/\(team)/messages", token: alice,
                body: #"{"id": "named", "text": "@Bob are you there?", "mentions": ["bob"]}"#)
            #expect(mention.status == 201, "\(mention.text)")
            let named = try #require(try await push.fake.wait("the mention's push") { _ in
                push.apns(phone).contains { $0.messageID == "named" }
            }.last { $0.messageID == "named" })
            #expect((named.json?["aps"] as? [String: Any])?["sound"] as? String == "default")
            #expect(named.headers["apns-collapse-id"] == first && named.json?["count"] as? String == "21")

            // Bob reads: the burst ends, and the next message alerts under its own identifier.
            let read = try await server.request(
                "POST", "/v1/conversations/\(team)/read", token: bob, body: #"{"upTo": \#(seqs[19] + 1)}"#)
            #expect(read.status == 204, "\(read.text)")
            let next = try await server.post(alice, to: team, id: "after", text: "after the read")
            let after = try #require(try await push.fake.wait("the push after the read") { _ in
                push.apns(phone).contains { $0.messageID == "after" }
            }.last { $0.messageID == "after" })
            #expect(after.headers["apns-collapse-id"] == "herald-\(next.seq)")
            #expect((after.json?["aps"] as? [String: Any])?["sound"] as? String == "default" && after.json?["count"] == nil)
        }
    }
}
