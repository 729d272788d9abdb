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

    @Test("a press pauses the engine's timer; the release resumes it with the time left")
    func pressPauses() {
        var screen = Screen()
        screen.input(message("m1"), at: 0)
        screen.intent(.pressBegan, at: 1)
        #expect(screen.presentation.isPressed)
        screen.advance(to: 10)
        #expect(screen.phase == .shown, "held: still there at 10 s")
        screen.intent(.pressEnded, at: 10)
        screen.advance(to: 12.999)
        #expect(screen.phase == .shown, "3 s were left when it was pressed")
        screen.advance(to: 13)
        #expect(screen.phase == .leaving)
        #expect(screen.effects.contains(.dismiss(bannerID: "m1", reason: .timeout)))
    }

    @Test("a drag of 30 pt springs back; one of 60 pt dismisses with reason swipe and leaves from where it was")
    func drags() {
        var screen = Screen()
        screen.input(message("m1"), at: 0)
        screen.advance(to: 0.5)
        screen.intent(.dragChanged(dy: -30), at: 1)
        #expect(screen.presentation.dragOffset == -30)
        #expect(!screen.presentation.passesSwipeThreshold)
        #expect(screen.presentation.isPressed, "the timer is paused while dragging")
        screen.intent(.dragEnded(dy: -30), at: 1.2)
        #expect(screen.presentation.dragOffset == 0, "sprang back")
        #expect(screen.phase == .shown)
        #expect(!screen.presentation.isPressed)

        screen.intent(.dragChanged(dy: 12), at: 2)
        #expect(screen.presentation.dragOffset == 12 * BannerStyle.standard.downwardDragFactor, "down resists")
        screen.intent(.dragChanged(dy: -60), at: 2.1)
        #expect(screen.presentation.passesSwipeThreshold)
        screen.intent(.dragEnded(dy: -60), at: 2.2)
        #expect(screen.phase == .leaving)
        #expect(screen.presentation.current?.dismissReason == .swipe)
        #expect(screen.presentation.dragOffset == -60)
        #expect(screen.effects.contains(.dismiss(bannerID: "m1", reason: .swipe)))
        #expect(!screen.outputs.contains { if case .navigate = $0 { true } else { false } }, "a swipe opens nothing")
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
        #expect(screen.presentation.announcement == "Charlie Davis in Team Chat: Hey, are you there?")
        screen.input(.show(.general(id: "g1", message: "Saved", tone: .success, icon: "checkmark.circle.fill")), at: 0.1)
        screen.advance(to: 4.25)
        #expect(screen.presentation.announcement == "Saved")
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
            messageID: "m1", title: "New message from Charlie Davis", body: "Hey, are you there?", thread: "alice-charlie"))])
    }

    @Test("coalescing updates the banner on screen and its announcement, without a second haptic")
    func update() {
        var screen = Screen()
        screen.notifier = Notifier(userID: "alice", config: BannerConfig(coalesce: true))
        screen.input(message("m1", in: team), at: 0)
        screen.input(message("m2", in: team, text: "Standup at 10"), at: 1)
        #expect(screen.presentation.current?.banner.count == 2)
        #expect(screen.presentation.announcement == "Charlie Davis in Team Chat: Standup at 10")
        #expect(screen.presentation.hapticCount == 1)
    }
}
