/// Whether the app is on screen.
public enum AppState: String, Codable, Hashable, Sendable, CaseIterable {
    /// On screen: new messages elsewhere become in-app banners.
    case foreground
    /// Not on screen: new messages become system notifications.
    case background
}

/// What one device knows about itself that decides how it is told of a message.
public struct DeviceState: Hashable, Sendable {
    /// Foreground or background; an app starts in the foreground.
    public var appState: AppState
    /// Whether the system lets the app post notifications.
    public var notificationsPermitted: Bool
    /// The conversation on screen, or nil (the list, settings, ...).
    public var openConversationID: String?
    /// The user's own levels, by conversation (a mute is ``LevelChoice/muted``); the others follow the default.
    public var levels: [String: LevelChoice]
    /// The user's settings: default level, snooze, quiet hours.
    public var settings: NotificationSettings

    /// Creates a device state; the defaults are how an app starts: foreground, permitted, nothing open, no levels
    /// and settings of their own.
    public init(
        appState: AppState = .foreground,
        notificationsPermitted: Bool = true,
        openConversationID: String? = nil,
        levels: [String: LevelChoice] = [:],
        settings: NotificationSettings = NotificationSettings()
    ) {
        self.appState = appState
        self.notificationsPermitted = notificationsPermitted
        self.openConversationID = openConversationID
        self.levels = levels
        self.settings = settings
    }

    /// The conversations muted for ever (level `nothing` with no end).
    public var mutedConversationIDs: Set<String> {
        Set(levels.lazy.filter { $0.value == .muted }.map(\.key))
    }
}
