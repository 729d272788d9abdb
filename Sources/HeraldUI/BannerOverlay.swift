// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. APIs used, all available on iOS 17 / macOS 14 and checked against Apple's documentation: ViewModifier,
// @State with an @Observable class, .overlay(alignment:content:), .task(id:priority:_:) (iOS 15: cancelled and started
// again when the id changes), .onChange(of:initial:_:), DragGesture(minimumDistance:) with .updating(_:body:),
// .onChanged(_:), .onEnded(_:) and @GestureState, .gesture(_:), .transition(_:), .animation(_:value:),
// .sensoryFeedback(_:trigger:), AccessibilityNotification.Announcement, @Environment(\.accessibilityReduceMotion),
// @Environment(\.scenePhase) (ScenePhase .active, .inactive, .background), .accessibilityElement(children:),
// .accessibilityLabel(_:), .accessibilityAddTraits(_:), .accessibilityAction(named:_:), .accessibilityAction(_:) (the
// default action), @AccessibilityFocusState (Bool) with .accessibilityFocused(_:) (iOS 15 / macOS 12) and
// .accessibilitySortPriority(_:) (iOS 14 / macOS 11), .onDisappear(perform:); Foundation's UUID.
#if os(iOS) || os(macOS)
import Foundation
import HeraldClient
import HeraldCore
import HeraldPresentation
import SwiftUI

extension View {
    /// Shows Herald's in-app banners above all of this view's content, at the top safe area, for `live`'s device:
    /// runs the connection and the engine for as long as the view is on screen, reports the scene phases of the
    /// windows showing `live` together as the app state (foreground while any is active), and calls `onNavigate`
    /// with the conversation of a tapped banner, `onLocal` with each system notification the engine asks for (hand
    /// it to ``HeraldSystemNotifications/post(_:)``), `onClear` with a conversation the user was removed from (hand it
    /// to ``HeraldSystemNotifications/clear(conversation:badge:)``), and `onWithdraw` with the identifier of a
    /// notification whose message was deleted (hand it to ``HeraldSystemNotifications/withdraw(_:)``).
    ///
    /// ```swift
    /// ContentView()
    ///     .heraldBanners(live, onNavigate: { router.open($0) }, onLocal: { note in Task { await system.post(note) } })
    /// ```
    public func heraldBanners(
        _ live: LiveNotifications<ContinuousClock>,
        style: BannerStyle = .standard,
        onNavigate: @escaping @MainActor (String) -> Void = { _ in },
        onLocal: @escaping @MainActor (LocalNotification) -> Void = { _ in },
        onClear: @escaping @MainActor (String) -> Void = { _ in },
        onWithdraw: @escaping @MainActor (String) -> Void = { _ in }
    ) -> some View {
        modifier(LiveBannersModifier(
            live: live, style: style, onNavigate: onNavigate, onLocal: onLocal, onClear: onClear, onWithdraw: onWithdraw))
    }

    /// Shows the banners of a ``BannerPresenter`` the app runs itself (a bare `NotifierDriver` for general banners).
    /// Each window's scene phase is reported; the presenter gets the app state of all its windows together.
    public func heraldBanners(_ presenter: BannerPresenter) -> some View {
        modifier(BannerOverlayModifier(
            presenter: presenter, scenes: ObjectIdentifier(presenter), setAppState: { presenter.setAppState($0) }))
    }
}

/// Owns the presenter for a `LiveNotifications` and runs both while the view is on screen.
///
/// The overlay is always applied (no branch that would rebuild the app's content, and its navigation state). The
/// presenter belongs to the `LiveNotifications` it was made for: the task is keyed by that object, so when the app
/// hands the modifier another one (another account signed in), the old run is cancelled and a new presenter runs the
/// new one (``PresenterSlot``): nothing of the last account's banners carries over. When the view goes away its task
/// is cancelled; when it comes back, ``LiveNotifications/run()`` starts again, keeping the engine's state, and the
/// presenter takes a new subscription to its effects.
struct LiveBannersModifier: ViewModifier {
    let live: LiveNotifications<ContinuousClock>
    let style: BannerStyle
    let onNavigate: @MainActor (String) -> Void
    let onLocal: @MainActor (LocalNotification) -> Void
    let onClear: @MainActor (String) -> Void
    let onWithdraw: @MainActor (String) -> Void
    @State private var slot: PresenterSlot<ObjectIdentifier>

    init(
        live: LiveNotifications<ContinuousClock>, style: BannerStyle, onNavigate: @escaping @MainActor (String) -> Void,
        onLocal: @escaping @MainActor (LocalNotification) -> Void, onClear: @escaping @MainActor (String) -> Void,
        onWithdraw: @escaping @MainActor (String) -> Void
    ) {
        self.live = live
        self.style = style
        self.onNavigate = onNavigate
        self.onLocal = onLocal
        self.onClear = onClear
        self.onWithdraw = onWithdraw
        // Kept by SwiftUI for the view's life (a later `live` is taken by the task below, not by this).
        _slot = State(initialValue: PresenterSlot(key: ObjectIdentifier(live), presenter: BannerPresenter(live: live, style: style)))
    }

    func body(content: Content) -> some View {
        content
            .modifier(BannerOverlayModifier(
                presenter: slot.current, scenes: ObjectIdentifier(live), setAppState: { live.setAppState($0) }))
            .task(id: ObjectIdentifier(live)) {
                let presenter = slot.presenter(for: ObjectIdentifier(live)) { BannerPresenter(live: live, style: style) }
                presenter.onNavigate = onNavigate
                presenter.onLocal = onLocal
                presenter.onClear = onClear
                presenter.onWithdraw = onWithdraw
                let effects = live.effects
                await withDiscardingTaskGroup { group in
                    group.addTask { await live.run() }
                    group.addTask { await presenter.run(effects: effects, clock: ContinuousClock()) }
                }
            }
    }
}

/// The scene phases of the windows showing each source's banners, by window (`ScenePhases`): what the app state of
/// a source is, whichever window reports.
@MainActor
enum WindowScenes {
    private static var sources: [ObjectIdentifier: ScenePhases<UUID>] = [:]

    /// `window` of `source` is in `phase`: the source's app state to report, if it changed.
    static func set(_ phase: ScenePhaseKind, window: UUID, of source: ObjectIdentifier) -> AppState? {
        sources[source, default: ScenePhases()].set(phase, for: window)
    }

    /// `window` of `source` went away: the source's app state to report, if what is left changed it. A source left
    /// with no window is forgotten.
    static func remove(_ window: UUID, of source: ObjectIdentifier) -> AppState? {
        guard var phases = sources[source] else { return nil }
        let state = phases.remove(window)
        sources[source] = phases.isEmpty ? nil : phases
        return state
    }
}

extension BannerPresenter {
    /// A presenter for a device's live notifications: gestures and app state go to `live` (and so to the server).
    public convenience init<C: Clock>(live: LiveNotifications<C>, style: BannerStyle = .standard) where C.Duration == Duration {
        self.init(style: style, gestures: { live.gesture($0) }, appState: { live.setAppState($0) })
    }
}

/// Draws a presenter's banner and wires the gestures, motion, VoiceOver, haptics and scene phase to it. No logic:
/// every decision is the presenter's (`BannerPresentation`) or the windows' together (`ScenePhases`).
///
/// Each window reports its own scene phase under its own id into the phases of every window showing the same
/// source (`scenes`: a `LiveNotifications`, or a bare presenter); only the app state they mean together reaches
/// `setAppState`, so an iPad window going to the background leaves the app in the foreground while another is active.
struct BannerOverlayModifier: ViewModifier {
    let presenter: BannerPresenter
    /// The source whose windows' phases are combined.
    let scenes: ObjectIdentifier
    /// Where the combined app state goes (`LiveNotifications.setAppState(_:)`, or the presenter's).
    let setAppState: @MainActor (AppState) -> Void
    /// This window's id among the source's windows.
    @State private var window = UUID()
    @Environment(\.accessibilityReduceMotion) private var reduceMotion
    @Environment(\.scenePhase) private var scenePhase
    /// Whether a finger is on the banner; SwiftUI resets it however the touch ends, cancelled included.
    @GestureState private var touching = false
    /// Whether VoiceOver's focus is on the banner: its timer waits while it is read.
    @AccessibilityFocusState private var focused: Bool

    func body(content: Content) -> some View {
        content
            .overlay(alignment: .top) {
                ZStack(alignment: .top) {
                    if let presented = presenter.current, presented.phase != .leaving {
                        banner(presented)
                            .transition(transition)
                    }
                }
                .animation(animation, value: presenter.current?.phase != .leaving ? presenter.current?.id : nil)
            }
            .sensoryFeedback(.impact(weight: .light), trigger: presenter.hapticCount)
            .onChange(of: reduceMotion, initial: true) { _, reduce in presenter.setReduceMotion(reduce) }
            .onChange(of: scenePhase, initial: true) { _, phase in
                if let state = WindowScenes.set(Self.kind(of: phase), window: window, of: scenes) { setAppState(state) }
            }
            .onChange(of: scenes) { old, new in
                // Another account's notifications: this window leaves the old one's windows and joins the new one's.
                _ = WindowScenes.remove(window, of: old)
                if let state = WindowScenes.set(Self.kind(of: scenePhase), window: window, of: new) { setAppState(state) }
            }
            .onDisappear {
                // The window went away: what the others are in decides.
                if let state = WindowScenes.remove(window, of: scenes) { setAppState(state) }
            }
            .onChange(of: presenter.announcement) { _, announcement in
                // A new value for each banner, so the same words twice are said twice.
                if let announcement { AccessibilityNotification.Announcement(announcement.text).post() }
            }
            .onChange(of: focused) { _, isFocused in presenter.send(.accessibilityFocus(isFocused)) }
            .onChange(of: touching) { _, isTouching in
                // After an ended touch this changes nothing; after one the system took, it springs the banner back.
                if !isTouching { presenter.send(.touchCancelled) }
            }
    }

    /// SwiftUI's scene phase as the presentation knows it.
    private static func kind(of phase: ScenePhase) -> ScenePhaseKind {
        switch phase {
        case .active: .active
        case .background: .background
        default: .inactive
        }
    }

    private func banner(_ presented: PresentedBanner) -> some View {
        let style = presenter.presentation.style
        return BannerView(banner: presented.banner, style: style) { presenter.send(.close) }
            .padding(.horizontal, style.sideMargin)
            .padding(.top, style.topMargin)
            .offset(y: presenter.dragOffset)
            .animation(presenter.isPressed ? nil : .spring(duration: style.enterDuration.seconds), value: presenter.dragOffset)
            // One gesture for the whole touch: the presentation tells a tap, a hold and a drag apart by time and
            // distance, and keeps the timer paused from the first touch to the last.
            .gesture(
                DragGesture(minimumDistance: 0)
                    .updating($touching) { _, touching, _ in touching = true }
                    .onChanged { value in presenter.send(.touchMoved(dy: value.translation.height)) }
                    .onEnded { value in presenter.send(.touchEnded(dy: value.translation.height)) }
            )
            .accessibilityElement(children: .combine)
            .accessibilityLabel(Text(presenter.announcement?.text ?? presented.banner.title))
            .accessibilityAddTraits(.isButton)
            .accessibilityFocused($focused)
            // Read before the content it covers, not after it (an overlay otherwise comes last).
            .accessibilitySortPriority(1)
            .accessibilityAction { presenter.send(.tap) }
            .accessibilityAction(named: Text("Dismiss")) { presenter.send(.close) }
    }

    /// Slide from the top, or fade under Reduce Motion.
    private var transition: AnyTransition {
        switch presenter.transition {
        case .slide: .move(edge: .top).combined(with: .opacity)
        case .fade: .opacity
        }
    }

    /// A spring in, an ease-out away.
    private var animation: Animation {
        let style = presenter.presentation.style
        return presenter.current?.phase == .leaving
            ? .easeOut(duration: style.exitDuration.seconds)
            : .spring(duration: style.enterDuration.seconds)
    }
}
#endif
