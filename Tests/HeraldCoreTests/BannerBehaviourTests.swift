import HeraldCore
import Testing

@Suite("How banners behave (docs/behaviour.md §3), in virtual time")
struct BannerBehaviourTests {
    @Test("with Alice's chat with Bob open, Charlie's message shows a banner; a tap dismisses it and opens Charlie's chat")
    func theSentence() throws {
        var notifier = Notifier.aliceInBobsChat()
        let shown = notifier.handle(.message(Cast.message("m1", in: Cast.aliceCharlie, from: Cast.charlie)), at: at(1))
        #expect(shown.count == 1)
        guard case .show(let banner) = try #require(shown.first).effect else {
            Issue.record("expected a banner, got \(shown)")
            return
        }
        #expect(banner.title == "Charlie Davis")
        #expect(banner.body == "Hey, are you there?")
        #expect(banner.initials == "CD")
        #expect(shown.first?.at == at(1))

        let tapped = notifier.handle(.gesture(.tap), at: at(2))
        #expect(tapped == [
            TimedEffect(at: at(2), effect: .dismiss(bannerID: "m1", reason: .tap)),
            TimedEffect(at: at(2), effect: .navigate(conversationID: "alice-charlie")),
        ])
        #expect(notifier.device.openConversationID == "alice-charlie")

        let next = notifier.handle(.message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie)), at: at(3))
        #expect(describe(next) == ["3.00 skip m2 active"])
    }

    @Test("a banner dismisses itself 4 s after it appeared")
    func timesOut() {
        var notifier = Notifier.aliceInBobsChat()
        let timeline = notifier.run([(1, .message(Cast.message("m1", in: Cast.team, from: Cast.charlie)))])
        #expect(describe(timeline) == ["1.00 show m1", "5.00 dismiss m1 timeout"])
    }

    @Test("three messages from three people show one after another, 0.25 s apart")
    func threeInTurn() {
        var notifier = Notifier(userID: "alice")
        let dana = Person(id: "dana", displayName: "Dana Li")
        let timeline = notifier.run([
            (1.0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
            (1.2, .message(Cast.message("m3", in: Conversation(id: "alice-dana", kind: .direct), from: dana))),
        ])
        #expect(describe(timeline) == [
            "1.00 show m1", "5.00 dismiss m1 timeout",
            "5.25 show m2", "9.25 dismiss m2 timeout",
            "9.50 show m3", "13.50 dismiss m3 timeout",
        ])
    }

    @Test("ten rapid messages: at most 3 wait, each newcomer pushes out the oldest waiting, order is kept")
    func tenRapid() {
        var notifier = Notifier(userID: "alice")
        let inputs: [(Double, NotifierInput)] = (1...10).map { index in
            let room = Conversation(id: "c\(index)", kind: .direct)
            let sender = Person(id: "p\(index)", displayName: "Person \(index)")
            return (1 + Double(index) / 100, .message(Cast.message("m\(index)", in: room, from: sender)))
        }
        let timeline = notifier.run(inputs)
        #expect(describe(timeline) == [
            "1.01 show m1",
            "1.05 drop m2 capacity", "1.06 drop m3 capacity", "1.07 drop m4 capacity",
            "1.08 drop m5 capacity", "1.09 drop m6 capacity", "1.10 drop m7 capacity",
            "5.01 dismiss m1 timeout", "5.26 show m8",
            "9.26 dismiss m8 timeout", "9.51 show m9",
            "13.51 dismiss m9 timeout", "13.76 show m10",
            "17.76 dismiss m10 timeout",
        ])
    }

    @Test("a message that arrives during the 0.25 s gap waits for the gap to end")
    func waitsForGap() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1, .gesture(.close)),
            (1.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "1.00 dismiss m1 close", "1.25 show m2", "5.25 dismiss m2 timeout"])
    }

    @Test("after the gap, a new message shows at once")
    func showsAfterGap() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1, .gesture(.close)),
            (3, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "1.00 dismiss m1 close", "3.00 show m2", "7.00 dismiss m2 timeout"])
    }

    @Test("touching pauses the timer; letting go resumes it with the time that was left")
    func touchPauses() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1, .gesture(.touchDown)),
            (10, .gesture(.touchUp)),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "13.00 dismiss m1 timeout"])
    }

    @Test("a banner held down stays as long as it is held")
    func heldStays() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (3.5, .gesture(.touchDown)),
        ], until: 60)
        #expect(describe(timeline) == ["0.00 show m1"])
        #expect(notifier.queue.visible?.id == "m1")
        #expect(notifier.nextDeadline == nil)
    }

    @Test("a swipe up of 30 pt springs back; one of 60 pt dismisses")
    func swipe() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1, .gesture(.swipe(dy: -30))),
            (2, .gesture(.swipe(dy: 80))),
            (3, .gesture(.swipe(dy: -60))),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "3.00 dismiss m1 swipe"])
    }

    @Test("exactly 50 pt up is enough")
    func swipeThreshold() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1, .gesture(.swipe(dy: -49.9))),
            (2, .gesture(.swipe(dy: -50))),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "2.00 dismiss m1 swipe"])
    }

    @Test("the close button dismisses")
    func close() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0.5, .gesture(.close)),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "0.50 dismiss m1 close"])
    }

    @Test("gestures with no banner on screen do nothing")
    func gesturesOnNothing() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .gesture(.tap)), (0, .gesture(.close)), (0, .gesture(.swipe(dy: -100))),
            (0, .gesture(.touchDown)), (0, .gesture(.touchUp)), (0, .dismiss), (0, .dismissAll),
        ])
        #expect(timeline.isEmpty)
    }

    @Test("opening a conversation dismisses its visible banner and drops its waiting ones, and no others")
    func openingDrops() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
            (0.2, .message(Cast.message("m3", in: Cast.aliceBob, from: Cast.bob))),
            (0.3, .message(Cast.message("m4", in: Cast.team, from: Cast.charlie))),
            (1.0, .open(conversationID: "alice-bob")),
        ])
        #expect(describe(timeline) == [
            "0.00 show m1",
            "1.00 dismiss m1 opened", "1.00 drop m3 opened",
            "1.25 show m2", "5.25 dismiss m2 timeout",
            "5.50 show m4", "9.50 dismiss m4 timeout",
        ])
    }

    @Test("opening a conversation whose banner is waiting drops it and leaves the visible one")
    func openingWaiting() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
            (1.0, .open(conversationID: "alice-charlie")),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "1.00 drop m2 opened", "4.00 dismiss m1 timeout"])
    }

    @Test("a tap opens the conversation exactly as opening it would: its waiting banners are dropped too")
    func tapDropsWaiting() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.team, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
            (0.2, .message(Cast.message("m3", in: Cast.team, from: Cast.charlie))),
            (1.0, .gesture(.tap)),
        ])
        #expect(describe(timeline) == [
            "0.00 show m1",
            "1.00 dismiss m1 tap", "1.00 navigate team", "1.00 drop m3 opened",
            "1.25 show m2", "5.25 dismiss m2 timeout",
        ])
    }

    @Test("dismissing everything dismisses the visible banner and drops the waiting ones")
    func dismissAll() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
            (0.2, .show(.general(id: "saved", message: "Saved", tone: .success))),
            (1.0, .dismissAll),
        ])
        #expect(describe(timeline) == [
            "0.00 show m1", "1.00 dismiss m1 programmatic", "1.00 drop m2 programmatic", "1.00 drop saved programmatic",
        ])
    }

    @Test("the app can dismiss the visible banner; the next one follows after the gap")
    func programmaticDismiss() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
            (1.0, .dismiss),
        ])
        #expect(describe(timeline) == [
            "0.00 show m1", "1.00 dismiss m1 programmatic", "1.25 show m2", "5.25 dismiss m2 timeout",
        ])
    }

    @Test("the numbers are configurable: capacity, duration, gap")
    func configurable() {
        var notifier = Notifier(userID: "alice", config: BannerConfig(capacity: 1, duration: .seconds(2), gap: .zero))
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
            (0.2, .message(Cast.message("m3", in: Cast.team, from: Cast.charlie))),
        ])
        #expect(describe(timeline) == [
            "0.00 show m1", "0.20 drop m2 capacity",
            "2.00 dismiss m1 timeout", "2.00 show m3", "4.00 dismiss m3 timeout",
        ])
    }

    @Test("with no room to wait, banners that arrive while one shows are dropped at once")
    func zeroCapacity() {
        var notifier = Notifier(userID: "alice", config: BannerConfig(capacity: 0))
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.aliceCharlie, from: Cast.charlie))),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "0.10 drop m2 capacity", "4.00 dismiss m1 timeout"])
    }

    @Test("a deadline and an input at the same instant: the deadline fires first")
    func deadlineFirst() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (4, .gesture(.tap)),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "4.00 dismiss m1 timeout"])
    }
}

@Suite("Coalescing (optional)")
struct CoalescingTests {
    let config = BannerConfig(coalesce: true)

    @Test("a message for the visible banner's conversation updates it: count + 1, latest preview, timer restarts")
    func updatesVisible() throws {
        var notifier = Notifier(userID: "alice", config: config)
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.team, from: Cast.bob, "first"))),
            (3, .message(Cast.message("m2", in: Cast.team, from: Cast.charlie, "second"))),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "3.00 update m1 x2", "7.00 dismiss m1 timeout"])
        guard case .update(let banner) = timeline[1].effect else { throw CancellationError() }
        #expect(banner.id == "m1")
        #expect(banner.count == 2)
        #expect(banner.body == "second")
        #expect(banner.title == "Charlie Davis")
        #expect(banner.subtitle == "in Team Chat")
    }

    @Test("a message for a waiting banner's conversation merges into it, keeping its place")
    func mergesWaiting() throws {
        var notifier = Notifier(userID: "alice", config: config)
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.team, from: Cast.charlie, "one"))),
            (0.2, .message(Cast.message("m3", in: Cast.aliceCharlie, from: Cast.charlie))),
            (0.3, .message(Cast.message("m4", in: Cast.team, from: Cast.bob, "two"))),
        ])
        #expect(describe(timeline) == [
            "0.00 show m1", "4.00 dismiss m1 timeout",
            "4.25 show m2", "8.25 dismiss m2 timeout",
            "8.50 show m3", "12.50 dismiss m3 timeout",
        ])
        guard case .show(let merged) = timeline[2].effect else { throw CancellationError() }
        #expect(merged.count == 2)
        #expect(merged.body == "two")
        #expect(merged.title == "Bob")
    }

    @Test("a touched banner that is updated stays paused, with its full time when let go")
    func updateWhileTouched() {
        var notifier = Notifier(userID: "alice", config: config)
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.team, from: Cast.bob))),
            (3, .gesture(.touchDown)),
            (5, .message(Cast.message("m2", in: Cast.team, from: Cast.bob))),
            (6, .gesture(.touchUp)),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "5.00 update m1 x2", "10.00 dismiss m1 timeout"])
    }

    @Test("without coalescing, each message gets its own banner")
    func offByDefault() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.team, from: Cast.bob))),
            (1, .message(Cast.message("m2", in: Cast.team, from: Cast.bob))),
        ])
        #expect(describe(timeline) == ["0.00 show m1", "4.00 dismiss m1 timeout", "4.25 show m2", "8.25 dismiss m2 timeout"])
    }
}

@Suite("General-purpose banners")
struct GeneralBannerTests {
    @Test("a general banner carries its message, tone and icon, and stays 5 s by default")
    func general() throws {
        var queue = BannerQueue()
        let shown = queue.handle(.enqueue(.general(id: "g1", message: "Saved", tone: .success, icon: "checkmark")), at: .zero)
        guard case .show(let banner) = try #require(shown.first).effect else { throw CancellationError() }
        #expect(banner.title == "Saved")
        #expect(banner.tone == .success)
        #expect(banner.icon == "checkmark")
        #expect(banner.conversationID == nil)
        #expect(banner.initials == nil)
        #expect(queue.nextDeadline == .seconds(5))
        let timedOut = queue.advance(to: .seconds(5))
        #expect(describe(timedOut) == ["5.00 dismiss g1 timeout"])
    }

    @Test("general banners queue with message banners, each with its own duration")
    func sharedQueue() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .show(.general(id: "upload", message: "Upload failed", tone: .danger, duration: .seconds(2)))),
            (0.5, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1, .show(.general(id: "saved", message: "Saved", tone: .success))),
        ])
        #expect(describe(timeline) == [
            "0.00 show upload", "2.00 dismiss upload timeout",
            "2.25 show m1", "6.25 dismiss m1 timeout",
            "6.50 show saved", "11.50 dismiss saved timeout",
        ])
    }

    @Test("a tap on a general banner dismisses it and opens nothing; opening a conversation leaves it be")
    func tapGeneral() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .show(.general(id: "g1", message: "Saved", tone: .neutral))),
            (1, .open(conversationID: "alice-bob")),
            (2, .gesture(.tap)),
        ])
        #expect(describe(timeline) == ["0.00 show g1", "2.00 dismiss g1 tap"])
        #expect(notifier.device.openConversationID == "alice-bob")
    }

    @Test("general banners are never coalesced")
    func notCoalesced() {
        var notifier = Notifier(userID: "alice", config: BannerConfig(coalesce: true))
        let timeline = notifier.run([
            (0, .show(.general(id: "g1", message: "Saved", tone: .success))),
            (1, .show(.general(id: "g2", message: "Saved", tone: .success))),
        ])
        #expect(describe(timeline) == ["0.00 show g1", "5.00 dismiss g1 timeout", "5.25 show g2", "10.25 dismiss g2 timeout"])
    }
}
