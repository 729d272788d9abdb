import HeraldTestSupport
import Foundation
import HeraldCore
import Testing

@Suite("The driver runs the engine on a real (here: manual) clock")
struct NotifierDriverTests {
    @Test("a banner shows at once and goes when the clock reaches 4 s")
    func timeout() async {
        let clock = ManualClock()
        let driver = NotifierDriver(notifier: Notifier(userID: "alice"), clock: clock)
        await withDiscardingTaskGroup { group in
            group.addTask { await driver.run() }
            var effects = driver.effects.makeAsyncIterator()
            driver.send(.message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob)))
            let shown = await effects.next()
            guard case .show(let banner) = shown else {
                Issue.record("expected a banner, got \(String(describing: shown))")
                return
            }
            #expect(banner.id == "m1")
            clock.advance(by: .milliseconds(3_999))
            driver.send(.message(Cast.message("m2", in: Cast.aliceBob, from: Cast.alice)))
            let beforeDeadline = await effects.next()
            #expect(beforeDeadline == .skip(messageID: "m2", reason: .own), "nothing fired before 4 s")
            clock.advance(by: .milliseconds(1))
            let atDeadline = await effects.next()
            #expect(atDeadline == .dismiss(bannerID: "m1", reason: .timeout))
            driver.finish()
            let afterFinish = await effects.next()
            #expect(afterFinish == nil)
        }
    }

    @Test("a general banner's on-close callback runs once when it goes, whether dismissed or dropped")
    func onClose() async {
        let clock = ManualClock()
        let driver = NotifierDriver(notifier: Notifier(userID: "alice", config: BannerConfig(capacity: 1)), clock: clock)
        let closed = ClosedLog()
        await withDiscardingTaskGroup { group in
            group.addTask { await driver.run() }
            var effects = driver.effects.makeAsyncIterator()
            let first = driver.show("Saved", tone: .success, onClose: { closed.add("saved") })
            driver.show("Copied", tone: .neutral, onClose: { closed.add("copied") })
            driver.show("Upload failed", tone: .danger, icon: "xmark", onClose: { closed.add("failed") })
            guard case .show(let banner) = await effects.next() else {
                Issue.record("expected the first banner")
                return
            }
            #expect(banner.id == first)
            #expect(banner.tone == .success)
            guard case .drop(_, .capacity) = await effects.next() else {
                Issue.record("expected the second banner to be pushed out")
                return
            }
            #expect(closed.names == ["copied"])
            driver.send(.gesture(.close))
            let closedByButton = await effects.next()
            #expect(closedByButton == .dismiss(bannerID: first, reason: .close))
            #expect(closed.names == ["copied", "saved"])
            clock.advance(by: .milliseconds(250))
            guard case .show(let last) = await effects.next() else {
                Issue.record("expected the last banner after the gap")
                return
            }
            #expect(last.title == "Upload failed")
            #expect(last.icon == "xmark")
            clock.advance(by: .seconds(5))
            let timedOut = await effects.next()
            #expect(timedOut == .dismiss(bannerID: last.id, reason: .timeout))
            #expect(closed.names == ["copied", "saved", "failed"])
            driver.finish()
        }
    }

    @Test("cancelling the task that runs it stops it, sleeping timers included")
    func cancellation() async {
        let clock = ManualClock()
        let driver = NotifierDriver(notifier: Notifier(userID: "alice"), clock: clock)
        var effects = driver.effects.makeAsyncIterator()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await driver.run() }
            driver.send(.message(Cast.message("m1", in: Cast.aliceBob, from: Cast.bob)))
            _ = await effects.next()
            group.cancelAll()
            await group.waitForAll()
        }
        let afterCancel = await effects.next()
        #expect(afterCancel == nil)
        #expect(clock.sleeperCount == 0)
    }
}

/// The names of closed banners, in order, from any task.
final class ClosedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var closed: [String] = []
    func add(_ name: String) { lock.withLock { closed.append(name) } }
    var names: [String] { lock.withLock { closed } }
}
