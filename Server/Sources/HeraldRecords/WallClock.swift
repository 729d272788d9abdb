import Foundation
import NIOConcurrencyHelpers

/// The server's wall clock: what it stamps entries with (their `createdAt`, the instant the notification policy
/// judges levels, snoozes and quiet hours at) and checks `until`s against. The system's time, moved by an offset
/// that only tests change (``advance(by:)``): a level that ends mid-test ends without a sleep.
public final class WallClock: Hashable, Sendable {
    private let offset = NIOLockedValueBox<TimeInterval>(0)

    /// The system's time.
    public init() {}

    /// Now.
    public func now() -> Date {
        Date().addingTimeInterval(offset.withLockedValue { $0 })
    }

    /// Moves the clock forward by `seconds` (back, when negative).
    public func advance(by seconds: TimeInterval) {
        offset.withLockedValue { $0 += seconds }
    }

    public static func == (lhs: WallClock, rhs: WallClock) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
