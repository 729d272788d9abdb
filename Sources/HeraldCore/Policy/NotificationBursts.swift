/// One interruption per burst (docs/behaviour.md, "Bursts"): per member and conversation, the first notification of a
/// burst alerts; the ones that follow within ``window`` of it replace it silently, under its identifier and with a
/// count, until the member reads the conversation or the window passes. A message that names the member (by id or
/// `@all`) alerts even inside a burst, still replacing. A direct chat's first message starts a burst like any other,
/// so it alerts.
///
/// The server decides pushes with it (one per member and conversation), and each device its own system
/// notifications (``Notifier``); engine.js has the same rule. Time is the caller's: any clock, as a ``Duration``.
public struct NotificationBursts: Hashable, Sendable {
    /// What one notification of a burst does.
    public struct Decision: Hashable, Sendable {
        /// Whether it makes a sound and lights the screen (the burst's first, or a message naming the member).
        public var alerts: Bool
        /// The identifier it is shown under: the burst's first notification's, which it replaces.
        public var identifier: String
        /// The messages of the burst so far, this one included (1 for the first).
        public var count: Int
    }

    /// The default window: a minute.
    public static let defaultWindow: Duration = .seconds(60)

    /// How long after a burst's first notification the others replace it silently; zero turns bursts off.
    public let window: Duration

    private struct Burst: Hashable, Sendable {
        var started: Duration
        var identifier: String
        var count: Int
        var readMarker: Int64
    }

    private var bursts: [String: Burst] = [:]
    /// When the map next drops bursts whose window passed (it holds at most the bursts of one window).
    private var pruneAt = 1_024

    /// Bursts over `window`.
    public init(window: Duration = Self.defaultWindow) {
        self.window = max(.zero, window)
    }

    /// Decides the notification `identifier` of the burst `key` (a conversation; on a server, a member's
    /// conversation) at `now`. `namesMember`: the message names the member. `readMarker`: how far the member has
    /// read the conversation, where the caller knows it; a burst ends once it moved past where it stood at the
    /// burst's start.
    public mutating func decide(
        _ key: String, identifier: String, namesMember: Bool, at now: Duration, readMarker: Int64 = 0
    ) -> Decision {
        if var burst = bursts[key], now - burst.started < window, now >= burst.started, readMarker <= burst.readMarker {
            burst.count += 1
            bursts[key] = burst
            return Decision(alerts: namesMember, identifier: burst.identifier, count: burst.count)
        }
        bursts[key] = Burst(started: now, identifier: identifier, count: 1, readMarker: readMarker)
        if bursts.count > pruneAt {
            bursts = bursts.filter { now - $0.value.started < window }
            pruneAt = max(1_024, bursts.count * 2)
        }
        return Decision(alerts: true, identifier: identifier, count: 1)
    }

    /// Ends the burst `key`: the member read the conversation (or left it), so the next notification alerts.
    public mutating func end(_ key: String) {
        bursts[key] = nil
    }

    /// How many bursts are remembered (their window may have passed since).
    public var count: Int { bursts.count }
}
