import HeraldCore

/// Where the banner on screen is in its life.
public enum BannerPhase: Hashable, Sendable {
    /// Coming in (the spring, or the fade under Reduce Motion), for ``BannerStyle/enterDuration``.
    case entering
    /// In place.
    case shown
    /// Going away, for ``BannerStyle/exitDuration``; no longer answers gestures.
    case leaving
}

/// How a banner comes and goes.
public enum BannerTransition: Hashable, Sendable {
    /// Down from above the top edge, and back up.
    case slide
    /// In and out in place (Reduce Motion).
    case fade
}

/// The banner a view draws, and its phase.
public struct PresentedBanner: Hashable, Sendable, Identifiable {
    /// The engine's banner: title, subtitle, body, initials, avatar, count, tone, icon.
    public var banner: Banner
    /// Entering, shown or leaving.
    public var phase: BannerPhase
    /// Why it is leaving; nil before.
    public var dismissReason: DismissReason?

    /// The banner's id.
    public var id: String { banner.id }
}

/// Something the person did to the banner, as a view reports it.
///
/// A finger on the banner is one sequence, whatever it turns out to be: ``touchBegan``, any number of
/// ``touchMoved(dy:)``, then ``touchEnded(dy:)`` (or ``touchCancelled``), reported from one drag gesture of no
/// minimum distance. The presentation tells a tap from a hold and from a drag by the time and the distance: lifted
/// within ``BannerStyle/holdDuration`` and ``BannerStyle/tapSlop`` it is a tap; held longer, it only paused the
/// timer; moved further, it is a drag that dismisses past the swipe threshold and otherwise springs back. The
/// engine's timer is paused from the first touch to the last (`touchDown` … `touchUp`).
public enum PresentationIntent: Hashable, Sendable {
    /// The banner was activated without a touch (VoiceOver, a keyboard, a pointer's click): open its conversation.
    case tap
    /// The close button.
    case close
    /// A finger went down on the banner (the first ``touchMoved(dy:)`` says so too).
    case touchBegan
    /// It moved to `dy` points from where it went down (negative is up); the first of a touch begins it.
    case touchMoved(dy: Double)
    /// It lifted, `dy` points from where it went down.
    case touchEnded(dy: Double)
    /// The system took the touch (a system gesture, an incoming call): the banner springs back, nothing happens.
    case touchCancelled
    /// VoiceOver's focus came to the banner (`true`) or left it: its timer is paused while it is read.
    case accessibilityFocus(Bool)
}

/// The scene phase as SwiftUI reports it (`ScenePhase`), for ``BannerPresentation/appState(for:)``.
public enum ScenePhaseKind: Hashable, Sendable {
    /// In the foreground and interactive.
    case active
    /// Visible but not interactive: Control Center or Notification Center pulled down, a system alert (a permission
    /// prompt), the app switcher.
    case inactive
    /// Not visible.
    case background
}

/// What the presentation asks of the app: a gesture for the engine, a chat to open, a system notification to post.
public enum PresentationOutput: Hashable, Sendable {
    /// Hand this to the engine (`LiveNotifications.gesture(_:)` or `NotifierDriver.send(.gesture(_:))`).
    case gesture(BannerGesture)
    /// Open this conversation: a message banner was tapped (the engine's `navigate`).
    case navigate(conversationID: String)
    /// Post this system notification (the engine's `local`).
    case local(LocalNotification)
    /// Remove this conversation's system notifications: the user is no longer in it (the engine's `clear`).
    case clear(conversationID: String)
    /// Remove the system notification with this identifier: its message was deleted (the engine's `withdraw`).
    case withdraw(notificationID: String)
}

/// What a view layer needs to draw the engine's banners, as a pure state machine in the engine's time: the banner on
/// screen and its phase, the drag, the press, the transition, the text to announce and when to play the haptic.
///
/// Feed it the engine's effects with ``apply(_:at:)`` and the person's gestures with ``handle(_:at:)``; it answers
/// with ``PresentationOutput``s. ``nextDeadline`` says when the phase next changes (``advance(to:)``). Instants are
/// ``Duration``s from an origin the caller chooses, as for the engine, and never go backwards.
///
/// The engine decides everything about the queue (docs/behaviour.md §3); this only draws its decisions: a `show`
/// enters, a `dismiss` leaves, and gestures go back to the engine. While a drag or press is under way the engine's
/// timer is paused (`touchDown` … `touchUp`), as on the web page.
public struct BannerPresentation: Hashable, Sendable {
    /// The look and the durations of the transitions.
    public let style: BannerStyle
    /// How far up a drag must end to dismiss: the engine's ``BannerConfig/swipeThreshold``.
    public let swipeThreshold: Double
    /// The banner on screen, if any.
    public private(set) var current: PresentedBanner?
    /// How far the banner is dragged from its place (negative is up); 0 when not dragged.
    public private(set) var dragOffset: Double = 0
    /// Whether a finger holds the banner (its timer is paused).
    public private(set) var isPressed = false
    /// The finger on the banner: when it went down and whether it has moved beyond a tap's slop.
    private var touch: Touch?

    private struct Touch: Hashable, Sendable {
        var began: Duration
        var moved: Bool
    }
    /// Whether VoiceOver's focus is on the banner (its timer is paused while it is read).
    public private(set) var isAccessibilityFocused = false
    /// Whether the system asks for reduced motion.
    public var reduceMotion = false
    /// What VoiceOver should say for the banner on screen ("Charlie Davis in Team Chat: Hey, are you there?"), once
    /// each time a banner appears or its words change: a new value each time, even for the same words twice.
    public private(set) var announcement: Announcement?
    /// Announcements so far.
    private var announcements = 0
    /// Goes up by one each time a banner appears: a view plays the light haptic when it changes.
    public private(set) var hapticCount = 0
    /// The latest instant seen.
    public private(set) var now: Duration = .zero
    /// When the phase next changes (entering → shown, leaving → gone); nil when nothing is due.
    public private(set) var nextDeadline: Duration?

    /// Creates an empty presentation.
    public init(style: BannerStyle = .standard, swipeThreshold: Double = BannerConfig.standard.swipeThreshold) {
        self.style = style
        self.swipeThreshold = swipeThreshold
    }

    /// Slide, or fade when Reduce Motion is on.
    public var transition: BannerTransition { reduceMotion ? .fade : .slide }

    /// Whether the drag, if it ended now, would dismiss the banner.
    public var passesSwipeThreshold: Bool { -dragOffset >= swipeThreshold }

    /// The app state a scene phase means for the engine and the server, or nil when it changes nothing.
    ///
    /// Only `background` is the background: `inactive` is the app still on screen behind Control Center, a pulled-down
    /// Notification Center or a permission alert, and a message then is still an in-app banner (were it a system
    /// notification, the app's own `willPresent` would show it in the list only, and the person would never see it).
    /// Going from `inactive` back to `active` changes nothing either.
    public static func appState(for phase: ScenePhaseKind) -> AppState? {
        switch phase {
        case .active: .foreground
        case .inactive: nil
        case .background: .background
        }
    }

    /// Moves the phase on at every deadline up to `instant`.
    public mutating func advance(to instant: Duration) {
        while let deadline = nextDeadline, deadline <= instant {
            now = max(now, deadline)
            nextDeadline = nil
            switch current?.phase {
            case .entering: current?.phase = .shown
            case .leaving: current = nil
            case .shown, nil: break
            }
        }
        now = max(now, instant)
    }

    /// Draws an effect of the engine at `instant`.
    public mutating func apply(_ effect: NotificationEffect, at instant: Duration) -> [PresentationOutput] {
        advance(to: instant)
        switch effect {
        case .show(let banner):
            current = PresentedBanner(banner: banner, phase: .entering)
            nextDeadline = now + style.enterDuration
            dragOffset = 0
            isPressed = false
            isAccessibilityFocused = false
            touch = nil
            announce(banner)
            hapticCount += 1
        case .update(let banner):
            guard current?.id == banner.id, current?.phase != .leaving else { return [] }
            current?.banner = banner
            if ContentFormatter.standard.announcement(for: banner) != announcement?.text { announce(banner) }
        case .dismiss(let id, let reason):
            guard current?.id == id, current?.phase != .leaving else { return [] }
            current?.phase = .leaving
            current?.dismissReason = reason
            nextDeadline = now + style.exitDuration
            isPressed = false
            isAccessibilityFocused = false
            touch = nil
        case .navigate(let conversationID):
            return [.navigate(conversationID: conversationID)]
        case .local(let notification):
            return [.local(notification)]
        case .clear(let conversationID):
            return [.clear(conversationID: conversationID)]
        case .withdraw(let notificationID):
            return [.withdraw(notificationID: notificationID)]
        case .drop, .skip:
            break
        }
        return []
    }

    /// Handles a gesture at `instant`; what it answers goes to the engine. A leaving banner answers nothing.
    public mutating func handle(_ intent: PresentationIntent, at instant: Duration) -> [PresentationOutput] {
        advance(to: instant)
        guard let current, current.phase != .leaving else { return [] }
        switch intent {
        case .tap:
            return release() + [.gesture(.tap)]
        case .close:
            return release() + [.gesture(.close)]
        case .touchBegan:
            guard touch == nil else { return [] }
            touch = Touch(began: now, moved: false)
            return press()
        case .touchMoved(let dy):
            let began = touch?.began ?? now
            let moved = (touch?.moved ?? false) || abs(dy) > style.tapSlop
            touch = Touch(began: began, moved: moved)
            if moved { dragOffset = dy < 0 ? dy : dy * style.downwardDragFactor }
            return press()
        case .touchEnded(let dy):
            let began = touch?.began ?? now
            let moved = (touch?.moved ?? false) || abs(dy) > style.tapSlop
            touch = nil
            if moved {
                // Far enough up, the banner leaves from where the finger left it; otherwise it springs back.
                dragOffset = -dy >= swipeThreshold ? dy : 0
                return release() + [.gesture(.swipe(dy: dy))]
            }
            dragOffset = 0
            // A short touch in place is a tap; a longer one was a hold, which only paused the timer.
            return now - began < style.holdDuration ? release() + [.gesture(.tap)] : release()
        case .touchCancelled:
            // After the touch ended, a late cancellation (a view's gesture state resetting) changes nothing.
            guard touch != nil else { return [] }
            touch = nil
            dragOffset = 0
            return release()
        case .accessibilityFocus(let focused):
            // VoiceOver reads the banner: it stays while read, as under a finger.
            let wasHeld = isHeld
            isAccessibilityFocused = focused
            return hold(changedFrom: wasHeld)
        }
    }

    /// Whether something holds the banner (a finger, or VoiceOver's focus): the engine's timer is paused.
    public var isHeld: Bool { isPressed || isAccessibilityFocused }

    private mutating func press() -> [PresentationOutput] {
        guard !isPressed else { return [] }
        let wasHeld = isHeld
        isPressed = true
        return hold(changedFrom: wasHeld)
    }

    private mutating func release() -> [PresentationOutput] {
        guard isPressed else { return [] }
        let wasHeld = isHeld
        isPressed = false
        return hold(changedFrom: wasHeld)
    }

    /// The engine's pause from the first hold to the last: `touchDown` when the banner became held, `touchUp` when
    /// nothing holds it any more.
    private func hold(changedFrom wasHeld: Bool) -> [PresentationOutput] {
        switch (wasHeld, isHeld) {
        case (false, true): [.gesture(.touchDown)]
        case (true, false): [.gesture(.touchUp)]
        default: []
        }
    }

    private mutating func announce(_ banner: Banner) {
        announcements += 1
        announcement = Announcement(text: ContentFormatter.standard.announcement(for: banner), serial: announcements)
    }
}

/// Words for VoiceOver to say, once: two announcements of the same words are still two (a view posts each new value).
public struct Announcement: Hashable, Sendable {
    /// What to say.
    public var text: String
    /// Which announcement this is, counting from 1.
    public var serial: Int
}
