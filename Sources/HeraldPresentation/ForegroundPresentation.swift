import HeraldCore

/// How a notification shows while the app is in the foreground (UserNotifications'
/// `UNNotificationPresentationOptions`).
public struct ForegroundOptions: OptionSet, Hashable, Sendable {
    /// The option bits.
    public let rawValue: Int

    /// Options from their bits.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// A banner over the app (`.banner`).
    public static let banner = ForegroundOptions(rawValue: 1 << 0)
    /// In Notification Center (`.list`).
    public static let list = ForegroundOptions(rawValue: 1 << 1)
    /// Its sound (`.sound`).
    public static let sound = ForegroundOptions(rawValue: 1 << 2)
    /// Its badge on the app's icon (`.badge`).
    public static let badge = ForegroundOptions(rawValue: 1 << 3)
    /// What the system does for an app in the background: banner, list, sound and badge. What an app's own
    /// notification gets in the foreground when the app set no delegate of its own to ask.
    public static let systemDefault: ForegroundOptions = [.banner, .list, .sound, .badge]
}

/// What to do with a notification that arrives while the app is in the foreground (the notification center
/// delegate's `willPresent`), by whose it is and what it is (``HeraldNotificationKind``).
public enum ForegroundPresentation: Hashable, Sendable {
    /// Present it so.
    case show(ForegroundOptions)
    /// Show nothing and carry this out: a deletion's removal or a clear (``RemoteNotification``;
    /// ``RemoteNotification/other`` when its data is incomplete, and then there is nothing to carry out).
    case hide(carryingOut: RemoteNotification)
    /// Not Herald's: the app's own delegate decides (or, without one, ``ForegroundOptions/systemDefault``).
    case passOn

    /// The presentation of the notification whose data is `userInfo`.
    ///
    /// Herald's message or edit: the list and the badge only, since the engine shows its own in-app banner for what
    /// matters (a second banner and sound would double it). A Reply that was not sent: a banner and the list, so
    /// the person sees it was not sent. A deletion or a clear: nothing, and it is carried out (the message's
    /// notification removed, the badge set). Anything else: passed on.
    public init(userInfo: [AnyHashable: Any]) {
        switch HeraldNotificationKind(userInfo: userInfo) {
        case .message, .edit: self = .show([.list, .badge])
        case .replyNotSent: self = .show([.banner, .list])
        case .deletion, .clear: self = .hide(carryingOut: RemoteNotification(userInfo: userInfo))
        case nil: self = .passOn
        }
    }
}
