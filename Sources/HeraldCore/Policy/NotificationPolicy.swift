/// Why a message gets no notification on a device.
public enum SkipReason: String, Codable, Hashable, Sendable, CaseIterable {
    /// The user sent it.
    case own
    /// This device already handled this message id (a reconnect or a retry).
    case duplicate
    /// The conversation's level is `nothing` (muted): mentions included.
    case muted
    /// The conversation's level is `mentions` and the message does not mention the user.
    case unmentioned
    /// The user snoozed notifications (do not disturb) when the message was sent.
    case snoozed
    /// The app is in the foreground with this conversation open: the message is already on screen.
    case active
    /// The app is in the background and may not post notifications.
    case permission
    /// An event that concerns someone else (a member added or removed, a new title): a quiet line in the chat.
    case quiet
    /// A message posted silently (by the app's backend): stored and shown in the chat, never notified.
    case silent
    /// The server pushed it to this device (its push is the notification): not notified again here.
    case pushed
}

/// How a device is told of a message.
public enum Delivery: Hashable, Sendable {
    /// An in-app banner.
    case banner
    /// A system notification, with sound.
    case local
    /// A system notification without sound or vibration: sent during the user's quiet hours.
    case quietLocal
    /// Nothing.
    case skip(SkipReason)
}

/// How a notification that the user's choices let through interrupts: with sound, or quietly.
public enum Interruption: Hashable, Sendable {
    /// Not at all: the level or the snooze holds it back.
    case skip(SkipReason)
    /// As usual: sound and vibration.
    case ring
    /// Without sound or vibration (quiet hours): APNs `passive`, FCM low priority, Web Push `silent`.
    case quietly
}

/// Who gets told of a message, on one device: docs/behaviour.md §1, rules 1 to 9.
public enum NotificationPolicy {
    /// Decides how the device of `userID` in state `device` is told of `message`, posted in a conversation of `kind`.
    ///
    /// The first rule that applies wins: own message, already seen, silent, an event that does not add this user
    /// (quiet), the user's level and snooze (``interruption(for:in:to:level:settings:)``), open on screen, then
    /// banner in the foreground, system notification in the background (nothing without permission; without sound
    /// in quiet hours).
    public static func delivery(
        for message: Message,
        in kind: Conversation.Kind,
        to userID: String,
        on device: DeviceState,
        alreadySeen: Bool
    ) -> Delivery {
        if message.senderID == userID { return .skip(.own) }
        if alreadySeen { return .skip(.duplicate) }
        if message.silent { return .skip(.silent) }
        if let event = message.event, !(event.kind == .memberAdded && event.concerns(userID)) { return .skip(.quiet) }
        let interruption = interruption(
            for: message, in: kind, to: userID, level: device.levels[message.conversationID], settings: device.settings)
        if case .skip(let reason) = interruption { return .skip(reason) }
        switch device.appState {
        case .foreground:
            return device.openConversationID == message.conversationID ? .skip(.active) : .banner
        case .background:
            guard device.notificationsPermitted else { return .skip(.permission) }
            return interruption == .quietly ? .quietLocal : .local
        }
    }

    /// The user's own choices applied to a message that would notify them, at the instant it was sent
    /// (``Message/sentAt``, the server's clock): the same rule on the server (pushes) and on every device.
    ///
    /// The conversation's `level` (while it holds, else the default level): `nothing` skips (`muted`), even a
    /// mention; `mentions` skips what does not mention the user (`unmentioned`). Then snooze skips everything
    /// (`snoozed`). In quiet hours the rest arrives quietly, mentions too unless they may ring through.
    public static func interruption(
        for message: Message,
        in kind: Conversation.Kind,
        to userID: String,
        level choice: LevelChoice?,
        settings: NotificationSettings
    ) -> Interruption {
        let instant = message.sentAt
        let level = choice.flatMap { $0.holds(at: instant) ? $0.level : nil } ?? settings.defaultLevel
        let mentioned = message.isMention(of: userID, in: kind)
        switch level {
        case .nothing: return .skip(.muted)
        case .mentions where !mentioned: return .skip(.unmentioned)
        case .all, .mentions: break
        }
        if settings.snoozed(at: instant) { return .skip(.snoozed) }
        if settings.isQuiet(at: instant), !(mentioned && settings.mentionsDuringQuietHours) { return .quietly }
        return .ring
    }
}
