import HeraldCore

/// How many frames one stream may send, of every type: a token bucket (``burst`` at once, ``perSecond`` earned
/// back), checked before a frame is even parsed. A frame over the budget is refused (`rate_limited`, with the wait).
///
/// Refusals have a budget of their own, of the same size and rate: a stream refused more than ``burst`` frames
/// beyond what it earns back is closed (1008). Counting refusals in a bucket rather than in a row matters: a token
/// earned back between two refusals (every 50 ms at 20 a second) would reset a count in a row, so a flood paced to
/// take each new token (80 frames every 100 ms, 97% refused), or read by a server slower than its refill, was never
/// closed. A client over its rate by less than its rate again (up to twice it) keeps its stream, refused the excess.
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
    /// Refusals it may still have before the stream is closed.
    private var patience: Double
    private var updated: Duration?

    /// A full budget.
    init(burst: Int, perSecond: Double) {
        self.burst = Double(max(1, burst))
        self.perSecond = max(0, perSecond)
        tokens = self.burst
        patience = self.burst
    }

    /// Spends a token on a frame that arrived at `now` (time since any fixed origin, never decreasing).
    mutating func take(at now: Duration) -> Verdict {
        if let updated {
            let earned = max(0, (now - updated).seconds) * perSecond
            tokens = min(burst, tokens + earned)
            patience = min(burst, patience + earned)
        }
        updated = now
        if tokens >= 1 {
            tokens -= 1
            return .accept
        }
        patience -= 1
        if patience < 0 { return .close }
        guard perSecond > 0 else { return .refuse(retryAfter: .seconds(3600)) }
        return .refuse(retryAfter: .seconds((1 - tokens) / perSecond))
    }
}
