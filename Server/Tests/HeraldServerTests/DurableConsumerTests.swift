import Foundation
import HeraldCore
@testable import HeraldRecords
@testable import HeraldServer
import HeraldTestSupport
import Logging
import NIOConcurrencyHelpers
import Testing

/// The one consumer machine (its place kept by compare-and-set, read-behind, rounds) on both stores, and the one
/// back-off rule of the senders.
@Suite("Durable consumers and the senders' back-off", .timeLimit(.minutes(3)))
struct DurableConsumerTests {
    static let kinds = StoreKind.available

    /// A group of three and `count` messages in it; the log's entries, as the database gives them.
    private func messages(_ count: Int, in store: any Store) async throws -> [IncomingMessage] {
        for id in ["alice", "bob", "carol"] { try await store.upsertUser(Person(id: id, displayName: id.capitalized)) }
        let group = try await store.createConversation(
            kind: .group, title: "Team", memberIDs: ["alice", "bob", "carol"]).record.conversation
        for index in 0..<count {
            _ = try await store.post(MessageDraft(
                id: "m-\(index)", conversation: group, sender: Person(id: "alice", displayName: "Alice"),
                text: "hello \(index)", imageURL: nil))
        }
        return try await store.entries(after: 0, through: store.latestSeq(), limit: 10_000)
    }

    @Test("the wake signal: a notification kept before a wait ends it at once, and only one wait; a wait with none kept ends at a notification or at its timeout")
    func wakeSignal() async throws {
        let signal = WakeSignal()
        signal.notify()
        signal.notify()
        await signal.wait(timeout: .seconds(3_600))  // the kept one: at once (the suite's limit would stop it otherwise)
        let clock = ContinuousClock()
        let start = clock.now
        await signal.wait(timeout: .milliseconds(200))  // two notifications keep one: this one waits its timeout
        #expect(clock.now - start >= .milliseconds(200))
        // A notification ends a wait in progress (or, sent before it began, is kept for it: either way it ends).
        async let woken: Void = signal.wait(timeout: .seconds(3_600))
        try await Task.sleep(for: .milliseconds(50))
        signal.notify()
        await woken
    }

    @Test("a place moves only from where it is: a stale round writes nothing", arguments: kinds)
    func compareAndSet(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let entries = try await messages(3, in: store)
            let start = try await store.place(of: .webhook)
            let events = entries.compactMap(NewWebhookEvent.entry)
            let stale = try await store.advance(.webhook, from: start + 1, to: 3, writing: ConsumerOutput(webhookEvents: events))
            #expect(stale == nil)
            #expect(try await store.webhookCount() == 0)
            #expect(try await store.place(of: .webhook) == start)
            let moved = try await store.advance(.webhook, from: start, to: 3, writing: ConsumerOutput(webhookEvents: events))
            #expect(moved == 3)
            #expect(try await store.webhookCount() == 3)
            #expect(try await store.place(of: .webhook) == 3)
            #expect(try await store.place(of: .push) == start, "each consumer has a place of its own")
        }
    }

    @Test("two nodes' consumers of one place decide each entry once, whichever round loses the race", arguments: kinds)
    func twoNodes(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let entries = try await messages(40, in: store)
            let place = try await store.place(of: .webhook)
            let written = NIOLockedValueBox(0)
            let rounds = NIOLockedValueBox(0)
            let wroteSignal = WakeSignal()
            let bothDeciding = WakeSignal()
            // Each node's first round waits until the other's started too: both read the same place.
            let decide: DurableConsumer.Decide = { entries in
                let round = rounds.withLockedValue { count in
                    count += 1
                    return count
                }
                if round == 1 { await bothDeciding.wait(timeout: .seconds(30)) } else { bothDeciding.notify() }
                return ConsumerOutput(webhookEvents: entries.compactMap(NewWebhookEvent.entry))
            }
            let nodes = (0..<2).map { _ in
                DurableConsumer(
                    .webhook, store: store, after: place, isOn: true, interval: .zero, logger: Logger(label: "test"),
                    decide: decide,
                    wrote: { count in
                        written.withLockedValue { $0 += count }
                        wroteSignal.notify()
                    })
            }
            for node in nodes { #expect(node.takeAtOnce(entries) == entries.count) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for node in nodes { group.addTask { await node.run() } }
                let deadline = ContinuousClock.now + .seconds(60)
                while written.withLockedValue({ $0 }) < entries.count, ContinuousClock.now < deadline {
                    await wroteSignal.wait(timeout: .seconds(1))
                }
                // Both nodes are caught up once the place is at the end and neither holds anything after it.
                while try await store.place(of: .webhook) < entries.count, ContinuousClock.now < deadline {
                    await wroteSignal.wait(timeout: .milliseconds(100))
                }
                group.cancelAll()
            }
            #expect(rounds.withLockedValue { $0 } >= 2, "both nodes decided")
            #expect(written.withLockedValue { $0 } == entries.count)
            #expect(try await store.webhookCount() == entries.count, "each entry's event once")
            #expect(try await store.place(of: .webhook) == Int64(entries.count))
        }
    }

    @Test("entries not held (before the start, or let go) are read from the database, in order, once", arguments: kinds)
    func readBehind(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let entries = try await messages(300, in: store)
            let latest = try #require(entries.last?.message.seq)
            let seen = NIOLockedValueBox<[Int64]>([])
            let wroteSignal = WakeSignal()
            // Started after the entries were committed: it holds none of them.
            let consumer = DurableConsumer(
                .push, store: store, after: latest, isOn: true, interval: .zero, logger: Logger(label: "test"),
                decide: { entries in
                    seen.withLockedValue { $0 += entries.compactMap(\.message.seq) }
                    return ConsumerOutput()
                },
                wrote: { _ in })
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await consumer.run() }
                let deadline = ContinuousClock.now + .seconds(60)
                while consumer.decidedThrough.withLockedValue({ $0 }) < latest, ContinuousClock.now < deadline {
                    await wroteSignal.wait(timeout: .milliseconds(50))
                }
                group.cancelAll()
            }
            #expect(seen.withLockedValue { $0 } == entries.compactMap(\.message.seq), "each once, in order, in two rounds")
            #expect(try await store.place(of: .push) == latest)
        }
    }

    /// Waits (up to 30 s, looking again at each of `signal`'s notifications, or every 50 ms) until `done`.
    private static func until(_ signal: WakeSignal, _ done: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try await !done(), ContinuousClock.now < deadline { await signal.wait(timeout: .milliseconds(50)) }
        #expect(try await done())
    }

    @Test("rounds that write nothing leave the place unwritten until a round writes, a stop, the seqs' limit or the time's", arguments: kinds)
    func unwrittenPlace(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let entries = try await messages(9, in: store)
            let seqs = entries.compactMap(\.message.seq)
            let start = try await store.place(of: .webhook)
            let writing = seqs[3]
            let signal = WakeSignal()
            /// A consumer of the entries after `start` that makes an event of the entry `writing` only.
            func consumer(for: Duration = .seconds(3_600), entries limit: Int64 = 1_000) -> DurableConsumer {
                DurableConsumer(
                    .webhook, store: store, after: start, isOn: true, interval: .zero, unwrittenFor: `for`,
                    unwrittenEntries: limit, logger: Logger(label: "test"),
                    decide: { entries in
                        defer { signal.notify() }
                        return ConsumerOutput(webhookEvents: entries.filter { $0.message.seq == writing }.compactMap(NewWebhookEvent.entry))
                    },
                    wrote: { _ in })
            }

            let first = consumer()
            try await withBackground({ await first.run() }) {
                _ = first.takeAtOnce(Array(entries[0..<3]))
                try await Self.until(signal) { first.decidedThrough.withLockedValue { $0 } == seqs[2] }
                #expect(try await store.place(of: .webhook) == start, "decided, nothing written, the place as it was")
                _ = first.takeAtOnce([entries[3]])
                try await Self.until(signal) { try await store.webhookCount() == 1 }
                #expect(try await store.place(of: .webhook) == writing, "the round that writes moves it over the others")
                _ = first.takeAtOnce(Array(entries[4..<6]))
                try await Self.until(signal) { first.decidedThrough.withLockedValue { $0 } == seqs[5] }
                #expect(try await store.place(of: .webhook) == writing)
            }
            #expect(try await store.place(of: .webhook) == seqs[5], "written at the stop")

            // Past the seqs' limit (one), a round that writes nothing writes the place.
            let second = consumer(entries: 1)
            try await withBackground({ await second.run() }) {
                _ = second.takeAtOnce([entries[6]])
                try await Self.until(signal) { second.decidedThrough.withLockedValue { $0 } == seqs[6] }
                #expect(try await store.place(of: .webhook) == seqs[5])
                _ = second.takeAtOnce([entries[7]])
                try await Self.until(signal) { second.decidedThrough.withLockedValue { $0 } == seqs[7] }
                #expect(try await store.place(of: .webhook) == seqs[7])
            }

            // Once its time is up, an idle consumer writes it.
            let third = consumer(for: .milliseconds(100))
            try await withBackground({ await third.run() }) {
                _ = third.takeAtOnce([entries[8]])
                try await Self.until(signal) { try await store.place(of: .webhook) == seqs[8] }
            }
            #expect(try await store.webhookCount() == 1)
        }
    }

    @Test("a node whose unwritten rounds another node's write overtook decides them again from the new place", arguments: kinds)
    func unwrittenPlaceOvertaken(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let entries = try await messages(4, in: store)
            let seqs = entries.compactMap(\.message.seq)
            let start = try await store.place(of: .webhook)
            let rounds = NIOLockedValueBox<[[Int64]]>([])
            let signal = WakeSignal()
            let consumer = DurableConsumer(
                .webhook, store: store, after: start, isOn: true, interval: .zero, unwrittenFor: .seconds(3_600),
                logger: Logger(label: "test"),
                decide: { entries in
                    defer { signal.notify() }
                    rounds.withLockedValue { $0.append(entries.compactMap(\.message.seq)) }
                    return ConsumerOutput(webhookEvents: entries.filter { $0.message.seq == seqs[3] }.compactMap(NewWebhookEvent.entry))
                },
                wrote: { _ in })
            try await withBackground({ await consumer.run() }) {
                _ = consumer.takeAtOnce(Array(entries[0..<3]))
                try await Self.until(signal) { consumer.decidedThrough.withLockedValue { $0 } == seqs[2] }
                #expect(try await store.place(of: .webhook) == start)
                // Another node decided up to the second entry (writing nothing) and wrote its place.
                #expect(try await store.advance(.webhook, from: start, to: seqs[1], writing: ConsumerOutput()) == 0)
                rounds.withLockedValue { $0 = [] }
                _ = consumer.takeAtOnce([entries[3]])
                try await Self.until(signal) { try await store.place(of: .webhook) == seqs[3] }
            }
            #expect(rounds.withLockedValue { $0 } == [[seqs[3]], [seqs[2]], [seqs[3]]], "lost, then from the new place")
            #expect(try await store.webhookCount() == 1)
        }
    }

    @Test("a consumer that is off holds nothing, and moves its place to the log's end")
    func off() async throws {
        try await StoreKind.sqlite.withStore { store in
            let entries = try await messages(5, in: store)
            let consumer = DurableConsumer(
                .webhook, store: store, after: 0, isOn: false, interval: .zero, logger: Logger(label: "test"),
                decide: { _ in
                    Issue.record("an off consumer decided")
                    return ConsumerOutput()
                },
                wrote: { _ in })
            #expect(consumer.takeAtOnce(entries) == entries.count)
            await consumer.skipToEnd()
            #expect(try await store.place(of: .webhook) == 5)
            #expect(try await store.webhookCount() == 0)
        }
    }

    @Test("the back-off doubles from its base up to its longest, jittered within half; a Retry-After is a floor")
    func backoff() {
        let backoff = Backoff(base: .seconds(1), longest: .seconds(60))
        #expect(backoff.wait(attempts: 0, random: 1) == 1)
        #expect(backoff.wait(attempts: 0, random: 0) == 0.5)
        #expect(backoff.wait(attempts: 3, random: 1) == 8)
        #expect(backoff.wait(attempts: 10, random: 1) == 60, "capped")
        #expect(backoff.wait(attempts: 1_000, random: 0) == 30, "no overflow")
        #expect(backoff.wait(attempts: 0, retryAfter: .seconds(5), random: 1) == 5, "never sooner than asked")
        #expect(backoff.wait(attempts: 5, retryAfter: .seconds(5), random: 1) == 32, "nor sooner than its own")
        #expect(backoff.wait(attempts: 0, retryAfter: .seconds(3_600), random: 1) == 60, "an asked wait is capped too")
    }
}
