@testable import HeraldServer
import Testing

/// The event log's carrying, as a pure state machine: which work the one carrier does next, in which order, what
/// waits while it carries, and who is resumed when. Entries are strings, waiters numbers: no store, no task.
@Suite("The event log's carrying: one carrier, deliveries in order, then reads; waiters after their seq")
struct LogCarriageTests {
    typealias Carriage = LogCarriage<String, Int>

    private func resumed(_ actions: [Carriage.Action]) -> [Int] {
        actions.flatMap { action -> [Int] in
            guard case .resume(let waiters) = action else { return [] }
            return waiters
        }
    }

    private func starts(_ actions: [Carriage.Action]) -> Int {
        actions.filter { if case .carry = $0 { true } else { false } }.count
    }

    /// What the carrier takes until it has nothing, each delivery said done at once: the deliveries' entries and
    /// reads, in order, and who was resumed.
    private func carryAll(_ carriage: inout Carriage) -> (work: [String], resumed: [Int]) {
        var work: [String] = []
        var resumed: [Int] = []
        while let next = carriage.next() {
            switch next {
            case .deliver(let entries, let through):
                work.append("deliver \(entries.joined(separator: ",")) through \(through)")
                resumed += self.resumed(carriage.delivered(through: through))
            case .read(let after, let through):
                work.append("read \(after + 1)...\(through)")
            }
        }
        return (work, resumed)
    }

    @Test("a commit while no one carries starts a carrier; its entries are its first work; then its turn ends")
    func startsOneCarrier() {
        var carriage = Carriage(after: 0)
        carriage.reserve(1...2)
        let actions = carriage.commit(1...2, entries: [(1, "a"), (2, "b")])
        #expect(starts(actions) == 1)
        #expect(carriage.carrying)
        let carried = carryAll(&carriage)
        #expect(carried.work == ["deliver a,b through 2"])
        #expect(!carriage.carrying, "a carrier that finds nothing ends its turn")
        #expect(carriage.delivered == 2)
    }

    @Test("while one carries, new work waits for it: no second carrier; it takes the work in seq order")
    func oneCarrierAtATime() {
        var carriage = Carriage(after: 0)
        carriage.reserve(1...1)
        #expect(starts(carriage.commit(1...1, entries: [(1, "a")])) == 1)
        guard case .deliver(let first, through: 1) = carriage.next() else {
            Issue.record("the first delivery")
            return
        }
        #expect(first == ["a"])
        // The carrier is away with `a` (a consumer that waits): two more commits come.
        carriage.reserve(2...2)
        carriage.reserve(3...3)
        #expect(starts(carriage.commit(2...2, entries: [(2, "b")])) == 0)
        #expect(starts(carriage.commit(3...3, entries: [(3, "c")])) == 0)
        _ = carriage.delivered(through: 1)
        #expect(carryAll(&carriage).work == ["deliver b through 2", "deliver c through 3"])
        #expect(starts(carriage.notified(through: 3)) == 0, "nothing new: no carrier")
    }

    @Test("a waiter resumes once its seq was delivered, not when it is published; one already delivered at once")
    func waiters() {
        var carriage = Carriage(after: 5)
        #expect(resumed(carriage.whenDelivered(5, 1)) == [1], "already delivered: at once")
        carriage.reserve(6...7)
        let actions = carriage.commit(6...7, entries: [(6, "a"), (7, "b")], waiters: [(6, 2), (7, 3), (8, 4)])
        #expect(resumed(actions).isEmpty, "published is not delivered")
        #expect(carriage.waiting == 3)
        guard case .deliver(_, through: 7) = carriage.next() else {
            Issue.record("the delivery")
            return
        }
        #expect(resumed(carriage.delivered(through: 7)) == [2, 3])
        #expect(carriage.waiting == 1, "8 is not delivered yet")
        #expect(resumed(carriage.whenDelivered(4, 5)) == [5])
    }

    @Test("a gap is read after the deliveries before it; a failed read is due again; the read's entries then go")
    func reads() {
        var carriage = Carriage(after: 0)
        carriage.reserve(2...2)
        #expect(starts(carriage.commit(2...2, entries: [(2, "mine")])) == 1)
        guard case .read(after: 0, through: 2) = carriage.next() else {
            Issue.record("the read of the gap")
            return
        }
        #expect(carriage.carrying, "the carrier is away reading")
        #expect(starts(carriage.readFailed(after: 0, through: 2)) == 0, "the carrier itself does it again")
        guard case .read(after: 0, through: 2) = carriage.next() else {
            Issue.record("the read again")
            return
        }
        #expect(starts(carriage.read(after: 0, through: 2, entries: [(1, "theirs")])) == 0)
        #expect(carryAll(&carriage).work == ["deliver theirs,mine through 2"])
        #expect(carriage.delivered == 2 && !carriage.carrying)
    }

    @Test("deliveries cleared before a read go first; what is cleared meanwhile waits behind them")
    func deliveriesBeforeReads() {
        var carriage = Carriage(after: 0)
        carriage.reserve(1...1)
        _ = carriage.commit(1...1, entries: [(1, "a")])
        // Another node committed 2...3: a read, cleared after `a`.
        _ = carriage.notified(through: 3)
        let carried = carryAll(&carriage)
        #expect(carried.work == ["deliver a through 1", "read 2...3"])
    }
}
