import Foundation
import HeraldRecords

/// How one push ranks on each platform (docs/push.md, "How pushes rank"): what iOS sorts and summarises by
/// (`relevance-score`, `interruption-level`), whether it may wake a device at once (APNs priority 10, FCM and Expo
/// `high`, Web Push `urgency: high`: only what shows a notification that rings, so FCM never finds a high-priority
/// message that showed nothing) and how long it is worth delivering.
///
/// The rank is computed from the push's own content, before any words are withheld or encrypted: the services see
/// it, as they must to rank (docs/security.md).
struct PushRank: Hashable {
    /// The rows of the table.
    enum Kind: String, CaseIterable {
        /// A direct chat's message, or one that names the member: it rings.
        case mention
        /// A group's message that does not name the member: it rings, ranked below.
        case message
        /// A message in the member's quiet hours: shown without a sound.
        case quiet
        /// A later message of a burst, replacing the burst's notification silently.
        case burst
        /// An edited message's new words, replacing its notification silently.
        case edit
        /// A deleted message: its notification replaced by `This message was deleted`, then removed.
        case deletion
        /// Read on another device: notifications cleared, the badge set; shows nothing.
        case clear
        /// A test notification (`POST /v1/devices/{id}/test`).
        case test
    }

    /// Which row.
    var kind: Kind
    /// APNs `relevance-score` (0 to 1); nil for a push that shows nothing.
    var relevance: Double?
    /// APNs and Expo `interruption-level`; nil for a push that shows nothing.
    var interruption: String?
    /// Whether it goes at once: APNs priority 10 (else 5), FCM and Expo `high` (else `normal`), Web Push urgency
    /// `high` (else `normal`).
    var immediate: Bool
    /// How long it is worth delivering: at most the server's maximum age (`HERALD_PUSH_MAX_AGE`).
    var lifetime: Duration

    /// The longest a clear is kept for a device that is away: a day later, the device has long asked the server.
    static let clearLifetime: Duration = .seconds(24 * 3600)
    /// The longest a test notification is kept: someone is waiting for it now, or not at all.
    static let testLifetime: Duration = .seconds(15 * 60)

    /// The rank of `job`, whose pushes live at most `maxAge`.
    init(_ job: PushJob, maxAge: Duration) {
        let content = job.content
        let ringing = content.mentioned || !content.isGroup
        if content.test == true {
            kind = .test
        } else if job.kind == .clear || job.kind == .receipt {
            kind = .clear
        } else if content.follows == .deleted {
            kind = .deletion
        } else if content.follows == .edited {
            kind = .edit
        } else if content.replaces != nil, content.quiet {
            kind = .burst
        } else if content.quiet {
            kind = .quiet
        } else {
            kind = ringing ? .mention : .message
        }
        switch kind {
        case .mention, .message, .test:
            relevance = kind == .message ? 0.5 : 1
            interruption = content.timeSensitive ? "time-sensitive" : "active"
            immediate = true
        case .quiet, .edit:
            // Ranked as the message is; shown (or changed) without a sound, lighting the screen or breaking Focus.
            relevance = ringing ? 1 : 0.5
            interruption = "passive"
            immediate = false
        case .burst, .deletion:
            relevance = 0
            interruption = "passive"
            immediate = false
        case .clear:
            relevance = nil
            interruption = nil
            immediate = false
        }
        lifetime = switch kind {
        case .clear: min(maxAge, Self.clearLifetime)
        case .test: min(maxAge, Self.testLifetime)
        default: maxAge
        }
    }

    /// When the push stops being worth delivering (APNs `apns-expiration`).
    func expiry(of job: PushJob) -> Date {
        job.createdAt.addingTimeInterval(lifetime.seconds)
    }

    /// The seconds left to deliver it from `now` (FCM `ttl`, Expo `ttl`, Web Push `TTL`): none once expired.
    func secondsLeft(of job: PushJob, now: Date = Date()) -> Int {
        max(0, Int(expiry(of: job).timeIntervalSince(now)))
    }
}
