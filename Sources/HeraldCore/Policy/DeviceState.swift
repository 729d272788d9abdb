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
    /// Conversations the user muted.
    public var mutedConversationIDs: Set<String>

    /// Creates a device state; the defaults are how an app starts: foreground, permitted, nothing open or muted.
    public init(
        appState: AppState = .foreground,
        notificationsPermitted: Bool = true,
        openConversationID: String? = nil,
        mutedConversationIDs: Set<String> = []
    ) {
        self.appState = appState
        self.notificationsPermitted = notificationsPermitted
        self.openConversationID = openConversationID
        self.mutedConversationIDs = mutedConversationIDs
    }
}
