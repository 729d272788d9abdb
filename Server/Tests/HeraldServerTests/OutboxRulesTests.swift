import Foundation
import HeraldCore
@testable import HeraldRecords
@testable import HeraldServer
import Testing

/// The push outbox's rules, decided once above storage: run here on plain values, without a database (both stores
/// carry them out; the push suites run them on both).
@Suite("Outbox rules")
struct OutboxRulesTests {
    static let phone = DeviceRegistration(id: "phone", userID: "bob", platform: .apns, token: "t1")
    static let now = Date(timeIntervalSince1970: 1_000)

    /// An alert's content for message `m<seq>` of `team`, as the outbox keeps it.
    static func alert(seq: Int64) -> String {
        let incoming = IncomingMessage(
            message: Message(
                id: "m\(seq)", conversationID: "team", senderID: "ann", text: "hi", sentAt: now, seq: seq),
            conversation: Conversation(id: "team", kind: .group, title: "Team"),
            sender: Person(id: "ann", displayName: "Ann"))
        return json(PushContent(alert: incoming, badge: 2, viewer: "bob"))
    }

    static func json(_ content: PushContent) -> String {
        String(decoding: try! JSONEncoder().encode(content), as: UTF8.self)
    }

    @Test("a lease sends what is readable, due first; drops the unreadable, the confirmed, the deleted and the deviceless")
    func lease() throws {
        let clear = Self.json(PushContent(clear: "team", readUpTo: 4, badge: 0))
        let deleted = PushContent.deletedInFlight("team", messageID: "m6", seq: 6)
        let lease = OutboxRules.lease([
            LeaseCandidate(id: 1, kind: "alert", content: Self.alert(seq: 5), due: 20, device: Self.phone),
            LeaseCandidate(id: 2, kind: "clear", content: clear, due: 10, device: Self.phone),
            LeaseCandidate(id: 3, kind: "shout", content: clear, due: 10, device: Self.phone),
            LeaseCandidate(id: 4, kind: "alert", content: "{not json", due: 10, device: Self.phone),
            LeaseCandidate(id: 5, kind: "alert", content: Self.alert(seq: 7), due: 10, coveredBy: "member", covered: true,
                           device: Self.phone),
            LeaseCandidate(id: 6, kind: "alert", content: deleted, due: 10, device: Self.phone),
            LeaseCandidate(id: 7, kind: "alert", content: Self.alert(seq: 8), due: 10, device: nil),
            LeaseCandidate(id: 8, kind: "alert", content: Self.alert(seq: 9), due: 20, coveredBy: "device", device: Self.phone),
        ], now: Self.now)
        #expect(lease.jobs.map(\.id) == [2, 1, 8], "the earliest due first, ties by row")
        #expect(lease.dropped.sorted() == [3, 4, 5, 6, 7])
        #expect(lease.jobs.map(\.kind) == [.clear, .alert, .alert])
        #expect(lease.jobs.last?.coveredBy == .device, "an alert that waited in vain says for whom")
        #expect(lease.jobs.first?.device == Self.phone)
    }

    @Test("a leased alert shows its conversation on its device and grants its message under its identifier; nothing else does")
    func shownAndGranted() throws {
        let follow = Self.json(PushContent.followUp(.edited, of: "team", messageID: "m5", seq: 5, shownAs: "team:m5", badge: 1))
        let lease = OutboxRules.lease([
            LeaseCandidate(id: 1, kind: "alert", content: Self.alert(seq: 5), device: Self.phone),
            LeaseCandidate(id: 2, kind: "follow", content: follow, device: Self.phone),
            LeaseCandidate(id: 3, kind: "clear", content: Self.json(PushContent(clear: "team", readUpTo: 5, badge: 0)),
                           device: Self.phone),
        ], now: Self.now)
        #expect(lease.shown == [.init(userID: "bob", deviceID: "phone", conversationID: "team", seq: 5)])
        let shownAs = try #require(lease.jobs.first?.content.notificationID)
        #expect(lease.grants == [.init(userID: "bob", deviceID: "phone", seq: 5, grantedAt: Self.now, shownAs: shownAs)])
    }

    @Test("of finished jobs, only the alerts the service took are remembered for the catch-up")
    func remembered() throws {
        let jobs = OutboxRules.lease([
            LeaseCandidate(id: 1, kind: "alert", content: Self.alert(seq: 5), device: Self.phone),
            LeaseCandidate(id: 2, kind: "alert", content: Self.alert(seq: 6), device: Self.phone),
            LeaseCandidate(id: 3, kind: "clear", content: Self.json(PushContent(clear: "team", readUpTo: 6, badge: 0)),
                           device: Self.phone),
        ], now: Self.now).jobs
        let finished = [FinishedPush(job: jobs[0], sent: true), FinishedPush(job: jobs[1], sent: false),
                        FinishedPush(job: jobs[2], sent: true)]
        #expect(OutboxRules.remembered(finished).map(\.id) == [1])
    }

    @Test("a read drops what waited up to the marker and clears the other devices; leaving drops everything")
    func clearing() throws {
        let due = Self.now.addingTimeInterval(2)
        let read = OutboxRules.afterRead(readSeq: 9, on: "laptop", due: due)
        #expect(read.dropAlertsThrough == 9 && read.shownThrough == 9 && read.except == "laptop")
        let clears = read.clears(of: "team", for: "bob", on: ["phone", "laptop", "tablet"], badge: 3)
        #expect(clears.map(\.deviceID) == ["phone", "tablet"], "never the device that read")
        #expect(clears.allSatisfy { $0.kind == .clear && $0.due == due && $0.userID == "bob" })
        #expect(clears.first?.content == PushContent(clear: "team", readUpTo: 9, badge: 3))

        let left = OutboxRules.afterLeaving(at: 12, due: Self.now)
        #expect(left.dropAlertsThrough == .max && left.shownThrough == .max && left.except == nil)
        #expect(left.clears(of: "team", for: "bob", on: ["phone"], badge: 0).first?.content
            == PushContent(clear: "team", readUpTo: 12, badge: 0), "the clear carries where they left")
    }
}
