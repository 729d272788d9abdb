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

    /// A style.
    public init(playsSound: Bool, interruption: Interruption) {
        self.playsSound = playsSound
        self.interruption = interruption
    }

    /// The style of `notification`: in the user's quiet hours (``LocalNotification/silent``) passive and without
    /// sound; otherwise active, with the default sound.
    public init(for notification: LocalNotification) {
        playsSound = !notification.silent
        interruption = notification.silent ? .passive : .active
    }
}
