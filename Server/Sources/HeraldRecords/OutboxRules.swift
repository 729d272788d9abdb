import Foundation
import HeraldCore

/// A due job of the push outbox as a lease reads it, before ``OutboxRules`` decide what becomes of it.
package struct LeaseCandidate: Hashable, Sendable {
    /// The row.
    package var id: Int64
    /// `alert`, `clear`, `receipt` or `follow`; anything else is a row no one can send.
    package var kind: String
    /// The push's content, as JSON.
    package var content: String
    /// The push service's ticket, for a receipt.
    package var ticket: String?
    /// When it was queued (seconds since 1970).
    package var createdAt: Double
    /// How many times it was tried before.
    package var attempts: Int
    /// When it fell due (seconds since 1970).
    package var due: Double
    /// Whose confirmation it waited for, if any.
    package var coveredBy: String?
    /// Whether that confirmation came: it reached the alert's message.
    package var covered: Bool
    /// Its device; nil when the device is gone.
    package var device: DeviceRegistration?

    /// The candidate in a row of `id`, `kind`, `content`, `ticket`, `created_at`, `attempts`, `due_at`, `covered_by`
    /// and `covered`, going to `device`.
    package init(_ row: some StoredRow, device: DeviceRegistration?) throws {
        id = try row.integer("id")
        kind = try row.text("kind")
        content = try row.text("content")
        ticket = try row.optionalText("ticket")
        createdAt = try row.optionalDouble("created_at") ?? 0
        attempts = Int(try row.optionalInteger("attempts") ?? 0)
        due = try row.optionalDouble("due_at") ?? 0
        coveredBy = try row.optionalText("covered_by")
        covered = try row.bool("covered")
        self.device = device
    }

    /// A candidate of plain values (the rules' tests).
    package init(
        id: Int64, kind: String, content: String, ticket: String? = nil, createdAt: Double = 0, attempts: Int = 0,
        due: Double = 0, coveredBy: String? = nil, covered: Bool = false, device: DeviceRegistration?
    ) {
        self.id = id
        self.kind = kind
        self.content = content
        self.ticket = ticket
        self.createdAt = createdAt
        self.attempts = attempts
        self.due = due
        self.coveredBy = coveredBy
        self.covered = covered
        self.device = device
    }
}

/// The push outbox's rules, decided once for both stores (docs/push.md, "The outbox"), as ``GroupRules`` decides a
/// change to a group: a store reads the rows in its transaction, asks the rules, and carries out what they say in
/// its own SQL. Nothing here reads a database or a clock.
package enum OutboxRules {
    /// What a lease does with the due jobs it read.
    package struct Lease: Equatable, Sendable {
        /// A device shown a conversation's messages by a push up to `seq` (`push_shown`, the furthest kept): a read
        /// elsewhere clears it there from then on.
        package struct Shown: Hashable, Sendable {
            package var userID: String
            package var deviceID: String
            package var conversationID: String
            package var seq: Int64
        }

        /// A device's key may read message `seq` from `grantedAt` on (`push_grants`), and an edit or a deletion of
        /// it follows it to the device, shown as `shownAs`.
        package struct Grant: Hashable, Sendable {
            package var userID: String
            package var deviceID: String
            package var seq: Int64
            package var grantedAt: Date
            package var shownAs: String?
        }

        /// The jobs to send, the earliest due first (ties by row): each is leased.
        package var jobs: [PushJob] = []
        /// The rows to delete: nothing to send.
        package var dropped: [Int64] = []
        /// The alerts' devices, each now showing its conversation.
        package var shown: [Shown] = []
        /// The alerts' grants.
        package var grants: [Grant] = []
        /// The trail's steps of the jobs held back: the confirmation they waited for came, or their message was
        /// deleted (``TrailStep``; written when the trail is on).
        package var steps: [TrailStep] = []
    }

    /// What becomes of `candidates` leased at `now`. A job is dropped when it cannot be read (an unknown kind,
    /// content that does not decode), its device is gone, the confirmation it waited for came, or its message was
    /// deleted while it waited; every other job is sent. A sent alert is shown from the moment it may be (a read
    /// that comes while it is in flight still clears it) and granted under the identifier it is shown as.
    package static func lease(_ candidates: [LeaseCandidate], now: Date) -> Lease {
        var lease = Lease()
        let decoder = JSONDecoder()
        for candidate in candidates.sorted(by: { ($0.due, $0.id) < ($1.due, $1.id) }) {
            guard let kind = PushJob.Kind(rawValue: candidate.kind),
                  let device = candidate.device,
                  let content = try? decoder.decode(PushContent.self, from: Data(candidate.content.utf8)),
                  !candidate.covered, !content.isDeletedInFlight
            else {
                lease.dropped.append(candidate.id)
                if let kind = PushJob.Kind(rawValue: candidate.kind), kind != .clear, let device = candidate.device,
                   let content = try? decoder.decode(PushContent.self, from: Data(candidate.content.utf8)) {
                    lease.steps.append(TrailStep(
                        conversationID: content.conversationID, seq: content.seq, userID: device.userID,
                        deviceID: device.id, at: now, kind: candidate.covered ? .confirmed : .dropped,
                        reasons: kind == .follow ? [.followUp] : [],
                        detail: candidate.covered ? nil : "its message was deleted before it went"))
                }
                continue
            }
            if kind == .alert {
                lease.shown.append(.init(
                    userID: device.userID, deviceID: device.id, conversationID: content.conversationID, seq: content.seq))
                lease.grants.append(.init(
                    userID: device.userID, deviceID: device.id, seq: content.seq, grantedAt: now,
                    shownAs: content.notificationID))
            }
            lease.jobs.append(PushJob(
                id: candidate.id, kind: kind, device: device, content: content, ticket: candidate.ticket,
                createdAt: Date(timeIntervalSince1970: candidate.createdAt), attempts: candidate.attempts,
                coveredBy: candidate.coveredBy.flatMap(PushCover.init)))
        }
        return lease
    }

    /// The finished jobs remembered for their device's next catch-up (`push_sent`): the alerts the push service took.
    package static func remembered(_ finished: [FinishedPush]) -> [PushJob] {
        finished.filter { $0.sent && $0.job.kind == .alert }.map(\.job)
    }

    /// What a read or a departure does to one member's pushes of one conversation.
    package struct Clearing: Hashable, Sendable {
        /// Their alerts still waiting (not leased) up to this seq are dropped.
        package var dropAlertsThrough: Int64
        /// Their devices shown the conversation's messages up to this seq get a clear.
        package var shownThrough: Int64
        /// The device that needs none: the one that read.
        package var except: String?
        /// The read marker the clears carry.
        package var marker: Int64
        /// When the clears are due.
        package var due: Date

        /// The clears to `devices` (those that were shown the messages, but ``except``): a silent push each, with
        /// the marker and the member's badge as it is now.
        package func clears(of conversationID: String, for userID: String, on devices: [String], badge: Int) -> [NewPushJob] {
            let content = PushContent(clear: conversationID, readUpTo: marker, badge: badge)
            return devices.filter { $0 != except }.map {
                NewPushJob(kind: .clear, userID: userID, deviceID: $0, content: content, due: due)
            }
        }
    }

    /// A member read the conversation up to `readSeq` on `device`: what waited up to there is dropped, and the
    /// member's other devices that were shown its messages up to there are cleared at `due`.
    package static func afterRead(readSeq: Int64, on device: String?, due: Date) -> Clearing {
        Clearing(dropAlertsThrough: readSeq, shownThrough: readSeq, except: device, marker: readSeq, due: due)
    }

    /// A member left the conversation at `seq` (removed, left, erased, or it was deleted): everything of it waiting
    /// for them is dropped, and each of their devices shown its messages is cleared at `due`, with `seq` as marker.
    package static func afterLeaving(at seq: Int64, due: Date) -> Clearing {
        Clearing(dropAlertsThrough: .max, shownThrough: .max, except: nil, marker: seq, due: due)
    }
}
