import HeraldCore

/// What one connection tells the server about its device.
public struct ConnectionPresence: Hashable, Sendable {
    /// Foreground or background; a connection starts in the foreground.
    public var appState: AppState
    /// The conversation it has open, if any.
    public var focus: String?
    /// The app's id for the device (the stream's `device` parameter), if it said: a device with a live connection
    /// shows its own notification, and its push waits for its confirmation.
    public var device: String?

    /// One of these, member by member.
    package init(appState: AppState, focus: String? = nil, device: String? = nil) {
        self.appState = appState
        self.focus = focus
        self.device = device
    }
}

/// A connection's presence changed (or it ended: `presence` nil), as other nodes need to know it.
public struct PresenceChange: Sendable {
    /// The connection, unique on this node.
    public var connection: Int
    /// Its user.
    public var userID: String
    /// What it says now; nil once it closed.
    public var presence: ConnectionPresence?

    /// One of these, member by member.
    package init(connection: Int, userID: String, presence: ConnectionPresence?) {
        self.connection = connection
        self.userID = userID
        self.presence = presence
    }
}
