/// The ids seen most recently, up to a limit: a set that forgets its oldest member when full.
///
/// Reconnects and retries bring back recent messages, so remembering the last few thousand ids is enough to
/// never show one twice, without growing for ever.
public typealias RecentIDs = RecentSet<String>

/// The values seen most recently, up to a limit: a set that forgets its oldest member when full.
public struct RecentSet<Element: Hashable & Sendable>: Hashable, Sendable {
    /// How many ids it remembers.
    public let limit: Int
    private var members: Set<Element> = []
    private var order: [Element] = []
    private var oldest = 0

    /// Creates an empty set that remembers at most `limit` ids (at least one).
    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether `id` is among the remembered ids.
    public func contains(_ id: Element) -> Bool {
        members.contains(id)
    }

    /// Remembers `id`, forgetting the oldest id if full. Returns false if it was already there.
    @discardableResult
    public mutating func insert(_ id: Element) -> Bool {
        guard members.insert(id).inserted else { return false }
        if order.count < limit {
            order.append(id)
        } else {
            members.remove(order[oldest])
            order[oldest] = id
            oldest = (oldest + 1) % limit
        }
        return true
    }

    /// How many ids it remembers now.
    public var count: Int { members.count }
}
