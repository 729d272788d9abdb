/// The banner engine: which banner is on screen, which wait, and when each goes.
///
/// A pure state machine. Give it an input and the current instant; it returns the effects, each stamped with the
/// instant it happened, and exposes ``nextDeadline``, the instant at which it next needs ``advance(to:)``.
/// Timers are deadlines in its state, never sleeps, so it runs the same in real time (``NotifierDriver``) and in
/// virtual time (tests, `herald replay`).
///
/// Instants are ``Duration``s from an origin the caller chooses, and must never go backwards; an earlier instant
/// is treated as the latest one seen. Banner ids must be unique: the ``Notifier`` drops repeated message ids
/// before they reach the queue, and ``NotifierDriver`` gives general banners fresh ids.
///
/// The rules (docs/behaviour.md §3): one banner visible; it goes ``BannerConfig/duration`` after it appeared (its own
/// duration for general banners), paused while touched; at most ``BannerConfig/capacity`` wait, and one more
/// pushes out the oldest waiting; the next appears ``BannerConfig/gap`` after the previous one was dismissed.
public struct BannerQueue: Hashable, Sendable {
    /// The options it runs with.
    public let config: BannerConfig
    /// The banner on screen, if any.
    public private(set) var visible: Banner?
    /// The visible banner's timer.
    public private(set) var timer: BannerTimer?
    /// The banners waiting, oldest first.
    public private(set) var waiting: [Banner] = []
    /// Until when nothing may appear: the exit animation of the last dismissed banner.
    public private(set) var quietUntil: Duration?
    /// The latest instant it has seen.
    public private(set) var now: Duration = .zero

    /// Creates an empty queue.
    public init(config: BannerConfig = .standard) {
        self.config = config
    }

    /// When the queue next needs ``advance(to:)``: the visible banner's timeout, or the end of the gap before a
    /// waiting banner appears. Nil when nothing is due (no banner, or the visible one is touched).
    public var nextDeadline: Duration? {
        if let timer { return timer.deadline }
        return waiting.isEmpty ? nil : quietUntil
    }

    /// Fires every deadline up to and including `instant`, each at its own instant.
    public mutating func advance(to instant: Duration) -> [TimedEffect] {
        var log = EffectLog()
        advance(to: instant, into: &log)
        return log.entries
    }

    /// Fires what is due up to `instant`, then handles `input` at `instant`.
    public mutating func handle(_ input: BannerInput, at instant: Duration) -> [TimedEffect] {
        var log = EffectLog()
        advance(to: instant, into: &log)
        log.begin(at: now)
        apply(input, into: &log)
        log.end()
        return log.entries
    }

    /// Fires every deadline up to `instant` into `log`, then makes `instant` the current one.
    mutating func advance(to instant: Duration, into log: inout EffectLog) {
        while let deadline = nextDeadline, deadline <= instant {
            now = max(now, deadline)
            log.begin(at: now)
            if isShowing {
                dismissVisible(.timeout, into: &log)
            }
            showNextIfDue(into: &log)
            log.end()
        }
        now = max(now, instant)
    }

    /// Applies `input` at ``now`` without firing deadlines; the effects are in the order they happened.
    mutating func apply(_ input: BannerInput, into effects: inout EffectLog) {
        switch input {
        case .enqueue(let banner):
            enqueue(banner, into: &effects)
            return
        case .gesture(let gesture):
            apply(gesture, into: &effects)
        case .conversationOpened(let conversationID):
            conversationOpened(conversationID, into: &effects)
        case .conversationLeft(let conversationID):
            conversationGone(conversationID, dismiss: .removed, drop: .removed, into: &effects)
        case .dismiss:
            dismissVisible(.programmatic, into: &effects)
        case .dismissAll:
            dismissVisible(.programmatic, into: &effects)
            for banner in waiting {
                effects.append(.drop(bannerID: banner.id, reason: .programmatic))
            }
            waiting.removeAll()
        case .messageEdited(let conversationID, let messageID, let body):
            let shows = { (banner: Banner) in banner.shows(messageID, in: conversationID) }
            if var current = visible, shows(current) {
                current.body = body
                visible = current
                effects.append(.update(current))
            }
            for index in waiting.indices where shows(waiting[index]) {
                waiting[index].body = body
            }
        case .messageDeleted(let conversationID, let messageID):
            if let current = visible, current.shows(messageID, in: conversationID) {
                dismissVisible(.deleted, into: &effects)
            }
            waiting.removeAll { banner in
                guard banner.shows(messageID, in: conversationID) else { return false }
                effects.append(.drop(bannerID: banner.id, reason: .deleted))
                return true
            }
        }
        showNextIfDue(into: &effects)
    }

    /// Shows `banner` now if nothing is on screen, else queues (or, coalescing, merges) it, at ``now``.
    mutating func enqueue(_ banner: consuming Banner, into effects: inout EffectLog) {
        if config.coalesce, let conversationID = banner.conversationID {
            if var current = visible, current.conversationID == conversationID {
                current.absorb(banner)
                visible = current
                timer?.restart(duration: current.duration ?? config.duration, at: now)
                effects.append(.update(current))
                return
            }
            if let index = waiting.firstIndex(where: { $0.conversationID == conversationID }) {
                waiting[index].absorb(banner)
                if waiting[index].mention, index > firstPlainSlot {
                    // A mention absorbed into a plain banner takes it ahead of the other plain ones.
                    waiting.insert(waiting.remove(at: index), at: firstPlainSlot)
                }
                return
            }
        }
        // Mentions wait ahead of banners that are not, behind earlier mentions.
        waiting.insert(banner, at: banner.mention ? firstPlainSlot : waiting.count)
        let showsNow = !isShowing && !isQuiet
        if !showsNow, waiting.count > config.capacity {
            // The oldest plain banner makes room; only mentions waiting, the oldest mention.
            let pushedOut = waiting.remove(at: waiting.indices.contains(firstPlainSlot) ? firstPlainSlot : 0)
            effects.append(.drop(bannerID: pushedOut.id, reason: .capacity))
        }
        showNextIfDue(into: &effects)
    }

    /// Where the first waiting banner that is not a mention is (the end when there is none).
    private var firstPlainSlot: Int {
        waiting.firstIndex { !$0.mention } ?? waiting.count
    }

    private mutating func apply(_ gesture: BannerGesture, into effects: inout EffectLog) {
        guard let banner = visible else { return }
        switch gesture {
        case .tap:
            dismissVisible(.tap, into: &effects)
            if let conversationID = banner.conversationID {
                effects.append(.navigate(conversationID: conversationID))
                conversationOpened(conversationID, into: &effects)
            }
        case .close:
            dismissVisible(.close, into: &effects)
        case .swipe(let dy):
            if -dy >= config.swipeThreshold {
                dismissVisible(.swipe, into: &effects)
            }
        case .touchDown:
            timer?.pause(at: now)
        case .touchUp:
            timer?.resume(at: now)
        }
    }

    private mutating func conversationOpened(_ conversationID: String, into effects: inout EffectLog) {
        conversationGone(conversationID, dismiss: .opened, drop: .opened, into: &effects)
    }

    /// The banners of `conversationID` go: the visible one dismissed, the waiting ones dropped.
    private mutating func conversationGone(
        _ conversationID: String, dismiss: DismissReason, drop: DropReason, into effects: inout EffectLog
    ) {
        if visible?.conversationID == conversationID {
            dismissVisible(dismiss, into: &effects)
        }
        waiting.removeAll { banner in
            guard banner.conversationID == conversationID else { return false }
            effects.append(.drop(bannerID: banner.id, reason: drop))
            return true
        }
    }

    private mutating func dismissVisible(_ reason: DismissReason, into effects: inout EffectLog) {
        guard let banner = visible else { return }
        visible = nil
        timer = nil
        quietUntil = now + config.gap
        effects.append(.dismiss(bannerID: banner.id, reason: reason))
    }

    /// Whether a banner is on screen (its timer exists exactly while it is; cheaper to test than the banner).
    private var isShowing: Bool { timer != nil }

    private var isQuiet: Bool {
        guard let quietUntil else { return false }
        return now < quietUntil
    }

    private mutating func showNextIfDue(into effects: inout EffectLog) {
        guard !isShowing, !isQuiet, !waiting.isEmpty else { return }
        let banner = waiting.removeFirst()
        visible = banner
        timer = BannerTimer(duration: banner.duration ?? config.duration, at: now)
        quietUntil = nil
        effects.append(.show(banner))
    }
}

extension Banner {
    /// Takes in a later banner for the same conversation: one more message, the latest sender and preview.
    mutating func absorb(_ later: Banner) {
        count += later.count
        title = later.title
        subtitle = later.subtitle
        body = later.body
        avatarURL = later.avatarURL
        senderID = later.senderID
        messageID = later.messageID
        mention = mention || later.mention
    }

    /// Whether its words are those of the message `messageID` of `conversationID` (compared byte for byte).
    func shows(_ messageID: String, in conversationID: String) -> Bool {
        guard let shown = self.messageID, let own = self.conversationID else { return false }
        return shown.utf8.elementsEqual(messageID.utf8) && own.utf8.elementsEqual(conversationID.utf8)
    }
}
