import Foundation
import HeraldCore
import NIOConcurrencyHelpers

/// One thing that happened to a message's push for one member, or one of their devices (docs/push.md, "Why a phone
/// did not ring"): what the decider decided and why, what became of the job in the outbox, what the push service
/// answered. Kept for ``TrailSwitch/hours`` (`HERALD_TRAIL_HOURS`), and with the message and its member no longer.
public struct TrailStep: Hashable, Sendable {
    /// What happened: a stable code, as the API names it.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// A push was queued for the device (``reasons``: how it goes).
        case queued
        /// No push for the member (their level, their snooze) or the device (no provider for its platform).
        case skipped
        /// Held back: the device (or, in the foreground, another of the member's) confirmed taking the message in.
        case confirmed
        /// Held back: the member read the conversation before the push went.
        case read
        /// Given up by the outbox's rules (``detail``: why), before a push service saw it.
        case dropped
        /// The push service took it (``detail``: the id it gave, when it gives one).
        case sent
        /// Written to the server's log instead of sent (a `--demo` server).
        case logged
        /// The push service asked to try again later (``detail``: what it said).
        case retried
        /// The push service refused it for good (``detail``: what it said).
        case refused
        /// The push service said the token is dead: the device was removed (``detail``: what it said).
        case deviceRemoved = "device_removed"
        /// The push service answered with a redirect, which is never followed.
        case redirected
        /// Not sent in time (`HERALD_PUSH_MAX_AGE`).
        case expired
        /// Expo's receipt: the push reached Apple's or Google's service.
        case delivered
    }

    /// Why, or how: codes a step of ``Kind/queued`` or ``Kind/skipped`` carries (and ``followUp`` on any step of
    /// a follow-up).
    public enum Reason: String, Hashable, Sendable, CaseIterable {
        /// Sent without sound or vibration: the member's quiet hours.
        case quietHours = "quiet_hours"
        /// A later message of a burst: it replaces the burst's notification silently, with a count.
        case burst
        /// Waits ``PushSettings/confirmWithin`` for the device's stream to confirm it.
        case waitsForDevice = "waits_for_device"
        /// Waits for any stream of the member (one was in the foreground) to confirm it.
        case waitsForMember = "waits_for_member"
        /// Waits `HERALD_PUSH_DELAY` for a read elsewhere.
        case delayed
        /// The conversation's level is `nothing`.
        case muted
        /// The conversation's level is `mentions`, and the message does not mention the member.
        case unmentioned
        /// The member snoozed notifications.
        case snoozed
        /// No push service is configured for the device's platform.
        case noProvider = "no_provider"
        /// An edit's or a deletion's follow-up, not the message's first push.
        case followUp = "follow_up"
    }

    /// The message's conversation.
    public var conversationID: String
    /// The message's seq.
    public var seq: Int64
    /// The member.
    public var userID: String
    /// Their device; empty for a step about the member (all their devices).
    public var deviceID: String
    /// When.
    public var at: Date
    /// What happened.
    public var kind: Kind
    /// Why, or how.
    public var reasons: [Reason]
    /// The push service's words or id, clipped to ``maxDetailBytes``.
    public var detail: String?
    /// The message's id, as a step read back carries it while the message is there (never written).
    public var messageID: String?

    /// The most of a ``detail`` kept.
    public static let maxDetailBytes = 300

    /// A step.
    public init(
        conversationID: String, seq: Int64, userID: String, deviceID: String = "", at: Date, kind: Kind,
        reasons: [Reason] = [], detail: String? = nil
    ) {
        self.conversationID = conversationID
        self.seq = seq
        self.userID = userID
        self.deviceID = deviceID
        self.at = at
        self.kind = kind
        self.reasons = reasons
        self.detail = detail.map { Self.clipped($0) }
    }

    /// A step about what a job (an alert, a follow-up, a receipt) became; nil for a clear, which is about no message.
    public init?(job: PushJob, at: Date, kind: Kind, detail: String? = nil) {
        guard job.kind != .clear else { return nil }
        self.init(
            conversationID: job.content.conversationID, seq: job.content.seq, userID: job.device.userID,
            deviceID: job.device.id, at: at, kind: kind, reasons: job.kind == .follow ? [.followUp] : [], detail: detail)
    }

    /// The reasons as they are stored: codes joined by commas.
    public var storedReasons: String? {
        reasons.isEmpty ? nil : reasons.map(\.rawValue).joined(separator: ",")
    }

    /// Reasons read back (a code this build does not know is left out).
    public static func reasons(stored: String?) -> [Reason] {
        (stored ?? "").split(separator: ",").compactMap { Reason(rawValue: String($0)) }
    }

    /// `text` with its control characters (NUL among them, which PostgreSQL's JSON refuses) as spaces, clipped to
    /// ``maxDetailBytes``.
    private static func clipped(_ raw: String) -> String {
        let text = String(String.UnicodeScalarView(raw.unicodeScalars.map {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? " " : $0
        }))
        guard text.utf8.count > maxDetailBytes else { return text }
        var cut = text.prefix(maxDetailBytes)
        while cut.utf8.count > maxDetailBytes { cut = cut.dropLast() }
        return String(cut)
    }
}

/// Whether the trail is kept, and how long (`HERALD_TRAIL_HOURS`, default 24; 0: off). Set once at start; the
/// stores read it where they drop jobs in SQL (a confirmation, a read), to write those steps too.
public final class TrailSwitch: Sendable {
    private let kept = NIOLockedValueBox<Int>(24)

    /// The default: on, for 24 hours.
    public init() {}

    /// The hours steps are kept (0: none are written).
    public var hours: Int {
        get { kept.withLockedValue { $0 } }
        set { kept.withLockedValue { $0 = max(0, newValue) } }
    }

    /// Whether steps are written.
    public var isOn: Bool { hours > 0 }
}

/// What a store keeps of the trail (``TrailStep``). The decider's steps go with its jobs (``ConsumerOutput/trail``)
/// and the senders' with the jobs they finish (``FinishedPush/step``); a store writes the holds of a confirmation or a
/// read itself, when ``trailSwitch`` is on. A retention purge and an erasure take their steps with them.
public protocol TrailStore: Sendable {
    /// Whether the trail is kept, and how long.
    var trailSwitch: TrailSwitch { get }

    /// Records `steps` (nothing when the trail is off).
    func recordTrail(_ steps: [TrailStep]) async throws

    /// The steps of the message `seq` of `conversationID` (of `userID` only, when given), oldest first.
    func trail(of conversationID: String, seq: Int64, userID: String?) async throws -> [TrailStep]

    /// `userID`'s newest steps of each device after its decisions (what the outbox and the push services did), at
    /// most `limit` a device, newest first: the troubleshooter's "last pushes".
    func recentTrail(of userID: String, limit: Int) async throws -> [TrailStep]

    /// How far each device of `userID` confirmed taking messages in (the stream's `received`), by device id ('' for
    /// streams that named no registered device).
    func confirmations(of userID: String) async throws -> [String: Int64]

    /// The message `messageID` of `conversationID` and the members it reached, with their read markers now; nil
    /// when there is no such message (or it was deleted for good).
    func trailSubject(conversationID: String, messageID: String) async throws -> TrailSubject?

    /// Forgets the steps taken before `date`; returns how many.
    @discardableResult
    func forgetTrail(before date: Date) async throws -> Int
}

/// A message whose trail is read, and who it reached (``TrailStore/trailSubject(conversationID:messageID:)``).
public struct TrailSubject: Sendable {
    /// The message, with its conversation.
    public var message: IncomingMessage
    /// The read marker now of each member it reached (a member when it was stored), by user id.
    public var readMarkers: [String: Int64]

    /// A subject.
    public init(message: IncomingMessage, readMarkers: [String: Int64]) {
        self.message = message
        self.readMarkers = readMarkers
    }

    /// Keeps, of member rows (`user_id`, `read_seq`, `added_seq`, `removed_seq`), those the message at `seq` reached.
    package static func reached(_ rows: [(user: String, read: Int64, added: Int64, removed: Int64?)], seq: Int64) -> [String: Int64] {
        var markers: [String: Int64] = [:]
        for row in rows where row.added <= seq && (row.removed.map { $0 > seq } ?? true) {
            markers[row.user] = row.read
        }
        return markers
    }
}

/// The alerts a queueing actually wrote (member, device, seq): the decider's `queued` steps are kept for those only.
package final class QueuedAlerts {
    package struct Key: Hashable {
        package var userID: String
        package var deviceID: String
        package var seq: Int64

        package init(userID: String, deviceID: String, seq: Int64) {
            self.userID = userID
            self.deviceID = deviceID
            self.seq = seq
        }
    }

    package private(set) var keys: Set<Key> = []

    package init() {}

    package func add(_ key: Key) {
        keys.insert(key)
    }
}

extension [TrailStep] {
    /// The decider's steps once its alerts were queued: an alert's `queued` step whose job the queueing left out (the
    /// member read it, a live device confirmed it, or they left, while the round was deciding; or it was queued
    /// already) becomes `dropped`, saying so.
    package func reconciled(with queued: QueuedAlerts) -> [TrailStep] {
        map { step in
            guard step.kind == .queued, !step.reasons.contains(.followUp),
                  !queued.keys.contains(.init(userID: step.userID, deviceID: step.deviceID, seq: step.seq))
            else { return step }
            var dropped = step
            dropped.kind = .dropped
            dropped.detail = "not queued: read, confirmed live, or left while it was decided (or queued already)"
            return dropped
        }
    }
}
