import DequeModule
import Foundation
import HeraldCore
import HeraldRecords
import Logging
import NIOConcurrencyHelpers

/// A consumer of the ``EventLog`` that keeps its place in the database: the one machine behind the push decider and
/// the webhook feed, so that each entry is decided on once, across a crash and across nodes.
///
/// It holds the entries the log hands on, at most ``buffer`` (past it they are let go, and read back from the
/// database when it gets there), and decides round after round: the entries after its place, at most ``roundSize``
/// (from memory, or from the database when the place is behind what it holds), are given to `decide`, and what that
/// returns is written with the new place in one transaction (``ConsumerPlaces/advance(_:from:to:writing:)``). A
/// round whose place another node moved meanwhile writes nothing and is made again from the new place; a failed one
/// is tried again after a second. Rounds start at most every `interval`: a round costs two trips to the database
/// whatever it decides, so under a stream of posts one round takes the entries of many, while a post after a quiet
/// spell is decided at once.
final class DurableConsumer: LogConsumer, Sendable {
    /// What a round's entries make: the rows written with the new place.
    typealias Decide = @Sendable (_ entries: [IncomingMessage]) async throws -> ConsumerOutput

    private struct Pending {
        var entries: Deque<IncomingMessage> = []
        /// Entries up to this seq are not held (they came before the start, or were let go past the buffer): a
        /// round reads them from the database.
        var readUpTo: Int64
        /// The last seq taken.
        var taken: Int64
    }

    /// The most entries held in memory.
    static let buffer = 4_096
    /// The most entries one round takes.
    static let roundSize = 256

    /// Whose place it is.
    let name: DurableConsumerName
    private let store: any ConsumerPlaces & EntryStore
    private let isOn: Bool
    private let interval: Duration
    private let decide: Decide
    private let wrote: @Sendable (Int) -> Void
    private let logger: Logger
    private let pending: NIOLockedValueBox<Pending>
    private let signal = WakeSignal()
    /// How far the place was decided, by a round of this node or (with several nodes) another's, as this node last
    /// saw it (0 before its first round): what tests wait for before changing what a decision reads when it is made.
    let decidedThrough = NIOLockedValueBox<Int64>(0)
    /// The place as this consumer's last round left it; nil when it must be read (at start, after a failed round,
    /// after another node moved it, after a skip).
    private let knownPlace = NIOLockedValueBox<Int64?>(nil)

    /// The last seq the log handed on (or that was committed before the start): once ``decidedThrough`` reaches
    /// it, whatever the entries up to it make is written.
    var taken: Int64 { pending.withLockedValue { $0.taken } }

    /// The consumer `name`, of the entries after `delivered` (what the log delivered before it was added). When it
    /// is not `isOn`, it holds nothing and decides nothing: ``skipToEnd(stopping:)`` keeps its place at the log's
    /// end. `wrote` is told how many rows each round wrote.
    init(
        _ name: DurableConsumerName, store: any ConsumerPlaces & EntryStore, after delivered: Int64, isOn: Bool,
        interval: Duration, logger: Logger, decide: @escaping Decide, wrote: @escaping @Sendable (Int) -> Void
    ) {
        self.name = name
        self.store = store
        self.isOn = isOn
        self.interval = interval
        self.logger = logger
        self.decide = decide
        self.wrote = wrote
        pending = NIOLockedValueBox(Pending(readUpTo: delivered, taken: delivered))
    }

    func take(_ entries: [IncomingMessage]) async {
        _ = takeAtOnce(entries)
    }

    /// Holds the entries for the next round and never waits: past ``buffer`` they are let go, to be read from the
    /// database.
    func takeAtOnce(_ entries: [IncomingMessage]) -> Int {
        guard isOn else { return entries.count }
        pending.withLockedValue { pending in
            if let last = entries.last?.message.seq { pending.taken = max(pending.taken, last) }
            if pending.entries.count + entries.count > Self.buffer {
                let last = entries.last?.message.seq ?? pending.entries.last?.message.seq ?? pending.readUpTo
                pending.readUpTo = max(pending.readUpTo, last)
                pending.entries.removeAll()
            } else {
                pending.entries.append(contentsOf: entries)
            }
        }
        signal.notify()
        return entries.count
    }

    /// Decides until cancelled (by the graceful stop: a round in progress is cut and rolls back, and what it had not
    /// decided is decided at the next start, from the place kept).
    func run() async {
        while !Task.isCancelled {
            let started = ContinuousClock.now
            let caughtUp = await decideAll()
            // The interval first, then the signal: under a stream of posts the signal is already there, so a round
            // costs one timer, not a wait as well.
            let next = started + interval
            if ContinuousClock.now < next { try? await Task.sleep(until: next) }
            await signal.wait(timeout: caughtUp ? .seconds(60) : .seconds(1))
        }
    }

    /// Moves the place to the log's end, deciding nothing: for a consumer that is off, at start and at stop, so
    /// that once turned on it starts from then, not from what was said meanwhile. At a stop, within
    /// ``lastWriteLimit``.
    func skipToEnd(stopping: Bool = false) async {
        knownPlace.withLockedValue { $0 = nil }
        let skip: @Sendable () async throws -> Void = { [store, name] in
            let place = try await store.place(of: name)
            let latest = try await store.latestSeq()
            if latest > place { _ = try await store.advance(name, from: place, to: latest, writing: ConsumerOutput()) }
        }
        do {
            if stopping { try await withinLimit(lastWriteLimit, skip) } else { try await skip() }
        } catch {
            logger.warning("\(name.rawValue): the place in the log could not be moved", metadata: ["error": "\(error)"])
        }
    }

    /// Rounds until the place reaches the last entry held: true when it got there, false when a round failed.
    private func decideAll() async -> Bool {
        while !Task.isCancelled {
            do {
                guard let through = try await round() else { return true }
                let behind = pending.withLockedValue { pending in
                    (pending.entries.last?.message.seq ?? 0) > through || pending.readUpTo > through
                }
                if !behind { return true }
            } catch {
                if !Task.isCancelled {
                    logger.warning("\(name.rawValue): a round in the log failed", metadata: ["error": "\(error)"])
                }
                return false
            }
        }
        return true
    }

    /// One round from the place kept: the seq it got to (the place, when another node moved it meanwhile), or nil
    /// when there was nothing after the place.
    private func round() async throws -> Int64? {
        // The place this consumer last wrote, else the database's: only a round's own compare-and-set moves it while
        // the consumer runs, and when another node's did, this round's fails and the next reads it again.
        let place: Int64
        if let known = knownPlace.withLockedValue({ $0 }) {
            place = known
        } else {
            place = try await store.place(of: name)
        }
        knownPlace.withLockedValue { $0 = nil }
        decidedThrough.withLockedValue { $0 = max($0, place) }
        let (held, readUpTo) = pending.withLockedValue { pending -> ([IncomingMessage], Int64) in
            while let first = pending.entries.first, (first.message.seq ?? 0) <= place { pending.entries.removeFirst() }
            return (Array(pending.entries.prefix(Self.roundSize)), pending.readUpTo)
        }
        var entries = held
        var through = held.last?.message.seq ?? place
        if place < readUpTo {
            // Behind what is held: from the database, up to where memory starts (seqs without a row count too).
            let upper = min(readUpTo, place + 10_000)
            entries = try await store.entries(after: place, through: upper, limit: Self.roundSize)
            through = entries.count == Self.roundSize ? (entries.last?.message.seq ?? upper) : upper
        }
        guard through > place else {
            knownPlace.withLockedValue { $0 = place }
            return nil
        }
        let output = try await decide(entries)
        guard let written = try await store.advance(name, from: place, to: through, writing: output) else {
            return place  // Another node's round moved it: this one again, from there.
        }
        knownPlace.withLockedValue { $0 = through }
        decidedThrough.withLockedValue { $0 = max($0, through) }
        if written > 0 { wrote(written) }
        return through
    }
}
