import Foundation
import NIOConcurrencyHelpers

/// Token buckets, one per user: each user may spend `burst` at once, and earns back `perSecond`.
///
/// A user's bucket is forgotten once it has filled up again, so memory follows the users active lately, not every
/// user ever seen. The clock is injected so that tests can drive it.
final class RateLimiter<C: Clock>: Sendable where C.Duration == Duration {
    private struct Bucket {
        var tokens: Double
        var updated: C.Instant
    }

    /// At most this many tokens are held.
    let burst: Double
    /// Tokens earned back each second.
    let perSecond: Double
    private let clock: C
    private let buckets: NIOLockedValueBox<(held: [String: Bucket], sweepAt: Int)>
    /// Buckets held before the first sweep for full ones.
    private static var sweepFloor: Int { 10_000 }

    init(burst: Int, perSecond: Double, clock: C) {
        self.burst = Double(max(1, burst))
        self.perSecond = max(perSecond, 0)
        self.clock = clock
        buckets = NIOLockedValueBox(([:], Self.sweepFloor))
    }

    /// Takes one token of `userID`'s; nil when there was one, else how long until there will be.
    func take(_ userID: String) -> Duration? {
        let now = clock.now
        return buckets.withLockedValue { state in
            var bucket = state.held[userID] ?? Bucket(tokens: burst, updated: now)
            let earned = bucket.updated.duration(to: now).seconds * perSecond
            bucket.tokens = min(burst, bucket.tokens + max(0, earned))
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                state.held[userID] = bucket
                guard perSecond > 0 else { return .seconds(3600) }
                return .seconds((1 - bucket.tokens) / perSecond)
            }
            bucket.tokens -= 1
            state.held[userID] = bucket
            if state.held.count > state.sweepAt {
                Self.forgetFull(&state.held, now: now, burst: burst, perSecond: perSecond)
                // The next sweep waits until as many buckets again are held: with many users active at once, a
                // sweep that frees few is not repeated at every take (sweeps stay a constant cost per take).
                state.sweepAt = max(Self.sweepFloor, 2 * state.held.count)
            }
            return nil
        }
    }

    /// Drops the buckets that have filled up again: a new bucket would be the same.
    private static func forgetFull(_ buckets: inout [String: Bucket], now: C.Instant, burst: Double, perSecond: Double) {
        buckets = buckets.filter { _, bucket in
            bucket.tokens + bucket.updated.duration(to: now).seconds * perSecond < burst
        }
    }

    /// How many users' buckets are held.
    var trackedUsers: Int { buckets.withLockedValue { $0.held.count } }
}

/// The per-user rate limits of one server: posts, conversations created, and streams opened.
struct UserLimits: Sendable {
    let posts: RateLimiter<ContinuousClock>
    let conversations: RateLimiter<ContinuousClock>
    let changes: RateLimiter<ContinuousClock>
    let streamOpens: RateLimiter<ContinuousClock>
    let tests: RateLimiter<ContinuousClock>
    /// Test notifications a user may send a minute (`POST /v1/devices/{id}/test`).
    static let testsPerMinute = 5

    init(_ limits: ServerLimits) {
        posts = RateLimiter(burst: limits.postBurst, perSecond: limits.postsPerSecond, clock: ContinuousClock())
        conversations = RateLimiter(
            burst: limits.conversationsPerHour, perSecond: Double(limits.conversationsPerHour) / 3600,
            clock: ContinuousClock())
        changes = RateLimiter(
            burst: limits.changesPerHour, perSecond: Double(limits.changesPerHour) / 3600, clock: ContinuousClock())
        streamOpens = RateLimiter(
            burst: limits.streamOpensPerMinute, perSecond: Double(limits.streamOpensPerMinute) / 60, clock: ContinuousClock())
        tests = RateLimiter(burst: Self.testsPerMinute, perSecond: Double(Self.testsPerMinute) / 60, clock: ContinuousClock())
    }

    /// Takes a test notification from `userID`'s allowance.
    ///
    /// - Throws: ``APIError`` `rate_limited` with the wait.
    func testNotification(by userID: String) throws {
        if let wait = tests.take(userID) {
            throw APIError.rateLimited("more than \(Self.testsPerMinute) test notifications a minute", retryAfter: wait.seconds)
        }
    }

    /// Takes a stream from `userID`'s allowance of streams opened.
    ///
    /// - Throws: ``APIError`` `rate_limited` with the wait.
    func openStream(by userID: String) throws {
        if let wait = streamOpens.take(userID) {
            throw APIError.rateLimited(
                "more than \(Int(streamOpens.burst)) streams opened a minute", retryAfter: wait.seconds)
        }
    }

    /// Takes a post from `userID`'s allowance.
    ///
    /// - Throws: ``APIError`` `rate_limited` with the wait.
    func post(by userID: String) throws {
        if let wait = posts.take(userID) {
            throw APIError.rateLimited(
                "more than \(posts.perSecond.formatted()) messages a second (bursts of \(Int(posts.burst)))",
                retryAfter: wait.seconds)
        }
    }

    /// Takes a change to a group from `userID`'s allowance.
    ///
    /// - Throws: ``APIError`` `rate_limited` with the wait.
    func change(by userID: String) throws {
        if let wait = changes.take(userID) {
            throw APIError.rateLimited(
                "more than \(Int(changes.burst)) changes to groups and notification choices an hour", retryAfter: wait.seconds)
        }
    }

    /// Takes a new conversation from `userID`'s allowance.
    ///
    /// - Throws: ``APIError`` `rate_limited` with the wait.
    func createConversation(by userID: String) throws {
        if let wait = conversations.take(userID) {
            throw APIError.rateLimited(
                "more than \(Int(conversations.burst)) new conversations an hour", retryAfter: wait.seconds)
        }
    }
}
