import HeraldCore
import Testing

@Suite("Bursts: one interruption each")
struct NotificationBurstsTests {
    @Test("the first alerts; the next within the window replace it silently with a count; a mention alerts; the window and a read end it")
    func rule() {
        var bursts = NotificationBursts(window: .seconds(60))
        let first = bursts.decide("team", identifier: "herald-1", namesMember: false, at: .seconds(0))
        #expect(first.alerts && first.identifier == "herald-1" && first.count == 1)
        for (index, second) in (1...18).enumerated() {
            let later = bursts.decide("team", identifier: "herald-\(index + 2)", namesMember: false, at: .seconds(second))
            #expect(!later.alerts && later.identifier == "herald-1" && later.count == index + 2)
        }
        let named = bursts.decide("team", identifier: "herald-20", namesMember: true, at: .seconds(30))
        #expect(named.alerts && named.identifier == "herald-1" && named.count == 20, "a mention alerts, still replacing")
        #expect(bursts.decide("other", identifier: "herald-21", namesMember: false, at: .seconds(31)).alerts, "bursts are per key")
        // The window is counted from the burst's first.
        #expect(!bursts.decide("team", identifier: "herald-22", namesMember: false, at: .milliseconds(59_999)).alerts)
        let fresh = bursts.decide("team", identifier: "herald-23", namesMember: false, at: .seconds(60))
        #expect(fresh.alerts && fresh.identifier == "herald-23" && fresh.count == 1)
        // Ended: read (explicitly, or the read marker moved), or a clock gone back.
        bursts.end("team")
        #expect(bursts.decide("team", identifier: "herald-24", namesMember: false, at: .seconds(61)).alerts)
        #expect(!bursts.decide("team", identifier: "herald-25", namesMember: false, at: .seconds(62), readMarker: 0).alerts)
        #expect(bursts.decide("team", identifier: "herald-26", namesMember: false, at: .seconds(63), readMarker: 25).alerts)
        #expect(!bursts.decide("team", identifier: "herald-27", namesMember: false, at: .seconds(64), readMarker: 25).alerts)
        #expect(bursts.decide("team", identifier: "herald-28", namesMember: false, at: .seconds(10), readMarker: 25).alerts)
    }

    @Test("a window of zero turns bursts off")
    func off() {
        var bursts = NotificationBursts(window: .zero)
        for second in 0..<5 {
            #expect(bursts.decide("team", identifier: "herald-\(second)", namesMember: false, at: .seconds(second)).alerts)
        }
    }

    @Test("memory: bursts whose window passed are dropped as new ones come")
    func bounded() {
        var bursts = NotificationBursts(window: .seconds(1))
        for index in 0..<100_000 {
            _ = bursts.decide("c\(index)", identifier: "herald-\(index)", namesMember: false, at: .milliseconds(index))
        }
        #expect(bursts.count <= 2 * 1_024 + 1, "about one window of bursts, not all of them: \(bursts.count)")
    }
}
