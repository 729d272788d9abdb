import HeraldCore
import Observation

/// The observable state a view binds to for in-app banners: a ``BannerPresentation`` run on a real clock, fed by the
/// engine's effects, and the intents a view sends back.
///
/// Feed it from `LiveNotifications` (messages from the stream: `HeraldUI` adds `BannerPresenter(live:)`) or a bare
/// `NotifierDriver` (general banners only):
///
/// ```swift
/// let presenter = BannerPresenter(live: live)
/// presenter.onNavigate = { conversationID in router.open(conversationID) }
/// async let running: Void = presenter.run(effects: live.effects, clock: ContinuousClock())
/// ```
///
/// Every decision is here or in the engine; a view only draws ``current`` and reports gestures.
@MainActor
@Observable
public final class BannerPresenter {
    /// The state: banner, phase, drag, press, transition, announcement, haptic count.
    public private(set) var presentation: BannerPresentation

    /// Called when a tapped message banner asks to open its conversation.
    @ObservationIgnored public var onNavigate: @MainActor (String) -> Void = { _ in }
    /// Called with each system notification the engine wants posted (the app is in the background).
    @ObservationIgnored public var onLocal: @MainActor (LocalNotification) -> Void = { _ in }
    /// Called with a conversation the user is no longer in (removed, left, deleted): remove its system notifications.
    @ObservationIgnored public var onClear: @MainActor (String) -> Void = { _ in }
    /// Called with the identifier of a system notification whose message was deleted: remove it.
    @ObservationIgnored public var onWithdraw: @MainActor (String) -> Void = { _ in }

    @ObservationIgnored private let gestures: @Sendable (BannerGesture) -> Void
    @ObservationIgnored private let appState: @Sendable (AppState) -> Void
    @ObservationIgnored private var elapsed: @MainActor () -> Duration = { .zero }

    /// A presenter whose gestures go to `gestures` and app state to `appState`.
    public init(
        style: BannerStyle = .standard,
        swipeThreshold: Double = BannerConfig.standard.swipeThreshold,
        gestures: @escaping @Sendable (BannerGesture) -> Void,
        appState: @escaping @Sendable (AppState) -> Void
    ) {
        presentation = BannerPresentation(style: style, swipeThreshold: swipeThreshold)
        self.gestures = gestures
        self.appState = appState
    }

    /// A presenter for a bare driver (general banners: "Saved", "Upload failed").
    public convenience init<C: Clock>(driver: NotifierDriver<C>, style: BannerStyle = .standard) where C.Duration == Duration {
        self.init(style: style, gestures: { driver.send(.gesture($0)) }, appState: { driver.send(.app($0)) })
    }

    /// The banner on screen and its phase, if any.
    public var current: PresentedBanner? { presentation.current }
    /// How far the banner is dragged (negative is up).
    public var dragOffset: Double { presentation.dragOffset }
    /// Whether the drag, ended now, would dismiss.
    public var passesSwipeThreshold: Bool { presentation.passesSwipeThreshold }
    /// Whether a finger holds the banner.
    public var isPressed: Bool { presentation.isPressed }
    /// Slide, or fade under Reduce Motion.
    public var transition: BannerTransition { presentation.transition }
    /// What VoiceOver should announce for the banner on screen: a new value each time (post it on change).
    public var announcement: Announcement? { presentation.announcement }
    /// Changes each time a banner appears: the trigger for the light haptic.
    public var hapticCount: Int { presentation.hapticCount }

    /// Draws `effects` until they end or the calling task is cancelled, moving phases on `clock`.
    public func run<C: Clock>(effects: AsyncStream<NotificationEffect>, clock: C) async where C.Duration == Duration {
        let origin = clock.now
        elapsed = { origin.duration(to: clock.now) }
        let (commands, sink) = AsyncStream<PresenterCommand>.makeStream()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await effect in effects { sink.yield(.effect(effect)) }
                sink.finish()
            }
            var armed: Duration?
            for await command in commands {
                switch command {
                case .effect(let effect):
                    perform(presentation.apply(effect, at: elapsed()))
                case .tick:
                    presentation.advance(to: elapsed())
                }
                if let deadline = presentation.nextDeadline, deadline != armed {
                    armed = deadline
                    group.addTask {
                        // A sleeper whose deadline was replaced wakes to a tick that finds nothing due.
                        try? await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil)
                        sink.yield(.tick)
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// A gesture on the banner, from the view.
    public func send(_ intent: PresentationIntent) {
        perform(presentation.handle(intent, at: elapsed()))
    }

    /// The system's Reduce Motion setting.
    public func setReduceMotion(_ reduce: Bool) {
        presentation.reduceMotion = reduce
    }

    /// The app came to the foreground or went to the background (a scene phase change).
    public func setAppState(_ state: AppState) {
        appState(state)
    }

    private func perform(_ outputs: [PresentationOutput]) {
        for output in outputs {
            switch output {
            case .gesture(let gesture): gestures(gesture)
            case .navigate(let conversationID): onNavigate(conversationID)
            case .local(let notification): onLocal(notification)
            case .clear(let conversationID): onClear(conversationID)
            case .withdraw(let notificationID): onWithdraw(notificationID)
            }
        }
    }
}

/// What the presenter's run loop handles, in order: an effect of the engine, or a phase deadline that came.
private enum PresenterCommand: Sendable {
    case effect(NotificationEffect)
    case tick
}
