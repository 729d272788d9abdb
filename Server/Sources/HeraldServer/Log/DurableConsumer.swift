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
///
/// A round that writes no row (most, where members have no device) may leave the place as it is, for up to
/// ``unwrittenFor`` and ``unwrittenEntries``: the next round that writes moves it over both, and so does an idle
/// consumer once that time is up, and a stop. After a crash those rounds are decided again, and they wrote nothing
/// (unless what they read changed meanwhile: a device registered since then is pushed what they would have pushed it).
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
    /// How long rounds that wrote nothing may leave the place unwritten, unless told otherwise.
    static let unwrittenFor = Duration.seconds(1)
    /// How many seqs rounds that wrote nothing may leave the place behind, unless told otherwise.
    static let unwrittenEntries: Int64 = 1_000

    /// The place in the database, and how far this consumer decided beyond it with rounds that wrote nothing.
    private struct Place {
        /// The place as written.
        var written: Int64
        /// The last seq decided (at least ``written``).
        var decided: Int64
        /// When ``decided`` got ahead of ``written``.
        var since: ContinuousClock.Instant

        init(_ place: Int64) {
            written = place
            decided = place
            since = .now
        }

        var isUnwritten: Bool { decided > written }
    }

    /// Whose place it is.
    let name: DurableConsumerName
    private let store: any ConsumerPlaces & EntryStore
    private let isOn: Bool
    private let interval: Duration
    private let decide: Decide
    private let wrote: @Sendable (Int) -> Void
    private let unwrittenFor: Duration
    private let unwrittenEntries: Int64
    private let logger: Logger
    private let pending: NIOLockedValueBox<Pending>
    private let signal = WakeSignal()
    /// How far the place was decided, by a round of this node or (with several nodes) another's, as this node last
    /// saw it (0 before its first round): what tests wait for before changing what a decision reads when it is made.
    let decidedThrough = NIOLockedValueBox<Int64>(0)
    /// The place as this consumer's last round left it; nil when it must be read (at start, after another node
    /// moved it, after a skip). A failed round leaves it as it was.
    private let knownPlace = NIOLockedValueBox<Place?>(nil)

    /// The last seq the log handed on (or that was committed before the start): once ``decidedThrough`` reaches
    /// it, whatever the entries up to it make is written.
    var taken: Int64 { pending.withLockedValue { $0.taken } }

    /// The consumer `name`, of the entries after `delivered` (what the log delivered before it was added). When it
    /// is not `isOn`, it holds nothing and decides nothing: ``skipToEnd(stopping:)`` keeps its place at the log's
    /// end. `wrote` is told how many rows each round wrote. Rounds that write nothing leave the place unwritten for
    /// up to `unwrittenFor` and `unwrittenEntries` seqs.
    init(
        _ name: DurableConsumerName, store: any ConsumerPlaces & EntryStore, after delivered: Int64, isOn: Bool,
        interval: Duration, unwrittenFor: Duration = DurableConsumer.unwrittenFor,
        unwrittenEntries: Int64 = DurableConsumer.unwrittenEntries, logger: Logger, decide: @escaping Decide,
        wrote: @escaping @Sendable (Int) -> Void
    ) {
        self.unwrittenFor = unwrittenFor
        self.unwrittenEntries = unwrittenEntries
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
            let unwritten = knownPlace.withLockedValue { $0?.isUnwritten ?? false }
            await signal.wait(timeout: unwritten ? unwrittenFor : caughtUp ? .seconds(60) : .seconds(1))
        }
        // The rounds since the place was last written, within the limit of a stop: in an unstructured task, as this
        // one is cancelled (which a query on PostgreSQL would answer by not running); awaited here.
        guard let known = knownPlace.withLockedValue({ $0 }), known.isUnwritten else { return }
        await Task { [name, logger] in
            do {
                try await withinLimit(lastWriteLimit) { _ = try await self.writeUnwritten(known) }
            } catch {
                logger.warning("\(name.rawValue): the place in the log could not be moved", metadata: ["error": "\(error)"])
            }
        }.value
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
        // the consumer runs, and when another node's did, this round's fails and the next reads it again. A round
        // that fails (its write may have been committed or not) keeps it: the next write is compared with it.
        let known: Place
        if let place = knownPlace.withLockedValue({ $0 }) {
            known = place
        } else {
            known = Place(try await store.place(of: name))
            knownPlace.withLockedValue { $0 = known }
        }
        let place = known.decided
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
        let now = ContinuousClock.now
        guard through > place else {
            // Nothing new: rounds that wrote nothing are written once their time is up.
            if known.isUnwritten, now - known.since >= unwrittenFor {
                guard try await writeUnwritten(known) else {
                    lostPlace(known)
                    return nil
                }
                knownPlace.withLockedValue { $0 = Place(known.decided) }
            }
            return nil
        }
        let output = try await decide(entries)
        if output.isEmpty, through - known.written <= unwrittenEntries, !known.isUnwritten || now - known.since < unwrittenFor {
            var unwritten = known
            if !known.isUnwritten { unwritten.since = now }
            unwritten.decided = through
            knownPlace.withLockedValue { $0 = unwritten }
            decidedThrough.withLockedValue { $0 = max($0, through) }
            return through
        }
        guard let written = try await store.advance(name, from: known.written, to: through, writing: output) else {
            lostPlace(known)
            return place  // Another node's round moved it: this one again, from there.
        }
        knownPlace.withLockedValue { $0 = Place(through) }
        decidedThrough.withLockedValue { $0 = max($0, through) }
        if written > 0 { wrote(written) }
        return through
    }

    /// Writes the place rounds that wrote nothing left at `known.decided`: false when another node's round moved it.
    private func writeUnwritten(_ known: Place) async throws -> Bool {
        try await store.advance(name, from: known.written, to: known.decided, writing: ConsumerOutput()) != nil
    }

    /// Another node's round moved the place from `known.written`: the next round reads it, and reads from the
    /// database what this one decided beyond it without writing (let go from memory), to decide it again from there.
    private func lostPlace(_ known: Place) {
        knownPlace.withLockedValue { $0 = nil }
        pending.withLockedValue { $0.readUpTo = max($0.readUpTo, known.decided) }
    }
}
