// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. APIs used, all stable since iOS 17 / macOS 14: ViewModifier, @State with an @Observable class,
// .overlay(alignment:), .task, .onChange(of:initial:_:), .onTapGesture, .onLongPressGesture(minimumDuration:
// perform:onPressingChanged:), DragGesture, .simultaneousGesture, .transition, .animation(_:value:),
// .sensoryFeedback(_:trigger:), AccessibilityNotification.Announcement, @Environment(\.accessibilityReduceMotion),
// @Environment(\.scenePhase), .accessibilityElement(children:), .accessibilityLabel, .accessibilityAddTraits,
// .accessibilityAction(named:_:).
#if canImport(SwiftUI)
import HeraldClient
import HeraldCore
import HeraldPresentation
import SwiftUI

extension View {
    /// Shows Herald's in-app banners above all of this view's content, at the top safe area, for `live`'s device:
    /// runs the connection and the engine for as long as the view is on screen, reports the scene phase as the app
    /// state, and calls `onNavigate` with the conversation of a tapped banner and `onLocal` with each system
    /// notification the engine asks for (hand it to ``HeraldSystemNotifications/post(_:)``).
    ///
    /// ```swift
    /// ContentView()
    ///     .heraldBanners(live, onNavigate: { router.open($0) }, onLocal: { note in Task { await system.post(note) } })
    /// ```
    public func heraldBanners(
        _ live: LiveNotifications<ContinuousClock>,
        style: BannerStyle = .standard,
        onNavigate: @escaping @MainActor (String) -> Void = { _ in },
        onLocal: @escaping @MainActor (LocalNotification) -> Void = { _ in }
    ) -> some View {
        modifier(LiveBannersModifier(live: live, style: style, onNavigate: onNavigate, onLocal: onLocal))
    }

    /// Shows the banners of a ``BannerPresenter`` the app runs itself (a bare `NotifierDriver` for general banners).
    public func heraldBanners(_ presenter: BannerPresenter) -> some View {
        modifier(BannerOverlayModifier(presenter: presenter))
    }
}

/// Owns the presenter for a `LiveNotifications` and runs both while the view is on screen.
struct LiveBannersModifier: ViewModifier {
    let live: LiveNotifications<ContinuousClock>
    let style: BannerStyle
    let onNavigate: @MainActor (String) -> Void
    let onLocal: @MainActor (LocalNotification) -> Void
    @State private var presenter: BannerPresenter?

    func body(content: Content) -> some View {
        Group {
            if let presenter {
                content.heraldBanners(presenter)
            } else {
                content
            }
        }
        .task {
            let presenter = BannerPresenter(live: live, style: style)
            presenter.onNavigate = onNavigate
            presenter.onLocal = onLocal
            self.presenter = presenter
            await withDiscardingTaskGroup { group in
                group.addTask { await live.run() }
                group.addTask { await presenter.run(effects: live.effects, clock: ContinuousClock()) }
            }
        }
    }
}

/// Draws a presenter's banner and wires the gestures, motion, VoiceOver, haptics and scene phase to it. No logic:
/// every decision is the presenter's.
struct BannerOverlayModifier: ViewModifier {
    let presenter: BannerPresenter
    @Environment(\.accessibilityReduceMotion) private var reduceMotion
    @Environment(\.scenePhase) private var scenePhase

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
                presenter.setAppState(phase == .active ? .foreground : .background)
            }
            .onChange(of: presenter.announcement) { _, text in
                if let text { AccessibilityNotification.Announcement(text).post() }
            }
    }

    private func banner(_ presented: PresentedBanner) -> some View {
        let style = presenter.presentation.style
        return BannerView(banner: presented.banner, style: style) { presenter.send(.close) }
            .padding(.horizontal, style.sideMargin)
            .padding(.top, style.topMargin)
            .offset(y: presenter.dragOffset)
            .animation(presenter.isPressed ? nil : .spring(duration: style.enterDuration.seconds), value: presenter.dragOffset)
            .onTapGesture { presenter.send(.tap) }
            .onLongPressGesture(minimumDuration: 0.3, perform: {}, onPressingChanged: { pressing in
                presenter.send(pressing ? .pressBegan : .pressEnded)
            })
            .simultaneousGesture(
                DragGesture(minimumDistance: 8)
                    .onChanged { value in presenter.send(.dragChanged(dy: value.translation.height)) }
                    .onEnded { value in presenter.send(.dragEnded(dy: value.translation.height)) }
            )
            .accessibilityElement(children: .combine)
            .accessibilityLabel(Text(presenter.announcement ?? presented.banner.title))
            .accessibilityAddTraits(.isButton)
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
