import DequeModule

/// What the event log's carrier does next: which entries go to the consumers, which read is due, who is resumed,
/// and whether a carrier must start. The rules of ``EventLog`` with no lock, no task and no consumer in them.
///
/// A pure state machine in the style of ``LogOrder``, which it holds: the writers' and the notifications' inputs
/// go through it, and what it clears to go waits here, in order, until the one carrier takes it with
/// ``next()``. Only one carrier carries at a time: an input that clears work while none does returns
/// ``Action/carry``; while one does, the work waits for it. A carrier that finds nothing ends its turn.
///
/// `Entry` is what a seq stands for (``IncomingMessage`` in the server); `Waiter` is whoever waits for a seq to be
/// delivered (a closure that resumes a post in the server; anything in the tests).
struct LogCarriage<Entry, Waiter> {
    /// What to do after an input.
    enum Action {
        /// Resume these waiters: their seqs were delivered.
        case resume([Waiter])
        /// Start a carrier: call ``next()`` and carry out what it says until it says nothing.
        case carry
    }

    /// What the carrier does next.
    enum Work {
        /// Hand `entries` to every consumer, in order, then say ``delivered(through:)``.
        case deliver([Entry], through: Int64)
        /// Read the committed entries with `after < seq <= through`, then say
        /// ``read(after:through:entries:)`` or ``readFailed(after:through:)``.
        case read(after: Int64, through: Int64)
    }

    /// What may be published, and when.
    private(set) var order: LogOrder<Entry>
    /// Entries cleared to go, in order, not handed on yet.
    private var ready: Deque<(entries: [Entry], through: Int64)> = []
    /// The read `order` asked for and the carrier has not started.
    private var read: (after: Int64, through: Int64)?
    /// The last seq the consumers have taken.
    private(set) var delivered: Int64
    /// Who waits for a seq to be delivered.
    private var waiters: [(seq: Int64, waiter: Waiter)] = []
    /// Whether a carrier is carrying out the work.
    private(set) var carrying = false

    /// Starts after `seq`: older entries are history, not news.
    init(after seq: Int64) {
        order = LogOrder(after: seq)
        delivered = seq
    }

    /// The waiters not resumed yet.
    var waiting: Int { waiters.count }

    /// This node is about to commit `seqs`.
    mutating func reserve(_ seqs: ClosedRange<Int64>) {
        order.reserve(seqs)
    }

    /// This node committed `seqs` (`entries` are their entries); each of `waiters` resumes once its seq was
    /// delivered (at once if it was).
    mutating func commit(
        _ seqs: ClosedRange<Int64>, entries: [(seq: Int64, entry: Entry)], waiters: [(seq: Int64, waiter: Waiter)] = []
    ) -> [Action] {
        step(waiters: waiters) { $0.commit(seqs, entries: entries) }
    }

    /// This node's reservation of `seqs` rolled back.
    mutating func fail(_ seqs: ClosedRange<Int64>) -> [Action] {
        step { $0.fail(seqs) }
    }

    /// Everything up to `seq` is committed.
    mutating func notified(through seq: Int64) -> [Action] {
        step { $0.notified(through: seq) }
    }

    /// `waiter` resumes once `seq` was delivered (at once if it was).
    mutating func whenDelivered(_ seq: Int64, _ waiter: Waiter) -> [Action] {
        step(waiters: [(seq, waiter)]) { _ in [] }
    }

    /// The carrier's read of `after < seq <= through` answered `entries`.
    mutating func read(after: Int64, through: Int64, entries: [(seq: Int64, entry: Entry)]) -> [Action] {
        step { $0.read(after: after, through: through, entries: entries) }
    }

    /// The carrier's read of `after < seq <= through` failed (the carrier waited before it says so): it is due again.
    mutating func readFailed(after: Int64, through: Int64) -> [Action] {
        step { $0.readFailed(after: after, through: through) }
    }

    /// The carrier's next work: deliveries first, in order, then the read; nil when there is none, and then the
    /// carrier's turn has ended (the next input that clears work starts another).
    mutating func next() -> Work? {
        if let batch = ready.popFirst() { return .deliver(batch.entries, through: batch.through) }
        if let read {
            self.read = nil
            return .read(after: read.after, through: read.through)
        }
        carrying = false
        return nil
    }

    /// The consumers took everything up to `through`: whoever waits for it resumes.
    mutating func delivered(through: Int64) -> [Action] {
        delivered = max(delivered, through)
        let due = waiters.filter { $0.seq <= delivered }.map(\.waiter)
        waiters.removeAll { $0.seq <= delivered }
        return due.isEmpty ? [] : [.resume(due)]
    }

    /// Takes `waiters` (resuming those already delivered), gives `input` to the order, keeps what it clears, and
    /// starts a carrier if there is work and none carries.
    private mutating func step(
        waiters: [(seq: Int64, waiter: Waiter)] = [], _ input: (inout LogOrder<Entry>) -> [LogOrder<Entry>.Action]
    ) -> [Action] {
        var now: [Waiter] = []
        for waiter in waiters {
            if waiter.seq <= delivered { now.append(waiter.waiter) } else { self.waiters.append(waiter) }
        }
        var actions: [Action] = now.isEmpty ? [] : [.resume(now)]
        let cleared = input(&order)
        guard !cleared.isEmpty else { return actions }
        for action in cleared {
            switch action {
            case .publish(let batch, let through): ready.append((batch.map(\.entry), through))
            case .read(let after, let through): read = (after, through)
            }
        }
        guard !carrying else { return actions }
        carrying = true
        actions.append(.carry)
        return actions
    }
}

extension LogCarriage: Sendable where Entry: Sendable, Waiter: Sendable {}
extension LogCarriage.Action: Sendable where Entry: Sendable, Waiter: Sendable {}
extension LogCarriage.Work: Sendable where Entry: Sendable {}
