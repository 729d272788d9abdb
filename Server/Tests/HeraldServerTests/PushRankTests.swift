import Foundation
import HeraldCore
@testable import HeraldRecords
@testable import HeraldServer
import Testing

/// How pushes rank per kind (docs/push.md, "How pushes rank"), as each provider sends it: the table below is the
/// docs' table, row for row.
@Suite("Push ranking", .timeLimit(.minutes(1)))
struct PushRankTests {
    /// One row: what APNs, FCM and Expo are told of a kind of push.
    struct Row: CustomTestStringConvertible {
        var kind: PushRank.Kind
        /// APNs `relevance-score`, nil: none.
        var relevance: Double?
        /// APNs and Expo `interruption-level`, nil: none.
        var interruption: String?
        /// APNs `apns-priority`.
        var apnsPriority: String
        /// FCM `android.priority` and Expo `priority` (Web Push `urgency`: `high` or `normal` alike).
        var priority: String
        /// FCM, Expo and APNs lifetime, in seconds.
        var lifetime: Int
        var testDescription: String { kind.rawValue }
    }

    /// The server's maximum age in this table: two days, so a clear's day shows.
    static let maxAge: Duration = .seconds(2 * 24 * 3600)

    static let table: [Row] = [
        Row(kind: .mention, relevance: 1, interruption: "active", apnsPriority: "10", priority: "high", lifetime: 172_800),
        Row(kind: .message, relevance: 0.5, interruption: "active", apnsPriority: "10", priority: "high", lifetime: 172_800),
        Row(kind: .quiet, relevance: 0.5, interruption: "passive", apnsPriority: "5", priority: "normal", lifetime: 172_800),
        Row(kind: .burst, relevance: 0, interruption: "passive", apnsPriority: "5", priority: "normal", lifetime: 172_800),
        Row(kind: .edit, relevance: 0.5, interruption: "passive", apnsPriority: "5", priority: "normal", lifetime: 172_800),
        Row(kind: .deletion, relevance: 0, interruption: "passive", apnsPriority: "5", priority: "normal", lifetime: 172_800),
        Row(kind: .clear, relevance: nil, interruption: nil, apnsPriority: "5", priority: "normal", lifetime: 86_400),
        Row(kind: .test, relevance: 1, interruption: "active", apnsPriority: "10", priority: "high", lifetime: 900),
    ]

    /// A job of `kind` to a device of Bob's, about a message in a group (or, for ``PushRank/Kind/mention``, a direct
    /// chat).
    static func job(_ kind: PushRank.Kind, created: Date) -> PushJob {
        let conversation = Conversation(id: "c", kind: kind == .mention ? .direct : .group, title: "Team")
        let incoming = IncomingMessage(
            message: Message(id: "m", conversationID: "c", senderID: "ann", text: "hi", sentAt: created, seq: 7),
            conversation: conversation, sender: Person(id: "ann", displayName: "Ann"))
        var content = PushContent(alert: incoming, badge: 2, viewer: "bob", quiet: [.quiet, .burst].contains(kind))
        var jobKind = PushJob.Kind.alert
        switch kind {
        case .burst: content.replaces = "herald-1"; content.count = 2
        case .edit: content = .followUp(.edited, of: "c", messageID: "m", seq: 7, shownAs: "herald-7", badge: 2, words: content)
        case .deletion: content = .followUp(.deleted, of: "c", messageID: "m", seq: 7, shownAs: "herald-7", badge: 2)
        case .clear: content = PushContent(clear: "c", readUpTo: 7, badge: 0)
        case .test: content = .test(badge: 2)
        case .mention, .message, .quiet: break
        }
        if kind == .edit || kind == .deletion { jobKind = .follow }
        if kind == .clear { jobKind = .clear }
        let device = DeviceRegistration(id: "phone", userID: "bob", platform: .apns, token: String(repeating: "a", count: 64))
        return PushJob(id: 1, kind: jobKind, device: device, content: content, createdAt: created, attempts: 0)
    }

    @Test("each kind's relevance, interruption level, priority and lifetime on APNs, FCM, Expo and Web Push", arguments: table)
    func ranks(row: Row) async throws {
        let created = Date()
        let job = Self.job(row.kind, created: created)
        #expect(PushRank(job, maxAge: Self.maxAge).kind == row.kind)
        let expiry = String(Int(created.timeIntervalSince1970) + row.lifetime)
        func near(_ ttl: Any?) -> Bool {
            let seconds = (ttl as? Int) ?? (ttl as? String).flatMap { Int($0.dropLast()) } ?? -1
            return (row.lifetime - 5...row.lifetime).contains(seconds)
        }

        // APNs.
        let aps = try #require(
            (try JSONSerialization.jsonObject(with: APNsProvider.payload(for: job, maxAge: Self.maxAge)) as? [String: Any])?["aps"]
                as? [String: Any])
        #expect(aps["relevance-score"] as? Double == row.relevance)
        #expect(aps["interruption-level"] as? String == row.interruption)
        #expect((aps["sound"] != nil) == (row.interruption == "active"), "a sound only for what rings")
        let headers = Dictionary(uniqueKeysWithValues: APNsProvider.headers(for: job, maxAge: Self.maxAge))
        #expect(headers["apns-priority"] == row.apnsPriority && headers["apns-expiration"] == expiry)

        // FCM: Android's priority and lifetime, and the same APNs fields for iOS apps on FCM.
        let message = try #require(
            (try JSONSerialization.jsonObject(with: FCMProvider.body(for: job, maxAge: Self.maxAge)) as? [String: Any])?["message"]
                as? [String: Any])
        let android = try #require(message["android"] as? [String: Any])
        #expect(android["priority"] as? String == row.priority)
        #expect(near(android["ttl"]), "FCM ttl \(android["ttl"] ?? "none")")
        let apns = try #require(message["apns"] as? [String: Any])
        #expect((apns["headers"] as? [String: String])?["apns-priority"] == row.apnsPriority)
        #expect((apns["headers"] as? [String: String])?["apns-expiration"] == expiry)
        let fcmAps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
        #expect(fcmAps?["relevance-score"] as? Double == (job.showsAlert ? row.relevance : nil))
        #expect(fcmAps?["interruption-level"] as? String == (job.showsAlert ? row.interruption : nil))

        // Web Push: urgency and TTL.
        let web = Dictionary(uniqueKeysWithValues: WebPushProvider.headers(for: job, maxAge: Self.maxAge))
        #expect(web["urgency"] == (row.priority == "high" ? "high" : "normal") && near(web["ttl"].flatMap { Int($0) }))

        // Expo.
        let http = try PushHTTP(caFile: nil)
        let expo = ExpoProvider(url: "https://exp.host", accessToken: nil, http: http, maxAge: Self.maxAge, concurrency: 1)
            .message(for: job)
        await http.shutdown()
        #expect(expo["priority"] as? String == row.priority)
        #expect(near(expo["ttl"]), "Expo ttl \(expo["ttl"] ?? "none")")
        let shows = job.showsAlert && job.content.follows == nil
        #expect(expo["interruptionLevel"] as? String == (shows ? row.interruption : nil))
    }

    @Test("the rank is the push's own, whatever the services are told: a mention keeps its rank with its words withheld")
    func withheld() {
        var job = Self.job(.mention, created: Date())
        job.content.withholdAll()
        #expect(PushRank(job, maxAge: Self.maxAge).kind == .mention, "a direct chat's push, withheld, is still ranked a mention")
        var group = Self.job(.message, created: Date())
        group.content.withholdAll()
        #expect(PushRank(group, maxAge: Self.maxAge).kind == .message && group.content.data["isGroup"] == nil)
        group.content.mentioned = true
        #expect(group.content.data["mentioned"] == nil, "withheld, it says no more")
        #expect(PushRank(group, maxAge: Self.maxAge).relevance == 1)
        group.content.timeSensitive = true
        #expect(PushRank(group, maxAge: Self.maxAge).interruption == "time-sensitive")
    }
}
