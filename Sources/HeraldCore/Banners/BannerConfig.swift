/// How the banner queue behaves. The defaults are those of docs/behaviour.md §3.
public struct BannerConfig: Hashable, Sendable {
    /// How many banners may wait behind the visible one; one more pushes out the oldest waiting.
    public var capacity: Int
    /// How long a message banner stays after it appeared (general banners carry their own).
    public var duration: Duration
    /// The pause between one banner's dismissal and the next one's appearance (the exit animation).
    public var gap: Duration
    /// Whether a message for a conversation that already has a banner updates it instead of queueing another.
    public var coalesce: Bool
    /// How far up, in points, a swipe must go to dismiss; shorter swipes spring back.
    public var swipeThreshold: Double

    /// The product's defaults: 3 waiting, 4 s, 0.25 s gap, no coalescing, 50 pt swipe.
    public static let standard = BannerConfig()

    /// Creates a configuration; negative numbers are treated as zero.
    public init(
        capacity: Int = 3,
        duration: Duration = .seconds(4),
        gap: Duration = .milliseconds(250),
        coalesce: Bool = false,
        swipeThreshold: Double = 50
    ) {
        self.capacity = max(0, capacity)
        self.duration = max(.zero, duration)
        self.gap = max(.zero, gap)
        self.coalesce = coalesce
        self.swipeThreshold = max(0, swipeThreshold)
    }
}
