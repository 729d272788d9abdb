import Foundation
import HeraldCore
@testable import HeraldServer
import Logging
import NIOConcurrencyHelpers
import Testing

/// The event log's carrier: what consumers take at once is handed on by the committing thread itself; what one would
/// wait for goes on in a task; every consumer takes every entry once, in order, and a waiter resumes after all did.
@Suite("The event log's carrier: at once on the committing thread, else in a task, in order")
struct EventLogTests {
    /// A consumer that takes at once at most `atOnce` entries of each batch (nil: all), and the rest when awaited.
    final class Taker: LogConsumer {
        let atOnce: Int?
        let taken = NIOLockedValueBox<[(seq: Int64, atOnce: Bool)]>([])
        init(atOnce: Int?) { self.atOnce = atOnce }

        func takeAtOnce(_ entries: [IncomingMessage]) -> Int {
            let count = min(entries.count, atOnce ?? entries.count)
            taken.withLockedValue { $0 += entries.prefix(count).map { ($0.message.seq ?? 0, true) } }
            return count
        }

        func take(_ entries: [IncomingMessage]) async {
            await Task.yield()
            taken.withLockedValue { $0 += entries.map { ($0.message.seq ?? 0, false) } }
        }

        var seqs: [Int64] { taken.withLockedValue { $0.map(\.seq) } }
    }

    private func entry(_ seq: Int64) -> IncomingMessage {
        IncomingMessage(
            message: Message(id: "m\(seq)", conversationID: "c", senderID: "alice", text: "\(seq)", seq: seq),
            conversation: Conversation(id: "c", kind: .group, title: "Team"),
            sender: Person(id: "alice", displayName: "Alice"))
    }

    private func log() -> EventLog {
        EventLog(after: 0, logger: Logger(label: "test")) { _, _ in [] }
    }

    @Test("consumers that take at once have a commit's entries, and its waiters are resumed, before committed returns")
    func atOnce() {
        let log = log()
        let (first, second) = (Taker(atOnce: nil), Taker(atOnce: nil))
        log.add(first)
        log.add(second)
        let resumed = NIOLockedValueBox(false)
        log.reserve(1...2)
        log.committed(1...2, entries: [entry(1), entry(2)], waiters: [(seq: 2, resume: { resumed.withLockedValue { $0 = true } })])
        #expect(first.seqs == [1, 2] && second.seqs == [1, 2])
        #expect(resumed.withLockedValue { $0 }, "resumed on the committing thread")
        #expect(log.delivered == 2)
    }

    @Test("a consumer that stops part-way gets the rest in a task, the next consumers after it; all in order, once")
    func partWay() async throws {
        let log = log()
        let (partly, later) = (Taker(atOnce: 1), Taker(atOnce: nil))
        log.add(partly)
        log.add(later)
        log.reserve(1...3)
        log.committed(1...3, entries: [entry(1), entry(2), entry(3)])
        log.reserve(4...4)
        log.committed(4...4, entries: [entry(4)])
        #expect(partly.taken.withLockedValue { $0.first?.atOnce } == true, "the first entry was taken at once")
        await log.delivery(of: 4)
        #expect(partly.seqs == [1, 2, 3, 4])
        #expect(later.seqs == [1, 2, 3, 4])
        #expect(Array(partly.taken.withLockedValue { $0.map(\.atOnce) }.prefix(3)) == [true, false, false],
                "the rest of the first batch in the task")
    }
}
