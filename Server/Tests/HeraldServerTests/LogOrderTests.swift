@testable import HeraldServer
import Testing

/// The event log's ordering core, as a pure state machine: what is published, when, and what is read.
@Suite("The event log's order: reserve, commit, publish in seq order")
struct LogOrderTests {
    typealias Order = LogOrder<String>

    /// The seqs and entries of every publish among `actions`, in order.
    private func published(_ actions: [Order.Action]) -> [(Int64, String)] {
        actions.flatMap { action -> [(Int64, String)] in
            guard case .publish(let batch, _) = action else { return [] }
            return batch.map { ($0.seq, $0.entry) }
        }
    }

    private func reads(_ actions: [Order.Action]) -> [ClosedRange<Int64>] {
        actions.compactMap { action in
            guard case .read(let after, let through) = action else { return nil }
            return (after + 1)...through
        }
    }

    @Test("one writer: reserved, committed, published at once; nothing before the start is news")
    func oneWriter() {
        var order = Order(after: 10)
        order.reserve(11...12)
        let actions = order.commit(11...12, entries: [(11, "a"), (12, "b")])
        #expect(published(actions).map(\.1) == ["a", "b"])
        #expect(reads(actions).isEmpty)
        #expect(order.published == 12 && order.isIdle)
    }

    @Test("two writers committing out of order are published in seq order, each entry once")
    func outOfOrder() {
        var order = Order(after: 0)
        order.reserve(1...1)
        order.reserve(2...3)
        let second = order.commit(2...3, entries: [(2, "b"), (3, "c")])
        #expect(published(second).isEmpty, "nothing past the first open reservation goes")
        #expect(!order.isIdle)
        let first = order.commit(1...1, entries: [(1, "a")])
        #expect(published(first).map(\.0) == [1, 2, 3])
        #expect(published(first).map(\.1) == ["a", "b", "c"])
        #expect(order.isIdle)
        // A commit that comes again changes nothing.
        #expect(published(order.commit(2...3, entries: [(2, "b"), (3, "c")])).isEmpty)
    }

    @Test("a failed commit frees its seqs: what follows goes; a seq with no row is skipped, never waited for")
    func failedCommit() {
        var order = Order(after: 0)
        order.reserve(1...2)
        order.reserve(3...3)
        #expect(published(order.commit(3...3, entries: [(3, "c")])).isEmpty)
        let actions = order.fail(1...2)
        // 1 and 2 were never committed here, but 3 was: the gap below it is read (another node may have used them),
        // in one read up to what is committed; 3 itself is taken from memory.
        #expect(reads(actions) == [1...3])
        let after = order.read(after: 0, through: 3, entries: [])
        #expect(published(after).map(\.1) == ["c"])
        #expect(order.published == 3 && order.isIdle)
    }

    @Test("other nodes' commits are read in one read at a time; this node's own in the range come from memory")
    func otherNodes() {
        var order = Order(after: 0)
        order.reserve(2...2)
        #expect(order.commit(2...2, entries: [(2, "mine")]).isEmpty == false)  // a read of 1
        #expect(order.reading == 1...2, "the gap, up to what is committed; 2 itself will come from memory")
        // More is committed elsewhere meanwhile: no second read while one is in flight.
        #expect(reads(order.notified(through: 5)).isEmpty)
        let first = order.read(after: 0, through: 2, entries: [(1, "theirs-1")])
        #expect(published(first).map(\.1) == ["theirs-1", "mine"])
        #expect(reads(first) == [3...5], "then the rest")
        let second = order.read(after: 2, through: 5, entries: [(5, "theirs-5"), (3, "theirs-3")])
        #expect(published(second).map(\.0) == [3, 5], "in seq order whatever order the rows came in; 4 had no row")
        #expect(order.isIdle)
    }

    @Test("a failed read is due again; an answer to a read not asked for is ignored")
    func failedRead() {
        var order = Order(after: 0)
        #expect(reads(order.notified(through: 3)) == [1...3])
        #expect(published(order.read(after: 5, through: 9, entries: [(6, "stray")])).isEmpty)
        #expect(reads(order.readFailed(after: 0, through: 3)) == [1...3])
        #expect(published(order.read(after: 0, through: 3, entries: [(1, "a"), (3, "c")])).map(\.1) == ["a", "c"])
        #expect(published(order.notified(through: 2)).isEmpty, "an old notification is no news")
        #expect(order.isIdle)
    }

    @Test("an open reservation holds back what other nodes committed after it, not what came before")
    func reservationHoldsBack() {
        var order = Order(after: 0)
        order.reserve(4...4)
        #expect(reads(order.notified(through: 6)) == [1...3])
        let actions = order.read(after: 0, through: 3, entries: [(1, "x")])
        #expect(published(actions).map(\.1) == ["x"])
        #expect(reads(actions).isEmpty, "5 and 6 wait for 4")
        let committed = order.commit(4...4, entries: [(4, "mine")])
        #expect(published(committed).map(\.1) == ["mine"])
        #expect(reads(committed) == [5...6])
    }
}
