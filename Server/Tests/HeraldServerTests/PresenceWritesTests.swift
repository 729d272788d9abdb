@testable import HeraldPostgres
@testable import HeraldServer
import Testing

/// A node's presence is written as the latest state of each connection, coalesced: the state machine alone.
@Suite("Presence writes, coalesced")
struct PresenceWritesTests {
    let alice = PresenceWrites.Row(userID: "alice", device: "phone", foreground: true)
    var aliceAway: PresenceWrites.Row { PresenceWrites.Row(userID: "alice", device: "phone", foreground: false) }

    @Test("a thousand changes of one connection while a write is under way are one row in the next write")
    func coalesced() {
        var writes = PresenceWrites()
        let wake = writes.record(connection: 1, row: alice)
        #expect(wake)
        let first = writes.nextBatch(limit: 100)
        #expect(first?.upserts == [1: alice])
        for index in 0..<1_000 {
            _ = writes.record(connection: 1, row: index.isMultiple(of: 2) ? alice : aliceAway)
        }
        #expect(writes.waiting == 1)
        let during = writes.nextBatch(limit: 100)
        #expect(during == nil, "one write at a time")
        writes.batchWritten(true)
        let second = writes.nextBatch(limit: 100)
        #expect(second?.upserts == [1: aliceAway], "the latest state only")
        writes.batchWritten(true)
        #expect(writes.written[1] == aliceAway)
        let after = writes.nextBatch(limit: 100)
        #expect(after == nil)
    }

    @Test("a change back to what is written, or a connection opened and closed between writes, needs no write")
    func nothingToWrite() {
        var writes = PresenceWrites()
        _ = writes.record(connection: 1, row: alice)
        _ = writes.nextBatch(limit: 10)
        writes.batchWritten(true)
        let away = writes.record(connection: 1, row: aliceAway)
        let back = writes.record(connection: 1, row: alice)
        #expect(away && !back, "back to what the database has")
        let opened = writes.record(connection: 2, row: alice)
        let closed = writes.record(connection: 2, row: nil)
        #expect(opened && !closed, "gone before it was written: nothing to do")
        let none = writes.nextBatch(limit: 10)
        #expect(none == nil)
        _ = writes.record(connection: 1, row: nil)
        let deletion = writes.nextBatch(limit: 10)
        #expect(deletion?.deletes == [1])
        writes.batchWritten(true)
        #expect(writes.written.isEmpty)
    }

    @Test("a failed write is written again, unless a newer state came meanwhile; batches are bounded")
    func failures() {
        var writes = PresenceWrites()
        for connection in 0..<5 { _ = writes.record(connection: connection, row: alice) }
        let batch = writes.nextBatch(limit: 3)
        #expect(batch.map { $0.upserts.count } == 3)
        let changed = batch!.upserts.keys.sorted()[0]
        _ = writes.record(connection: changed, row: aliceAway)
        writes.batchWritten(false)
        #expect(writes.waiting == 5)
        var seen: [Int: PresenceWrites.Row] = [:]
        while let next = writes.nextBatch(limit: 3) {
            for (connection, row) in next.upserts { seen[connection] = row }
            writes.batchWritten(true)
        }
        #expect(seen.count == 5)
        #expect(seen[changed] == aliceAway, "the newer state, not the failed one")
    }
}
