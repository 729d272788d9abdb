import HeraldProtocol

/// The system's answer to "may this app notify?" on Apple platforms, as a plain value: UserNotifications'
/// `UNAuthorizationStatus` (`UNUserNotificationCenter.current().notificationSettings().authorizationStatus`), case
/// for case. What the server is told of it is ``DevicePermission/init(_:)``; HeraldUI reads the status and hands it
/// here, so the mapping is tested on every platform.
public enum NotificationAuthorization: Hashable, Sendable, CaseIterable {
    /// The person has not been asked yet (`.notDetermined`).
    case notDetermined
    /// The person turned notifications off for the app (`.denied`).
    case denied
    /// Notifications are allowed (`.authorized`).
    case authorized
    /// Quiet delivery: to Notification Center, without a sound or a banner (`.provisional`).
    case provisional
    /// Allowed for a limited time: an App Clip's (`.ephemeral`).
    case ephemeral
}

extension DevicePermission {
    /// What the server is told of the system's `authorization`: authorized and ephemeral (an App Clip's, allowed
    /// for a while) are `granted`, denied `denied`, provisional `provisional`, not determined `not_asked`.
    public init(_ authorization: NotificationAuthorization) {
        switch authorization {
        case .notDetermined: self = .notAsked
        case .denied: self = .denied
        case .authorized, .ephemeral: self = .granted
        case .provisional: self = .provisional
        }
    }
}
