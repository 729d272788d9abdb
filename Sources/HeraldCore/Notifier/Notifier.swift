/// An input to the ``Notifier``: a message, a change of the device's state, or something done to a banner.
public enum NotifierInput: Hashable, Sendable {
    /// A message arrived, or an event (``Message/event``): the one that adds this user notifies like a message;
    /// the one that removes them (or the group's deletion) takes its banners and notifications away; others are
    /// quiet.
    case message(IncomingMessage)
    /// The app came to the foreground or went to the background.
    case app(AppState)
    /// The system granted or withdrew permission to post notifications.
    case permission(granted: Bool)
    /// The user opened a conversation, or nil for "no conversation" (the list, settings, ...).
    case open(conversationID: String?)
    /// The user muted a conversation: its level is `nothing`, for ever.
    case mute(conversationID: String)
    /// The user unmuted a conversation: it follows the default level again.
    case unmute(conversationID: String)
    /// The user chose a conversation's level (nil: it follows the default level), on this device or another.
    case level(conversationID: String, LevelChoice?)
    /// The user's settings changed: default level, snooze, quiet hours.
    case settings(NotificationSettings)
    /// A general-purpose banner to queue with the rest.
    case show(Banner)
    /// A gesture on the visible banner.
    case gesture(BannerGesture)
    /// Dismiss the visible banner.
    case dismiss
    /// Dismiss the visible banner and drop every waiting one.
    case dismissAll
}

/// Everything one device does about new messages: the policy, the wording, and the banner queue.
///
/// A pure state machine like ``BannerQueue``: ``handle(_:at:)`` takes an input and the current instant and returns
/// the effects, each stamped; ``nextDeadline`` says when to call ``advance(to:)``. ``NotifierDriver`` runs it on a
/// real clock; `herald replay` runs it in virtual time.
public struct Notifier: Hashable, Sendable {
    /// The signed-in user; their own messages never notify.
    public let userID: String
    /// The device's state as the policy sees it.
    public private(set) var device: DeviceState
    /// The banner queue.
    public private(set) var queue: BannerQueue
    /// The wording rules.
    public let formatter: ContentFormatter
    private var seen: RecentIDs

    /// Creates the notifier of `userID`'s device.
    ///
    /// - Parameter seenLimit: how many message ids it remembers to recognise duplicates.
    public init(
        userID: String,
        config: BannerConfig = .standard,
        formatter: ContentFormatter = .standard,
        device: DeviceState = DeviceState(),
        seenLimit: Int = 10_000
    ) {
        self.userID = userID
        self.device = device
        self.queue = BannerQueue(config: config)
        self.formatter = formatter
        self.seen = RecentIDs(limit: seenLimit)
    }

    /// When it next needs ``advance(to:)``; nil when nothing is due.
    public var nextDeadline: Duration? { queue.nextDeadline }

    /// Fires every deadline up to and including `instant`, each at its own instant.
    public mutating func advance(to instant: Duration) -> [TimedEffect] {
        queue.advance(to: instant)
    }

    /// Fires what is due up to `instant`, then handles `input` at `instant`.
    public mutating func handle(_ input: consuming NotifierInput, at instant: Duration) -> [TimedEffect] {
        var effects = EffectLog()
        queue.advance(to: instant, into: &effects)
        effects.begin(at: queue.now)
        switch consume input {
        case .message(let incoming):
            receive(incoming, into: &effects)
        case .app(let state):
            device.appState = state
        case .permission(let granted):
            device.notificationsPermitted = granted
        case .open(let conversationID):
            device.openConversationID = conversationID
            if let conversationID {
                queue.apply(.conversationOpened(conversationID), into: &effects)
            }
        case .mute(let conversationID):
            device.levels[conversationID] = .muted
        case .unmute(let conversationID):
            device.levels[conversationID] = nil
        case .level(let conversationID, let choice):
            device.levels[conversationID] = choice
        case .settings(let settings):
            device.settings = settings
        case .show(let banner):
            queue.apply(.enqueue(banner), into: &effects)
        case .gesture(let gesture):
            queue.apply(.gesture(gesture), into: &effects)
        case .dismiss:
            queue.apply(.dismiss, into: &effects)
        case .dismissAll:
            queue.apply(.dismissAll, into: &effects)
        }
        for case .navigate(let conversationID) in effects.current.lazy.map(\.effect) {
            device.openConversationID = conversationID
        }
        effects.end()
        return effects.entries
    }

    private mutating func receive(_ incoming: IncomingMessage, into effects: inout EffectLog) {
        let message = incoming.message
        // An id is unique only within its conversation, so both name the message.
        let alreadySeen = !seen.insert("\(message.conversationID.utf8.count):\(message.conversationID)/\(message.id)")
        // Removed, left, or the group deleted: nothing of it may stay on screen or in the notification centre.
        if !alreadySeen, let event = message.event, event.ends(userID, senderID: message.senderID) {
            queue.apply(.conversationLeft(message.conversationID), into: &effects)
            effects.append(.clear(conversationID: message.conversationID))
        }
        let kind = incoming.conversation.kind
        switch NotificationPolicy.delivery(for: message, in: kind, to: userID, on: device, alreadySeen: alreadySeen) {
        case .skip(let reason):
            effects.append(.skip(messageID: message.id, reason: reason))
        case .banner:
            var banner = formatter.banner(for: incoming, viewer: userID)
            banner.mention = message.names(userID)
            queue.enqueue(banner, into: &effects)
        case .local:
            effects.append(.local(formatter.notification(for: incoming, viewer: userID)))
        case .quietLocal:
            var notification = formatter.notification(for: incoming, viewer: userID)
            notification.silent = true
            effects.append(.local(notification))
        }
    }
}
