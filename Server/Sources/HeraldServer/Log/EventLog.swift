import HeraldCore
import HeraldRecords
import Logging
import NIOConcurrencyHelpers

/// Something that takes the log's committed entries, in `seq` order, once each.
protocol LogConsumer: Sendable {
    /// Takes the next entries (ascending `seq`, never one twice). The log hands on nothing more until this returns.
    func take(_ entries: [IncomingMessage]) async

    /// Takes as many of the next entries as it can without waiting, in order, and says how many: the rest are
    /// handed to ``take(_:)``. By default none.
    func takeAtOnce(_ entries: [IncomingMessage]) -> Int
}

extension LogConsumer {
    func takeAtOnce(_ entries: [IncomingMessage]) -> Int { 0 }
}

/// The node's one reader of the event log: every committed entry (a message, or an event such as a member added),
/// this node's and, with PostgreSQL, every other node's, handed to the consumers exactly once and in `seq` order.
///
/// The application makes it, adds its consumers and attaches it to the store as its ``CommitSink``: storage
/// persists entries and answers reads, and tells the log, through that narrow sink, what it is about to commit
/// (``reserve(_:)``) and what it committed (``committed(_:entries:waiters:)``) or that it rolled back
/// (``failed(_:)``); other nodes' commits arrive as ``notified(through:)``. ``LogOrder`` decides what may go on,
/// and ``LogCarriage`` what waits, who is resumed and when a carrier starts; one carrier at a time carries it out:
/// it hands entries to the consumers (the live fan-out, the push decider's signal), reads what this node does not
/// hold from the store, and then resumes whoever waits for a seq to be published (a post's answer waits for its own
/// entry, so the sender's frame goes out before the acknowledgement).
///
/// The carrier is the thread that made the work (the database's, after a commit) for as long as every consumer
/// takes the entries at once (the members are in memory); the rest goes to a task, so a writer never waits on the
/// database or on a slow consumer. A commit's entries are thus usually out, and its posts resumed, with no hand-over
/// to another thread.
public final class EventLog: CommitSink {
    /// Whoever waits for a seq to be delivered: what resumes them.
    typealias Waiter = @Sendable () -> Void

    /// What goes on, and who carries it (``LogCarriage``); the log carries out what it says.
    private let state: NIOLockedValueBox<LogCarriage<IncomingMessage, Waiter>>
    private let consumers: NIOLockedValueBox<[any LogConsumer]>
    /// Reads the committed entries with `after < seq <= through` from the store.
    private let source: @Sendable (Int64, Int64) async throws -> [IncomingMessage]
    private let logger: Logger
    /// How long a failed read waits before it is tried again.
    let retryWait: Duration

    /// The node's log over `store`: it starts after the store's last seq, reads what it does not hold from the
    /// store, and is the store's sink from now on.
    static func attached(to store: any EntryStore & CommitReporter, retryWait: Duration = .seconds(1), logger: Logger) async throws -> EventLog {
        let log = EventLog(after: try await store.latestSeq(), retryWait: retryWait, logger: logger) { after, through in
            try await store.entries(after: after, through: through, limit: .max)
        }
        store.attach(log)
        return log
    }

    /// A log that starts after `seq` (the store's last when the node starts) and reads what it does not hold with
    /// `source`.
    init(
        after seq: Int64, retryWait: Duration = .seconds(1), logger: Logger,
        source: @escaping @Sendable (Int64, Int64) async throws -> [IncomingMessage]
    ) {
        state = NIOLockedValueBox(LogCarriage(after: seq))
        consumers = NIOLockedValueBox([])
        self.source = source
        self.logger = logger
        self.retryWait = retryWait
    }

    /// Adds a consumer; it takes the entries delivered from then on.
    func add(_ consumer: any LogConsumer) {
        consumers.withLockedValue { $0.append(consumer) }
    }

    /// The last seq the consumers have taken.
    var delivered: Int64 { state.withLockedValue { $0.delivered } }

    /// This node is about to commit `seqs` (with PostgreSQL: it holds the sequence's counter).
    public func reserve(_ seqs: ClosedRange<Int64>) {
        state.withLockedValue { $0.reserve(seqs) }
    }

    /// This node committed `seqs` with these entries. Each waiter resumes once its seq was delivered (at once if it
    /// already was).
    public func committed(
        _ seqs: ClosedRange<Int64>, entries: [IncomingMessage], waiters: [LogWaiter] = []
    ) {
        let numbered = entries.map { (seq: $0.message.seq ?? 0, entry: $0) }
        let waiting = waiters.map { (seq: $0.seq, waiter: $0.resume) }
        carryOut(state.withLockedValue { $0.commit(seqs, entries: numbered, waiters: waiting) })
    }

    /// This node's reservation of `seqs` rolled back.
    public func failed(_ seqs: ClosedRange<Int64>) {
        carryOut(state.withLockedValue { $0.fail(seqs) })
    }

    /// Everything up to `seq` is committed.
    public func notified(through seq: Int64) {
        carryOut(state.withLockedValue { $0.notified(through: seq) })
    }

    /// Resumes `resume` once `seq` was delivered (at once if it was).
    public func whenDelivered(_ seq: Int64, _ resume: @escaping @Sendable () -> Void) {
        carryOut(state.withLockedValue { $0.whenDelivered(seq, resume) })
    }

    /// Carries out the carriage's actions, outside the lock: resumes waiters, and starts a carrier on this thread.
    private func carryOut(_ actions: [LogCarriage<IncomingMessage, Waiter>.Action]) {
        for action in actions {
            switch action {
            case .resume(let waiters): for resume in waiters { resume() }
            case .carry: carry()
            }
        }
    }

    /// Carries out what is cleared to go on this thread while the consumers take it at once; hands the rest (a
    /// consumer that would wait, a read) to a task, which carries on from there.
    private func carry() {
        while let next = state.withLockedValue({ $0.next() }) {
            switch next {
            case .deliver(let entries, let through):
                if let stuck = deliverAtOnce(entries) {
                    return carryOn { await self.finishDelivery(entries, through: through, from: stuck) }
                }
                delivered(through: through)
            case .read(let after, let through):
                return carryOn { await self.read(after: after, through: through) }
            }
        }
    }

    /// Goes on in a task of its own from what would wait (`next`), then with the rest of the work.
    ///
    /// One of the server's few unstructured tasks, for the fast path: a commit's entries go to the consumers on the
    /// committing thread, with no hop, while every consumer takes them at once, and only a consumer that would wait
    /// (or a read from the database) moves the delivery to a task, which ends when the work is done. It never outlives
    /// the store: what it awaits are the consumers and the store's reads, which end when they stop.
    private func carryOn(_ next: @escaping @Sendable () async -> Void) {
        Task {
            await next()
            await self.work()
        }
    }

    /// Hands `entries` to each consumer at once; nil when all took all, else the consumer that stopped and how
    /// many it took.
    private func deliverAtOnce(_ entries: [IncomingMessage]) -> (consumer: Int, taken: Int)? {
        guard !entries.isEmpty else { return nil }
        for (index, consumer) in consumers.withLockedValue({ $0 }).enumerated() {
            let taken = consumer.takeAtOnce(entries)
            if taken < entries.count { return (index, taken) }
        }
        return nil
    }

    /// The rest of a delivery ``deliverAtOnce(_:)`` stopped at, then its end.
    private func finishDelivery(_ entries: [IncomingMessage], through: Int64, from stuck: (consumer: Int, taken: Int)) async {
        let consumers = consumers.withLockedValue { $0 }
        await consumers[stuck.consumer].take(Array(entries[stuck.taken...]))
        for consumer in consumers[(stuck.consumer + 1)...] {
            await consumer.take(entries)
        }
        delivered(through: through)
    }

    /// Carries out what is cleared to go, in order, until nothing is; then ends.
    private func work() async {
        while let next = state.withLockedValue({ $0.next() }) {
            switch next {
            case .deliver(let entries, let through): await deliver(entries, through: through)
            case .read(let after, let through): await read(after: after, through: through)
            }
        }
    }

    private func deliver(_ entries: [IncomingMessage], through: Int64) async {
        if !entries.isEmpty {
            for consumer in consumers.withLockedValue({ $0 }) {
                await consumer.take(entries)
            }
        }
        delivered(through: through)
    }

    /// Everything up to `through` was handed on: whoever waits for it resumes.
    private func delivered(through: Int64) {
        carryOut(state.withLockedValue { $0.delivered(through: through) })
    }

    private func read(after: Int64, through: Int64) async {
        do {
            let entries = try await source(after, through)
            let numbered = entries.map { (seq: $0.message.seq ?? 0, entry: $0) }
            carryOut(state.withLockedValue { $0.read(after: after, through: through, entries: numbered) })
        } catch {
            logger.warning("new log entries could not be read from the database; trying again",
                           metadata: ["error": "\(error)"])
            try? await Task.sleep(for: retryWait)
            carryOut(state.withLockedValue { $0.readFailed(after: after, through: through) })
        }
    }
}
