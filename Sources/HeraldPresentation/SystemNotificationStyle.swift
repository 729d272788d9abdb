import HeraldCore

/// How a system notification interrupts, as an app posts it: the decision `HeraldUI` applies to the platform's
/// notification (sound, interruption level), kept here where tests reach it.
public struct SystemNotificationStyle: Hashable, Sendable {
    /// How far it breaks into what the user is doing.
    public enum Interruption: Hashable, Sendable {
        /// Shown at once, lighting the screen (UserNotifications' `.active`).
        case active
        /// Added to the notification list without lighting the screen or a sound (`.passive`): quiet hours.
        case passive
    }

    /// Whether it plays the default sound (and vibrates).
    public var playsSound: Bool
    /// Its interruption level.
    public var interruption: Interruption
    /// The line under the title: inside a burst, the count (`3 new messages`); nil otherwise.
    public var subtitle: String?

    /// A style.
    public init(playsSound: Bool, interruption: Interruption, subtitle: String? = nil) {
        self.playsSound = playsSound
        self.interruption = interruption
        self.subtitle = subtitle
    }

    /// The style of `notification`: in the user's quiet hours or a burst's later message (``LocalNotification/silent``)
    /// passive and without sound; otherwise active, with the default sound. Inside a burst, the count as the subtitle.
    public init(for notification: LocalNotification, formatter: ContentFormatter = .standard) {
        playsSound = !notification.silent
        interruption = notification.silent ? .passive : .active
        subtitle = notification.count.flatMap { $0 > 1 ? formatter.summary(ofBurst: $0) : nil }
    }

    /// Whether to post `notification` when the notifications in the notification centre have `delivered` as their
    /// identifiers: always, except an edit (``LocalNotification/onlyIfDelivered``) of one no longer there (the
    /// person swiped it away, or read the conversation): posting it would bring it back.
    public static func posts(_ notification: LocalNotification, delivered: Set<String>) -> Bool {
        !notification.onlyIfDelivered || delivered.contains(notification.identifier)
    }
}
