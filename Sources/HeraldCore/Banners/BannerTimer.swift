/// The life of the one visible banner: when it goes, and how touching it pauses that.
///
/// Times are ``Duration``s from the engine's origin (see ``BannerQueue``).
public struct BannerTimer: Hashable, Sendable {
    /// When the banner times out; nil while it is touched.
    public private(set) var deadline: Duration?
    /// The time left, kept while paused.
    public private(set) var remaining: Duration

    /// Starts a timer of `duration` at `now`.
    public init(duration: Duration, at now: Duration) {
        remaining = duration
        deadline = now + duration
    }

    /// Whether a finger is on the banner.
    public var isPaused: Bool { deadline == nil }

    /// A finger went down: keep the time that was left and stop counting.
    public mutating func pause(at now: Duration) {
        guard let deadline else { return }
        remaining = max(.zero, deadline - now)
        self.deadline = nil
    }

    /// The finger lifted: go on with the time that was left.
    public mutating func resume(at now: Duration) {
        guard deadline == nil else { return }
        deadline = now + remaining
    }

    /// Start over with a full `duration` (a coalesced message arrived); stays paused if it was.
    public mutating func restart(duration: Duration, at now: Duration) {
        remaining = duration
        if deadline != nil { deadline = now + duration }
    }
}
