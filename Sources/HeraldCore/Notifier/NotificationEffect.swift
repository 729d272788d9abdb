/// Something the app must do because of an input: show, update or dismiss a banner, open a conversation,
/// post a system notification, or (for the record) why a message was not shown.
///
/// The effects of one input come in this order: dismiss, navigate, drop and clear, skip, show and update, local.
public enum NotificationEffect: Hashable, Sendable {
    /// Take the visible banner away.
    case dismiss(bannerID: String, reason: DismissReason)
    /// Open this conversation (a message banner was tapped). Herald has already treated it as opened.
    case navigate(conversationID: String)
    /// A waiting banner will never show.
    case drop(bannerID: String, reason: DropReason)
    /// The user is no longer in this conversation: remove its system notifications (its banners are dismissed and
    /// dropped with reason `removed`).
    case clear(conversationID: String)
    /// The message a system notification shows was deleted: remove the notification posted under this identifier
    /// (``LocalNotification/identifier``), if it is still there.
    case withdraw(notificationID: String)
    /// A message that gets no notification on this device, and why.
    case skip(messageID: String, reason: SkipReason)
    /// Show this banner now.
    case show(Banner)
    /// The visible banner changed (coalescing); redraw it and know that its timer restarted.
    case update(Banner)
    /// Post this system notification.
    case local(LocalNotification)

    /// The position of this kind of effect among the effects of one input.
    var rank: Int {
        switch self {
        case .dismiss: 0
        case .navigate: 1
        case .drop, .clear, .withdraw: 2
        case .skip: 3
        case .show, .update: 4
        case .local: 5
        }
    }
}

/// An effect and the instant it happened, as a ``Duration`` from the engine's origin.
public struct TimedEffect: Hashable, Sendable {
    /// When it happened.
    public var at: Duration
    /// What happened.
    public var effect: NotificationEffect

    /// Creates a timed effect.
    public init(at: Duration, effect: NotificationEffect) {
        self.at = at
        self.effect = effect
    }
}

/// The effects of a run of inputs as they happen, each stamped with the current instant, the effects of each
/// input put in their documented order when it is done.
struct EffectLog {
    private(set) var entries: [TimedEffect] = []
    private var inputStart = 0
    private var instant: Duration = .zero

    /// Starts the effects of one input (or one fired deadline) at `instant`.
    mutating func begin(at instant: Duration) {
        inputStart = entries.count
        self.instant = instant
    }

    /// Records an effect at the current instant.
    mutating func append(_ effect: NotificationEffect) {
        entries.append(TimedEffect(at: instant, effect: effect))
    }

    /// The effects of the current input so far.
    var current: ArraySlice<TimedEffect> { entries[inputStart...] }

    /// Puts the current input's effects in their documented order (stable: ties keep the order they happened).
    mutating func end() {
        guard entries.count - inputStart > 1 else { return }
        for index in (inputStart + 1)..<entries.count {
            let entry = entries[index]
            var slot = index
            while slot > inputStart, entries[slot - 1].effect.rank > entry.effect.rank {
                entries[slot] = entries[slot - 1]
                slot -= 1
            }
            entries[slot] = entry
        }
    }
}
