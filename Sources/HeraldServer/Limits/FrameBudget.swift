import HeraldCore

/// How many frames one stream may send, of every type: a token bucket (``burst`` at once, ``perSecond`` earned
/// back), checked before a frame is even parsed. A frame over the budget is refused (`rate_limited`, with the wait);
/// a stream that goes on sending after ``burst`` refusals in a row is closed (1008), so a flood costs its sender the
/// connection rather than costing everyone else the server's time.
///
/// A value with no I/O and no clock of its own: the session gives it the time of each frame.
struct FrameBudget: Hashable, Sendable {
    /// What to do with a frame.
    enum Verdict: Hashable, Sendable {
        /// Handle it.
        case accept
        /// Refuse it; the budget has a token again after this long.
        case refuse(retryAfter: Duration)
        /// Refuse it and close the stream: it did not stop when told.
        case close
    }

    /// Frames it may send at once.
    let burst: Double
    /// Frames it earns back a second.
    let perSecond: Double
    private var tokens: Double
    private var updated: Duration?
    /// Frames refused since the last one accepted.
    private(set) var refusedInARow = 0

    /// A full budget.
    init(burst: Int, perSecond: Double) {
        self.burst = Double(max(1, burst))
        self.perSecond = max(0, perSecond)
        tokens = self.burst
    }

    /// Spends a token on a frame that arrived at `now` (time since any fixed origin, never decreasing).
    mutating func take(at now: Duration) -> Verdict {
        if let updated {
            let elapsed = max(0, (now - updated).seconds)
            tokens = min(burst, tokens + elapsed * perSecond)
        }
        updated = now
        if tokens >= 1 {
            tokens -= 1
            refusedInARow = 0
            return .accept
        }
        refusedInARow += 1
        if Double(refusedInARow) > burst { return .close }
        guard perSecond > 0 else { return .refuse(retryAfter: .seconds(3600)) }
        return .refuse(retryAfter: .seconds((1 - tokens) / perSecond))
    }
}
