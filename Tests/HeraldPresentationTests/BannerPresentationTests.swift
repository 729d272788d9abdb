import Foundation
import HeraldCore
import HeraldPresentation
import Testing

/// A device's engine and its presentation wired together in virtual time, as an app wires them: the engine's
/// effects are drawn, the presentation's gestures go back to the engine at the same instant.
struct Screen {
    var notifier = Notifier(userID: "alice")
    var presentation = BannerPresentation()
    /// Every output the app received (navigate, local), in order.
    var outputs: [PresentationOutput] = []
    /// Every effect of the engine, in order.
    var effects: [NotificationEffect] = []

    init(open conversationID: String? = "alice-bob") {
        if let conversationID { _ = notifier.handle(.open(conversationID: conversationID), at: .zero) }
    }

    /// Fires every deadline of both up to `seconds`, each at its own instant.
    mutating func advance(to seconds: Double) {
        let instant = at(seconds)
        while true {
            let due = [notifier.nextDeadline, presentation.nextDeadline].compactMap { $0 }.filter { $0 <= instant }.min()
            guard let due else { break }
            if let deadline = notifier.nextDeadline, deadline == due {
                draw(notifier.advance(to: due), at: due)
            } else {
                presentation.advance(to: due)
            }
        }
        presentation.advance(to: instant)
        draw(notifier.advance(to: instant), at: instant)
    }

    mutating func input(_ input: NotifierInput, at seconds: Double) {
        advance(to: seconds)
        draw(notifier.handle(input, at: at(seconds)), at: at(seconds))
    }

    mutating func intent(_ intent: PresentationIntent, at seconds: Double) {
        advance(to: seconds)
        for output in presentation.handle(intent, at: at(seconds)) {
            guard case .gesture(let gesture) = output else { outputs.append(output); continue }
            draw(notifier.handle(.gesture(gesture), at: at(seconds)), at: at(seconds))
        }
    }

    private mutating func draw(_ timeline: [TimedEffect], at instant: Duration) {
        for timed in timeline {
            effects.append(timed.effect)
            outputs += presentation.apply(timed.effect, at: timed.at)
        }
    }

    var phase: BannerPhase? { presentation.current?.phase }
}

func at(_ seconds: Double) -> Duration { .microseconds(Int64((seconds * 1_000_000).rounded())) }

let charlie = Person(id: "charlie", displayName: "Charlie Davis")
let team = Conversation(id: "team", kind: .group, title: "Team Chat")
let aliceCharlie = Conversation(id: "alice-charlie", kind: .direct)

func message(_ id: String, in conversation: Conversation = aliceCharlie, text: String = "Hey, are you there?") -> NotifierInput {
    .message(IncomingMessage(
        message: Message(id: id, conversationID: conversation.id, senderID: charlie.id, text: text),
        conversation: conversation, sender: charlie))
}

@Suite("The presentation draws the engine's banners in virtual time")
struct BannerPresentationTests {
    @Test("a banner enters for 0.3 s, shows until 4 s, leaves for 0.25 s, and is gone")
    func life() {
        var screen = Screen()
        screen.input(message("m1"), at: 1)
        #expect(screen.phase == .entering)
        #expect(screen.presentation.hapticCount == 1, "the light haptic plays as it appears")
        screen.advance(to: 1.299)
        #expect(screen.phase == .entering)
        screen.advance(to: 1.3)
        #expect(screen.phase == .shown)
        screen.advance(to: 4.999)
        #expect(screen.phase == .shown)
        screen.advance(to: 5)
        #expect(screen.phase == .leaving)
        #expect(screen.presentation.current?.dismissReason == .timeout)
        screen.advance(to: 5.25)
        #expect(screen.presentation.current == nil)
    }

    @Test("a finger held on the banner pauses the engine's timer past 0.3 s; lifting resumes it with the time left and opens nothing")
    func holdPauses() {
        var screen = Screen()
        screen.input(message("m1"), at: 0)
        screen.intent(.touchBegan, at: 1)
        #expect(screen.presentation.isPressed)
        // Still held after the long-press time (where SwiftUI's long press reports "not pressing" any more).
        screen.advance(to: 1.4)
        #expect(screen.presentation.isPressed, "held past 0.3 s: still paused")
        screen.intent(.touchMoved(dy: -3), at: 2)
        #expect(screen.presentation.dragOffset == 0, "a tremble within the slop is no drag")
        screen.advance(to: 10)
        #expect(screen.phase == .shown, "held: still there at 10 s")
        screen.intent(.touchEnded(dy: -3), at: 10)
        #expect(!screen.presentation.isPressed)
        #expect(screen.outputs.isEmpty, "a hold is not a tap: nothing opens")
        screen.advance(to: 12.999)
        #expect(screen.phase == .shown, "3 s were left when it was pressed")
        screen.advance(to: 13)
        #expect(screen.phase == .leaving)
        #expect(screen.effects.contains(.dismiss(bannerID: "m1", reason: .timeout)))
    }

    @Test("the touch sequence press, hold past 0.3 s, drag, release: paused throughout, one touchDown, one touchUp, then the swipe")
    func sequence() {
        var presentation = BannerPresentation()
        _ = presentation.apply(.show(Banner.general(id: "g", message: "Saved", tone: .success, icon: nil, duration: .seconds(5))), at: .zero)
        var gestures: [BannerGesture] = []
        func record(_ outputs: [PresentationOutput]) {
            for case .gesture(let gesture) in outputs { gestures.append(gesture) }
        }
        record(presentation.handle(.touchBegan, at: at(1)))
        record(presentation.handle(.touchMoved(dy: -2), at: at(1.5)))
        record(presentation.handle(.touchMoved(dy: -30), at: at(1.6)))
        #expect(presentation.dragOffset == -30)
        record(presentation.handle(.touchMoved(dy: -70), at: at(1.7)))
        #expect(presentation.passesSwipeThreshold)
        record(presentation.handle(.touchEnded(dy: -70), at: at(1.8)))
        #expect(gestures == [.touchDown, .touchUp, .swipe(dy: -70)])
        #expect(presentation.dragOffset == -70, "it leaves from where the finger left it")
    }

    @Test("a short touch in place is a tap; one that moved is a drag, never a tap; a cancelled touch springs back")
    func tapsAndDrags() {
        var quick = Screen()
        quick.input(message("m1"), at: 0)
        quick.intent(.touchBegan, at: 1)
        quick.intent(.touchMoved(dy: 4), at: 1.1)
        quick.intent(.touchEnded(dy: 4), at: 1.2)
        #expect(quick.outputs == [.navigate(conversationID: "alice-charlie")], "0.2 s and 4 pt: a tap")
        #expect(quick.presentation.current?.dismissReason == .tap)

        var dragged = Screen()
        dragged.input(message("m1"), at: 0)
        dragged.intent(.touchBegan, at: 1)
        dragged.intent(.touchMoved(dy: -30), at: 1.05)
        dragged.intent(.touchEnded(dy: -30), at: 1.1)
        #expect(dragged.outputs.isEmpty, "a quick drag that springs back opens nothing")
        #expect(dragged.presentation.dragOffset == 0)
        #expect(dragged.phase == .shown)

        var cancelled = Screen()
        cancelled.input(message("m1"), at: 0)
        cancelled.intent(.touchBegan, at: 1)
        cancelled.intent(.touchMoved(dy: -40), at: 1.1)
        cancelled.intent(.touchCancelled, at: 1.2)
        #expect(!cancelled.presentation.isPressed)
        #expect(cancelled.presentation.dragOffset == 0)
        #expect(cancelled.outputs.isEmpty)
    }

    @Test("a drag of 30 pt springs back; one of 60 pt dismisses with reason swipe and leaves from where it was")
    func drags() {
        var screen = Screen()
        screen.input(message("m1"), at: 0)
        screen.advance(to: 0.5)
        screen.intent(.touchBegan, at: 1)
        screen.intent(.touchMoved(dy: -30), at: 1)
        #expect(screen.presentation.dragOffset == -30)
        #expect(!screen.presentation.passesSwipeThreshold)
        #expect(screen.presentation.isPressed, "the timer is paused while dragging")
        screen.intent(.touchEnded(dy: -30), at: 1.2)
        #expect(screen.presentation.dragOffset == 0, "sprang back")
        #expect(screen.phase == .shown)
        #expect(!screen.presentation.isPressed)

        screen.intent(.touchBegan, at: 2)
        screen.intent(.touchMoved(dy: 12), at: 2)
        #expect(screen.presentation.dragOffset == 12 * BannerStyle.standard.downwardDragFactor, "down resists")
        screen.intent(.touchMoved(dy: -60), at: 2.1)
        #expect(screen.presentation.passesSwipeThreshold)
        screen.intent(.touchEnded(dy: -60), at: 2.2)
        #expect(screen.phase == .leaving)
        #expect(screen.presentation.current?.dismissReason == .swipe)
        #expect(screen.presentation.dragOffset == -60)
        #expect(screen.effects.contains(.dismiss(bannerID: "m1", reason: .swipe)))
        #expect(!screen.outputs.contains { if case .navigate = $0 { true } else { false } }, "a swipe opens nothing")
    }

    @Test("scene phases: only background is the background; inactive (Control Center, an alert) changes nothing")
    func scenePhases() {
        #expect(BannerPresentation.appState(for: .active) == .foreground)
        #expect(BannerPresentation.appState(for: .inactive) == nil)
        #expect(BannerPresentation.appState(for: .background) == .background)
        // Control Center pulled down while a chat is open elsewhere: a message is still a banner.
        var screen = Screen()
        if let state = BannerPresentation.appState(for: .inactive) { screen.input(.app(state), at: 0) }
        screen.input(message("m1"), at: 1)
        #expect(screen.phase == .entering)
        #expect(screen.outputs.isEmpty, "no system notification lost to the list")
    }

    @Test("Reduce Motion selects the fade")
    func reduceMotion() {
        var presentation = BannerPresentation()
        #expect(presentation.transition == .slide)
        presentation.reduceMotion = true
        #expect(presentation.transition == .fade)
    }

    @Test("the announcement reads the sender, the group and the preview")
    func announcement() {
        var screen = Screen()
        screen.input(message("m1", in: team), at: 0)
        #expect(screen.presentation.announcement?.text == "Charlie Davis in Team Chat: Hey, are you there?")
        screen.input(.show(.general(id: "g1", message: "Saved", tone: .success, icon: "checkmark.circle.fill")), at: 0.1)
        screen.advance(to: 4.25)
        #expect(screen.presentation.announcement?.text == "Saved")
    }

    @Test("a tap emits navigate once, and the banner leaves with reason tap")
    func tap() {
        var screen = Screen()
        screen.input(message("m1"), at: 0)
        screen.intent(.tap, at: 0.5)
        #expect(screen.outputs == [.navigate(conversationID: "alice-charlie")])
        #expect(screen.presentation.current?.dismissReason == .tap)
        screen.intent(.tap, at: 0.6)
        #expect(screen.outputs.count == 1, "a leaving banner takes no more taps")
        screen.advance(to: 1)
        #expect(screen.outputs.count == 1)
        #expect(screen.presentation.current == nil)
    }

    @Test("general banners carry their tone and icon; a message banner its sender's initials")
    func generalBanners() {
        var screen = Screen()
        screen.input(.show(.general(id: "g1", message: "Upload failed", tone: .danger, icon: "xmark.octagon.fill")), at: 0)
        #expect(screen.presentation.current?.banner.tone == .danger)
        #expect(screen.presentation.current?.banner.icon == "xmark.octagon.fill")
        screen.intent(.close, at: 1)
        #expect(screen.presentation.current?.dismissReason == .close)
        screen.input(message("m1"), at: 2)
        #expect(screen.presentation.current?.banner.tone == .message)
        #expect(screen.presentation.current?.banner.initials == "CD")
    }

    @Test("in the background a message becomes a local notification for the app to post, not a banner")
    func local() {
        var screen = Screen()
        screen.input(.app(.background), at: 0)
        screen.input(message("m1"), at: 1)
        #expect(screen.presentation.current == nil)
        #expect(screen.outputs == [.local(LocalNotification(
            messageID: "m1", title: "New message from Charlie Davis", body: "Hey, are you there?", thread: "alice-charlie",
            senderID: "charlie"))])
    }

    @Test("coalescing updates the banner on screen and its announcement, without a second haptic")
    func update() {
        var screen = Screen()
        screen.notifier = Notifier(userID: "alice", config: BannerConfig(coalesce: true))
        screen.input(message("m1", in: team), at: 0)
        screen.input(message("m2", in: team, text: "Standup at 10"), at: 1)
        #expect(screen.presentation.current?.banner.count == 2)
        #expect(screen.presentation.announcement?.text == "Charlie Davis in Team Chat: Standup at 10")
        #expect(screen.presentation.hapticCount == 1)
    }
}
