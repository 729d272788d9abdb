/// Why a message gets no notification on a device.
public enum SkipReason: String, Codable, Hashable, Sendable, CaseIterable {
    /// The user sent it.
    case own
    /// This device already handled this message id (a reconnect or a retry).
    case duplicate
    /// The conversation is muted.
    case muted
    /// The app is in the foreground with this conversation open: the message is already on screen.
    case active
    /// The app is in the background and may not post notifications.
    case permission
    /// An event that concerns someone else (a member added or removed, a new title): a quiet line in the chat.
    case quiet
    /// A message posted silently (by the app's backend): stored and shown in the chat, never notified.
    case silent
}

/// How a device is told of a message.
public enum Delivery: Hashable, Sendable {
    /// An in-app banner.
    case banner
    /// A system notification.
    case local
    /// Nothing.
    case skip(SkipReason)
}

/// Who gets told of a message, on one device: docs/behaviour.md §1, rules 1 to 6.
public enum NotificationPolicy {
    /// Decides how the device of `userID` in state `device` is told of `message`.
    ///
    /// The first rule that applies wins: own message, already seen, silent, an event that does not add this user (quiet),
    /// muted, open on screen, then banner in the foreground, system notification in the background (nothing
    /// without permission).
    public static func delivery(
        for message: Message,
        to userID: String,
        on device: DeviceState,
        alreadySeen: Bool
    ) -> Delivery {
        if message.senderID == userID { return .skip(.own) }
        if alreadySeen { return .skip(.duplicate) }
        if message.silent { return .skip(.silent) }
        if let event = message.event, !(event.kind == .memberAdded && event.concerns(userID)) { return .skip(.quiet) }
        if device.mutedConversationIDs.contains(message.conversationID) { return .skip(.muted) }
        switch device.appState {
        case .foreground:
            return device.openConversationID == message.conversationID ? .skip(.active) : .banner
        case .background:
            return device.notificationsPermitted ? .local : .skip(.permission)
        }
    }
}
