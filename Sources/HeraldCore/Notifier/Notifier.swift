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
    /// The server pushed this message to this device: its notification is the push's, so the device shows none of
    /// its own (a banner or system notification held by ``Notifier/localHold`` is dropped; one that arrives later is
    /// skipped).
    case pushed(conversationID: String, messageID: String)
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
    /// How long a system notification, and the banner of a late message (``lateAfter``), wait before they are shown,
    /// for a ``NotifierInput/pushed(conversationID:messageID:)`` that would make them a second interruption: a device
    /// woken with frames waiting reads the message, then the server's word that it pushed it. Zero: shown at once.
    public let localHold: Duration
    /// How much later than the promptest message so far a message may reach the engine and still count as live, by
    /// the server's clock (``Message/sentAt``) against the engine's instants: a banner for a later one (or for the
    /// first message, with nothing to compare) waits ``localHold``, as it may have been pushed meanwhile.
    ///
    /// The server pushes a connected device's message only once the device has not confirmed it for 2 s at the
    /// least (`HERALD_CONFIRM_WITHIN`, 5 s by default), and clients confirm within a second of taking a message
    /// in, so a message live within half a second is confirmed in time and never pushed: its banner shows at once.
    public static let lateAfter: Duration = .milliseconds(500)
    /// One interruption per burst: a conversation's system notifications within a window of the first replace it
    /// silently, until the conversation is opened (``NotificationBursts``).
    public private(set) var bursts: NotificationBursts
    private var seen: RecentSet<MessageKey>
    private var pushed: RecentSet<MessageKey>
    /// The smallest lag seen so far between a message's time on the server's clock and its arrival on the engine's
    /// (the engine's instant minus the server's): a message that came at once, the clocks' offset and the network's
    /// quickest delivery. Nil until the first message.
    private var promptest: Duration?
    /// A banner or system notification held (``localHold``), until its deadline.
    private struct Held: Hashable, Sendable {
        var deadline: Duration
        var key: MessageKey
        var notice: Notice
        var namesMember: Bool
    }

    /// What a ``Held`` shows when its deadline comes.
    private enum Notice: Hashable, Sendable {
        case banner(Banner)
        case local(LocalNotification)
    }

    /// Banners and system notifications held, in the order they are due.
    private var held: [Held] = []
    /// The system notifications it posted, newest last, at most ``followedLimit``: each the latest words under its
    /// identifier, so that an edit of its message can replace them and a deletion remove them.
    private var posted: [Posted] = []
    private struct Posted: Hashable, Sendable {
        var key: MessageKey
        var notification: LocalNotification
    }

    /// How many of its latest system notifications a device follows when their messages are edited or deleted.
    public static let followedLimit = 64

    /// Creates the notifier of `userID`'s device.
    ///
    /// - Parameters:
    ///   - seenLimit: how many message ids it remembers to recognise duplicates.
    ///   - burstWindow: how long after a conversation's system notification the next ones replace it silently
    ///     (``NotificationBursts``); zero notifies each one.
    public init(
        userID: String,
        config: BannerConfig = .standard,
        formatter: ContentFormatter = .standard,
        device: DeviceState = DeviceState(),
        seenLimit: Int = 10_000,
        localHold: Duration = .zero,
        burstWindow: Duration = NotificationBursts.defaultWindow
    ) {
        self.bursts = NotificationBursts(window: burstWindow)
        self.userID = userID
        self.device = device
        self.queue = BannerQueue(config: config)
        self.formatter = formatter
        self.localHold = max(.zero, localHold)
        self.seen = RecentSet(limit: seenLimit)
        self.pushed = RecentSet(limit: seenLimit)
    }

    /// When it next needs ``advance(to:)``; nil when nothing is due.
    public var nextDeadline: Duration? {
        switch (queue.nextDeadline, held.first?.deadline) {
        case (let banner?, let local?): min(banner, local)
        case (let banner, let local): banner ?? local
        }
    }

    /// Fires every deadline up to and including `instant`, each at its own instant.
    public mutating func advance(to instant: Duration) -> [TimedEffect] {
        var effects = EffectLog()
        fire(upTo: instant, into: &effects)
        return effects.entries
    }

    /// The banner queue's deadlines and the held notifications', in time order, up to `instant`.
    private mutating func fire(upTo instant: Duration, into effects: inout EffectLog) {
        while let first = held.first, first.deadline <= instant {
            queue.advance(to: first.deadline, into: &effects)
            held.removeFirst()
            let now = max(queue.now, first.deadline)
            effects.begin(at: now)
            switch first.notice {
            case .banner(let banner):
                queue.enqueue(banner, into: &effects)
            case .local(let notification):
                effects.append(.local(posting(notification, key: first.key, namesMember: first.namesMember, at: now)))
            }
            effects.end()
        }
        queue.advance(to: instant, into: &effects)
    }

    /// Fires what is due up to `instant`, then handles `input` at `instant`.
    public mutating func handle(_ input: consuming NotifierInput, at instant: Duration) -> [TimedEffect] {
        var effects = EffectLog()
        fire(upTo: instant, into: &effects)
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
                bursts.end(conversationID)
                dropHeldBanners(of: conversationID, into: &effects)
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
        case .pushed(let conversationID, let messageID):
            let key = MessageKey(conversationID: conversationID, messageID: messageID)
            _ = pushed.insert(key)
            if let index = held.firstIndex(where: { $0.key == key }) {
                held.remove(at: index)
                effects.append(.skip(messageID: messageID, reason: .pushed))
            }
        }
        for case .navigate(let conversationID) in effects.current.lazy.map(\.effect) {
            device.openConversationID = conversationID
            bursts.end(conversationID)
            dropHeldBanners(of: conversationID, into: &effects)
        }
        effects.end()
        return effects.entries
    }

    /// What names a message on this device: an id is unique only within its conversation, so both (kept apart, not
    /// joined into a new string for every message).
    ///
    /// Its hash is worked out once: the sets of recent keys rehash their members as they forget the oldest.
    struct MessageKey: Hashable, Sendable {
        let conversationID: String
        let messageID: String
        private let hash: Int

        init(conversationID: String, messageID: String) {
            self.conversationID = conversationID
            self.messageID = messageID
            var hasher = Hasher()
            hasher.combine(conversationID)
            hasher.combine(messageID)
            hash = hasher.finalize()
        }

        static func == (left: MessageKey, right: MessageKey) -> Bool {
            left.hash == right.hash && left.conversationID == right.conversationID && left.messageID == right.messageID
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }
    }

    /// Whether `message`, arriving now, is late (``lateAfter``), and it taken into ``promptest``.
    private mutating func arrivesLate(_ message: Message) -> Bool {
        // The server's time in whole microseconds after 2001-01-01, as the JavaScript engine counts it.
        let sent = Duration.microseconds(Int64((message.sentAt.timeIntervalSinceReferenceDate * 1_000_000).rounded()))
        let lag = queue.now - sent
        defer { promptest = min(promptest ?? lag, lag) }
        guard let promptest else { return true }
        return lag - promptest > Self.lateAfter
    }

    /// Holds `notice` for ``localHold``, among the others in the order they are due.
    private mutating func hold(_ notice: Notice, key: MessageKey, namesMember: Bool) {
        let deadline = queue.now + localHold
        let index = held.firstIndex { $0.deadline > deadline } ?? held.endIndex
        held.insert(Held(deadline: deadline, key: key, notice: notice, namesMember: namesMember), at: index)
    }

    /// The conversation is on screen: the banners held for it will never show (reason `active`).
    private mutating func dropHeldBanners(of conversationID: String, into effects: inout EffectLog) {
        held.removeAll { held in
            guard held.key.conversationID == conversationID, case .banner = held.notice else { return false }
            effects.append(.skip(messageID: held.key.messageID, reason: .active))
            return true
        }
    }

    private mutating func receive(_ incoming: IncomingMessage, into effects: inout EffectLog) {
        let message = incoming.message
        let key = MessageKey(conversationID: message.conversationID, messageID: message.id)
        let late = arrivesLate(message)
        let alreadySeen = !seen.insert(key)
        // Removed, left, or the group deleted: nothing of it may stay on screen or in the notification centre.
        if !alreadySeen, let event = message.event, event.ends(userID, senderID: message.senderID) {
            queue.apply(.conversationLeft(message.conversationID), into: &effects)
            effects.append(.clear(conversationID: message.conversationID))
            bursts.end(message.conversationID)
            posted.removeAll { $0.key.conversationID == message.conversationID }
            held.removeAll { $0.key.conversationID == message.conversationID }
        }
        if !alreadySeen, let event = message.event, event.isAmendment, let target = event.messageID {
            follow(incoming, to: MessageKey(conversationID: message.conversationID, messageID: target), into: &effects)
        }
        let kind = incoming.conversation.kind
        var delivery = NotificationPolicy.delivery(for: message, in: kind, to: userID, on: device, alreadySeen: alreadySeen)
        if case .skip = delivery {
        } else if pushed.contains(key) {
            // Shown by its push already (the server said so before the message came: a catch-up).
            delivery = .skip(.pushed)
        }
        switch delivery {
        case .skip(let reason):
            effects.append(.skip(messageID: message.id, reason: reason))
        case .banner:
            var banner = formatter.banner(for: incoming, viewer: userID)
            banner.mention = message.names(userID)
            let behindHeld = held.contains { if case .banner = $0.notice { true } else { false } }
            if late || behindHeld, localHold > .zero {
                // It may have been pushed while this device was frozen or cut off: the server's word follows it. (One
                // behind a held banner waits too: banners show in the order their messages came.)
                hold(.banner(banner), key: key, namesMember: banner.mention)
            } else {
                queue.enqueue(banner, into: &effects)
            }
        case .local, .quietLocal:
            var notification = formatter.notification(for: incoming, viewer: userID)
            notification.silent = delivery == .quietLocal
            if localHold > .zero {
                hold(.local(notification), key: key, namesMember: message.names(userID))
            } else {
                effects.append(.local(posting(notification, key: key, namesMember: message.names(userID), at: queue.now)))
            }
        }
    }

    /// What an edit or a deletion (`amendment`) of the message `target` changes on this device: the banner showing
    /// it, a held banner or system notification of it, and the posted one whose latest words are its.
    private mutating func follow(_ amendment: IncomingMessage, to target: MessageKey, into effects: inout EffectLog) {
        let deleted = amendment.message.event?.kind == .messageDeleted
        let postedIndex = posted.lastIndex { $0.key == target }
        if deleted {
            queue.apply(.messageDeleted(conversationID: target.conversationID, messageID: target.messageID), into: &effects)
            held.removeAll { $0.key == target }
            if let postedIndex {
                effects.append(.withdraw(notificationID: posted[postedIndex].notification.identifier))
                posted.remove(at: postedIndex)
            }
            return
        }
        // The edited message as its sender now has it (an edit's entry carries its new text and mentions).
        var edited = amendment
        edited.message = Message(
            id: target.messageID, conversationID: target.conversationID, senderID: amendment.message.senderID,
            text: amendment.message.text, imageURL: amendment.message.imageURL, mentions: amendment.message.mentions,
            mentionsAll: amendment.message.mentionsAll, edited: true)
        queue.apply(
            .messageEdited(conversationID: target.conversationID, messageID: target.messageID, body: formatter.preview(of: edited.message)),
            into: &effects)
        let words = formatter.notification(for: edited, viewer: userID)
        for index in held.indices where held[index].key == target {
            switch held[index].notice {
            case .banner(var banner):
                banner.body = formatter.preview(of: edited.message)
                held[index].notice = .banner(banner)
            case .local(var notification):
                notification.title = words.title
                notification.body = words.body
                held[index].notice = .local(notification)
            }
        }
        if let postedIndex {
            var notification = posted[postedIndex].notification
            notification.title = words.title
            notification.body = words.body
            notification.silent = true
            notification.onlyIfDelivered = true
            posted[postedIndex].notification = notification
            effects.append(.local(notification))
        }
    }

    /// `notification` as it is posted at `now` (``inBurst(_:namesMember:at:)``), remembered as the latest words under
    /// its identifier.
    private mutating func posting(
        _ notification: LocalNotification, key: MessageKey, namesMember: Bool, at now: Duration
    ) -> LocalNotification {
        let notification = inBurst(notification, namesMember: namesMember, at: now)
        posted.removeAll { $0.notification.identifier == notification.identifier }
        posted.append(Posted(key: key, notification: notification))
        if posted.count > Self.followedLimit { posted.removeFirst() }
        return notification
    }

    /// `notification` as it is posted at `now`: inside a conversation's burst, it replaces the burst's first silently
    /// (unless it names the member) and carries the count.
    private mutating func inBurst(_ notification: LocalNotification, namesMember: Bool, at now: Duration) -> LocalNotification {
        var notification = notification
        let burst = bursts.decide(notification.thread, identifier: notification.identifier, namesMember: namesMember, at: now)
        if burst.count > 1 {
            notification.replaces = burst.identifier
            notification.count = burst.count
            if !burst.alerts { notification.silent = true }
        }
        return notification
    }
}
