import Foundation
import HeraldCore

/// The durable side of push delivery, kept by the store beside the messages (docs/push.md, "The outbox").
///
/// A job is written before it is sent and deleted only once the push service answered (or it was given up), so a
/// server that dies loses none; every job is unique by what it is about and the device, so none is queued twice.
public protocol PushOutbox: Sendable {
    /// For each query, in one trip to the database: the devices of its conversation's members among its candidates
    /// who have not read it up to its `seq` (a read can come before the decision), each with its own level and
    /// settings (the policy decides on them) and its
    /// owner's badge (their unread messages over all their conversations).
    func pushTargets(_ queries: [PushTargetQuery]) async throws -> [[PushTarget]]

    /// Queues `jobs`. A job already queued for the same subject and device is left alone, except a clear, whose
    /// content and due time a newer clear replaces. Returns how many were added or replaced.
    @discardableResult
    func queuePushJobs(_ jobs: [NewPushJob]) async throws -> Int

    /// Leases up to `limit` jobs for `platform`'s devices due by `now`, the earliest first, and tells when its next
    /// job not leased falls due. A leased alert marks its device as showing the conversation (from then on a read
    /// elsewhere clears it there), and, when it withheld its words, lets its device's key read the message (``DeviceStore/pushedMessage(keyDigest:conversationID:messageID:since:)``).
    /// An alert held back by a confirmation (``NewPushJob/coveredBy``) that came is
    /// deleted instead.
    func leasePushJobs(now: Date, platform: DeviceRegistration.Platform, limit: Int) async throws -> (jobs: [PushJob], nextDue: Date?)

    /// Ends leased jobs, in one transaction: each is deleted, and its `followUp` (a receipt to check) queued; an alert
    /// sent is remembered for its device's next catch-up (``pushedSeqs(userID:device:after:through:)``), if the
    /// device ever had a stream (it has a row of ``recordConfirmations(_:)``).
    func finishPushJobs(_ finished: [FinishedPush]) async throws

    /// Records how far devices confirmed taking messages in, keeping each one's furthest (an erased user's are
    /// ignored); the alerts their confirmations cover are dropped, and what was pushed to them up to there is
    /// forgotten. Returns the alerts dropped.
    @discardableResult
    func recordConfirmations(_ confirmations: [PushConfirmation]) async throws -> Int

    /// The seqs in `after...through` whose alerts were pushed to `device` of `userID` since it last confirmed.
    func pushedSeqs(userID: String, device: String, after: Int64, through: Int64) async throws -> Set<Int64>

    /// Puts a leased job back, to be tried again at `due`.
    func retryPushJob(id: Int64, at due: Date) async throws

    /// The devices whose notification still shows the message `messageID` of `conversationID` (docs/push.md,
    /// "Edits and deletions"): an alert of it was leased to them, its words are the latest under the identifier it
    /// is shown as (a later alert of its burst did not replace them), and the conversation was not read there since.
    /// Each with that identifier and its owner's badge now.
    func pushedDevices(of conversationID: String, messageID: String) async throws -> [PushedDevice]

    /// Forgets what device keys were granted before `date` (``PushGrant/lifetime`` ago: they are refused anyway);
    /// returns how many. The dispatcher calls it at start and every hour.
    @discardableResult
    func forgetPushGrants(before date: Date) async throws -> Int

    /// Releases every lease: at start, what was being sent when the server stopped is sent again.
    @discardableResult
    func releasePushLeases() async throws -> Int

    /// Puts back the jobs `ids` this server leased and never started, due as they were: a stopping server's, so
    /// that another node or the next start takes them at once, not once their lease ran out. A job whose lease ran
    /// out by `now` is left alone (another node may hold it since).
    func releasePushJobs(ids: [Int64], now: Date) async throws

    /// How many jobs wait or are being sent.
    func pushJobCount() async throws -> Int

    /// `userID`'s badge now: their unread messages over all their conversations, as a push carries it.
    func badge(of userID: String) async throws -> Int
}

/// A job that is done: sent, or given up.
public struct FinishedPush: Hashable, Sendable {
    /// The job.
    public var job: PushJob
    /// A job that follows from it (Expo's receipt).
    public var followUp: NewPushJob?
    /// Whether the push service took it (false: given up).
    public var sent: Bool
    /// What the push service answered, for the delivery trail (written when the trail is on).
    public var step: TrailStep?

    /// A finished job.
    public init(job: PushJob, followUp: NewPushJob? = nil, sent: Bool = false, step: TrailStep? = nil) {
        self.job = job
        self.followUp = followUp
        self.sent = sent
        self.step = step
    }
}

/// Whose devices a message may be pushed to: its conversation, its `seq`, and the members who are away.
/// A device that shows a message's push (``PushOutbox/pushedDevices(of:messageID:)``).
public struct PushedDevice: Hashable, Sendable {
    /// The device.
    public var device: DeviceRegistration
    /// The identifier its notification has (the collapse id and tag of the push that showed it).
    public var shownAs: String
    /// The message's seq.
    public var seq: Int64
    /// Its owner's unread messages over all their conversations, now.
    public var badge: Int
    /// Whether its owner still reads the message: a member now, whose history reaches it. One removed, or added
    /// back without the history, is not told an edit's words.
    public var readable: Bool = true
    /// The newest message before this one that the same notification stands for (an earlier one of its burst), not
    /// deleted, and in its owner's history: on deletion the notification goes back to its words instead of away.
    /// Nil when there is none.
    public var earlier: IncomingMessage?

    /// One of these, member by member.
    package init(device: DeviceRegistration, shownAs: String, seq: Int64, badge: Int, readable: Bool = true, earlier: IncomingMessage? = nil) {
        self.device = device
        self.shownAs = shownAs
        self.seq = seq
        self.badge = badge
        self.readable = readable
        self.earlier = earlier
    }
}

public struct PushTargetQuery: Sendable {
    /// The conversation.
    public var conversationID: String
    /// The message's `seq`.
    public var seq: Int64
    /// The members who may be told.
    public var candidates: Set<String>

    /// A query.
    public init(conversationID: String, seq: Int64, candidates: Set<String>) {
        self.conversationID = conversationID
        self.seq = seq
        self.candidates = candidates
    }
}

extension PushOutbox {
    /// How long an alert sent to a device is remembered for its catch-up at most (30 days), when the device does
    /// not confirm past it first; older ones are forgotten at the server's start.
    package static var pushSentKept: TimeInterval { 30 * 86_400 }
    /// The targets of one message (see ``pushTargets(_:)``).
    public func pushTargets(conversationID: String, seq: Int64, among candidates: Set<String>) async throws -> [PushTarget] {
        try await pushTargets([PushTargetQuery(conversationID: conversationID, seq: seq, candidates: candidates)]).first ?? []
    }
}

/// The outbox's SQL that both stores share.
package enum PushOutboxSQL {
    /// Whether the job `j` may go now: anything but a follow-up whose device's alert of the same message is still in
    /// the outbox (in flight): the follow-up must not overtake the alert it changes. Once the alert is answered its
    /// row goes, and the sender, woken by that, leases the follow-up.
    package static let notBehindItsAlert = """
        (j.kind <> 'follow' OR NOT EXISTS (SELECT 1 FROM push_jobs a WHERE a.kind = 'alert' AND a.user_id = j.user_id
            AND a.device_id = j.device_id AND a.seq = j.seq))
        """

    /// The device a confirmation `r` (its `user_id` and `device`) is kept under: the device when it is one of its
    /// user's registered devices, else '' (as a stream that named none). A stream may name any id it likes: made-up
    /// ids share the member's one row rather than each leaving one of its own.
    package static let receiptDevice =
        "CASE WHEN EXISTS (SELECT 1 FROM devices d WHERE d.user_id = r.user_id AND d.id = r.device) THEN r.device ELSE '' END"
}
