import HeraldCore
import Testing

@Suite("One device: policy, wording and banners together")
struct NotifierTests {
    @Test("the user's own messages never notify")
    func own() {
        var notifier = Notifier(userID: "alice")
        let effects = notifier.handle(.message(Cast.message("m1", in: Cast.aliceBob, from: Cast.alice)), at: .zero)
        #expect(describe(effects) == ["0.00 skip m1 own"])
    }

    @Test("a message delivered twice (a reconnect, a retry) shows one banner")
    func duplicate() {
        var notifier = Notifier(userID: "alice")
        let message = Cast.message("m1", in: Cast.aliceBob, from: Cast.bob)
        let timeline = notifier.run([(0, .message(message)), (1, .message(message)), (9, .message(message))])
        #expect(describe(timeline) == ["0.00 show m1", "1.00 skip m1 duplicate", "4.00 dismiss m1 timeout", "9.00 skip m1 duplicate"])
    }

    @Test("duplicates are recognised among the most recent ids, within a bounded memory")
    func boundedMemory() {
        var notifier = Notifier(userID: "alice", device: DeviceState(appState: .background), seenLimit: 2)
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (0, .message(Cast.message("m2", in: Cast.aliceBob, from: Cast.bob))),
            (0, .message(Cast.message("m2", in: Cast.aliceBob, from: Cast.bob))),
            (0, .message(Cast.message("m3", in: Cast.aliceBob, from: Cast.bob))),
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
        ])
        #expect(describe(timeline) == ["0.00 local m1", "0.00 local m2", "0.00 skip m2 duplicate", "0.00 local m3", "0.00 local m1"])
    }

    @Test("muting silences a conversation until it is unmuted")
    func mute() {
        var notifier = Notifier(userID: "alice", device: DeviceState(appState: .background))
        let timeline = notifier.run([
            (0, .mute(conversationID: "team")),
            (1, .message(Cast.message("m1", in: Cast.team, from: Cast.bob))),
            (2, .unmute(conversationID: "team")),
            (3, .message(Cast.message("m2", in: Cast.team, from: Cast.bob))),
        ])
        #expect(describe(timeline) == ["1.00 skip m1 muted", "3.00 local m2"])
    }

    @Test("in the background, messages become system notifications with the right wording")
    func background() {
        var notifier = Notifier.aliceInBobsChat()
        _ = notifier.handle(.app(.background), at: at(1))
        let effects = notifier.handle(.message(Cast.message("m1", in: Cast.team, from: Cast.charlie, "Standup!")), at: at(2))
        #expect(effects == [TimedEffect(at: at(2), effect: .local(LocalNotification(
            messageID: "m1", title: "New message in Team Chat", body: "Charlie Davis: Standup!", thread: "team",
            senderID: "charlie")))])
        let open = notifier.handle(.message(Cast.message("m2", in: Cast.aliceBob, from: Cast.bob)), at: at(3))
        #expect(describe(open) == ["3.00 local m2"], "the open chat is not on screen while the app is away")
    }

    @Test("without permission, background messages are skipped silently")
    func deniedPermission() {
        var notifier = Notifier(userID: "alice", device: DeviceState(appState: .background, notificationsPermitted: false))
        let denied = notifier.handle(.message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob)), at: .zero)
        #expect(describe(denied) == ["0.00 skip m1 permission"])
        _ = notifier.handle(.permission(granted: true), at: at(1))
        let granted = notifier.handle(.message(Cast.message("m2", in: Cast.aliceBob, from: Cast.bob)), at: at(2))
        #expect(describe(granted) == ["2.00 local m2"])
    }

    @Test("back in the foreground, messages elsewhere are banners again")
    func backToForeground() {
        var notifier = Notifier(userID: "alice", device: DeviceState(appState: .background))
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1, .app(.foreground)),
            (2, .message(Cast.message("m2", in: Cast.aliceBob, from: Cast.bob))),
        ])
        #expect(describe(timeline) == ["0.00 local m1", "2.00 show m2", "6.00 dismiss m2 timeout"])
    }

    @Test("closing the open conversation (back to the list) makes its messages banners")
    func closeConversation() {
        var notifier = Notifier.aliceInBobsChat()
        let timeline = notifier.run([
            (1, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (2, .open(conversationID: nil)),
            (3, .message(Cast.message("m2", in: Cast.aliceBob, from: Cast.bob))),
        ])
        #expect(describe(timeline) == ["1.00 skip m1 active", "3.00 show m2", "7.00 dismiss m2 timeout"])
    }

    @Test("the effects of one input come in the documented order: dismiss, navigate, drop, skip, show, local")
    func effectOrder() {
        var notifier = Notifier(userID: "alice", config: BannerConfig(gap: .zero))
        let timeline = notifier.run([
            (0.0, .message(Cast.message("m1", in: Cast.team, from: Cast.bob))),
            (0.1, .message(Cast.message("m2", in: Cast.team, from: Cast.charlie))),
            (0.2, .message(Cast.message("m3", in: Cast.aliceCharlie, from: Cast.charlie))),
            (1.0, .gesture(.tap)),
        ], until: 1)
        #expect(describe(timeline) == [
            "0.00 show m1", "1.00 dismiss m1 tap", "1.00 navigate team", "1.00 drop m2 opened", "1.00 show m3",
        ])
    }

    @Test("time never goes backwards: an earlier instant counts as the latest one seen")
    func monotonic() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (5, .message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))),
            (1, .gesture(.close)),
        ])
        #expect(describe(timeline) == ["5.00 show m1", "5.00 dismiss m1 close"])
    }
}

@Suite("The bounded set of recent ids")
struct RecentIDsTests {
    @Test("it remembers up to its limit and forgets the oldest first")
    func forgetsOldest() {
        var ids = RecentIDs(limit: 3)
        for id in ["a", "b"] {
            ids.insert(id)
        }
        let again = ids.insert("a")
        #expect(!again, "an id already remembered is not new")
        for id in ["c", "d"] {
            ids.insert(id)
        }
        #expect(!ids.contains("a"))
        #expect(ids.contains("b") && ids.contains("c") && ids.contains("d"))
        #expect(ids.count == 3)
        ids.insert("e")
        #expect(!ids.contains("b"))
    }

    @Test("over many generations it remembers exactly the last ones, as a plain first-in, first-out list would",
          arguments: [1, 2, 3, 7])
    func sameAsAList(limit: Int) {
        var ids = RecentSet<Int>(limit: limit)
        var model: [Int] = []
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let value = Int.random(in: 0..<(limit * 3), using: &generator)
            let isNew = !model.contains(value)
            #expect(ids.insert(value) == isNew, "insert \(value) after \(model)")
            if isNew {
                model.append(value)
                if model.count > limit { model.removeFirst() }
            }
            #expect(ids.count == model.count)
            for probe in 0..<(limit * 3) {
                #expect(ids.contains(probe) == model.contains(probe), "contains \(probe) with \(model)")
            }
        }
    }
}
