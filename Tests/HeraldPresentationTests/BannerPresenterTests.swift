import Foundation
import HeraldCore
import HeraldPresentation
import HeraldTestSupport
import Testing

/// What the app received from the presenter.
@MainActor
final class Received {
    var navigations: [String] = []
}

/// Waits (at most 10 s of real time: a busy machine runs every suite at once) for `condition` to hold, letting the
/// presenter's and driver's tasks run.
@MainActor
func eventually(_ what: String, _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("waited 10 s for \(what)")
            return
        }
        try? await Task.sleep(for: .milliseconds(2))
    }
}

@Suite("The observable presenter runs the presentation on a clock, fed by a driver", .timeLimit(.minutes(1)))
@MainActor
struct BannerPresenterTests {
    @Test("on a manual clock: the banner enters, shows, a tap reaches the engine and navigates once, and it is gone after the exit")
    func driven() async {
        let clock = ManualClock()
        let driver = NotifierDriver(notifier: Notifier(userID: "alice"), clock: clock)
        let presenter = BannerPresenter(driver: driver)
        let received = Received()
        presenter.onNavigate = { received.navigations.append($0) }
        await withDiscardingTaskGroup { group in
            group.addTask { await driver.run() }
            group.addTask { await presenter.run(effects: driver.effects, clock: clock) }
            driver.send(message("m1", in: team))
            await eventually("the banner to enter") { presenter.current?.phase == .entering }
            #expect(presenter.announcement?.text == "Charlie Davis in Team Chat: Hey, are you there?")
            #expect(presenter.transition == .slide)
            clock.advance(by: .milliseconds(300))
            await eventually("the banner to be shown") { presenter.current?.phase == .shown }

            presenter.send(.touchBegan)
            #expect(presenter.isPressed)
            presenter.send(.touchEnded(dy: 0))
            await eventually("the banner to leave") { presenter.current?.phase == .leaving }
            #expect(presenter.current?.dismissReason == .tap)
            // The navigation is an effect of its own, which may reach the presenter just after the leaving one.
            await eventually("the tap to navigate") { received.navigations == ["team"] }
            clock.advance(by: .milliseconds(250))
            await eventually("the banner to be gone") { presenter.current == nil }
            #expect(received.navigations == ["team"])

            presenter.setReduceMotion(true)
            #expect(presenter.transition == .fade)
            driver.finish()
        }
    }
}
