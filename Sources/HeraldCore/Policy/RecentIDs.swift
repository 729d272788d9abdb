/// The ids seen most recently, up to a limit: a set that forgets its oldest member when full.
///
/// Reconnects and retries bring back recent messages, so remembering the last few thousand ids is enough to
/// never show one twice, without growing for ever.
public typealias RecentIDs = RecentSet<String>

/// The values seen most recently, up to a limit: a set that forgets its oldest member when full.
///
/// Each member is numbered as it comes, and a member is remembered while fewer than ``limit`` have come after it.
/// Members are kept in two generations of at most ``limit`` each: when the current one is full it becomes the
/// previous one, and the previous one, all of it forgotten by then, is let go whole. So nothing is ever removed one
/// by one (a hash set's removal shifts its neighbours and hashes them again), at the price of holding up to twice
/// ``limit`` members.
public struct RecentSet<Element: Hashable & Sendable>: Hashable, Sendable {
    /// How many values it remembers.
    public let limit: Int
    /// The members of the current generation, with their numbers.
    private var current: [Element: Int] = [:]
    /// The members of the generation before, with their numbers; those below ``floor`` are forgotten.
    private var previous: [Element: Int] = [:]
    /// The number the next new member gets.
    private var next = 0

    /// Creates an empty set that remembers at most `limit` values (at least one).
    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// The lowest number still remembered.
    private var floor: Int { next - limit }

    /// Whether `value` is among the remembered values.
    public func contains(_ value: Element) -> Bool {
        if current[value] != nil { return true }
        guard let number = previous[value] else { return false }
        return number >= floor
    }

    /// Remembers `value`, forgetting the oldest value if full. Returns false if it was already there.
    @discardableResult
    public mutating func insert(_ value: Element) -> Bool {
        if let number = previous[value], number >= floor { return false }
        if current.count == limit {
            if current[value] != nil { return false }
            // The previous generation's storage is kept for the next one: no fresh memory to fault in.
            swap(&previous, &current)
            current.removeAll(keepingCapacity: true)
        }
        // One lookup for the usual case, a new value; a repeated one is put back as it was.
        if let earlier = current.updateValue(next, forKey: value) {
            current[value] = earlier
            return false
        }
        next += 1
        return true
    }

    /// How many values it remembers now.
    public var count: Int { min(next, limit) }
}
