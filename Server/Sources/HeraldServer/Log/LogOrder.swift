/// The ordering core of the event log: which committed entries may be handed on, in `seq` order, with no gap and no
/// duplicate, whoever committed them.
///
/// A pure state machine in the style of `HeraldCore`'s `Notifier`: each input returns the ``Action``s to carry out,
/// and nothing happens otherwise. ``EventLog`` drives it. Entries come in three ways:
///
/// - **This node's commits.** A writer ``reserve(_:)``s the seqs it is about to commit (with PostgreSQL, once it holds
///   the sequence's counter); then ``commit(_:entries:)`` hands over the committed entries, or ``fail(_:)`` says the
///   transaction rolled back and the seqs were not used. Nothing at or past a reserved seq is published until its
///   reservation ends, so two writers that commit out of order are still published in order.
/// - **Other nodes' commits.** ``notified(through:)``: everything up to `seq` is committed somewhere. The entries
///   this node does not hold are read (``Action/read(after:through:)``), and ``read(after:through:entries:)`` hands
///   them back; ``readFailed(after:through:)`` makes the read due again.
/// - **A start.** ``init(after:)``: older entries are history, not news.
///
/// `Entry` is what a seq stands for (``LogEntry`` in the server; anything in the tests).
struct LogOrder<Entry> {
    /// What to do after an input.
    enum Action {
        /// Hand these entries on, in this order (ascending `seq`): with them, every seq up to `through` is
        /// published (a seq without an entry had no row).
        case publish([(seq: Int64, entry: Entry)], through: Int64)
        /// Read the committed entries with `after < seq <= through` and give them to ``read(after:through:entries:)``.
        case read(after: Int64, through: Int64)
    }

    /// The last seq handed on: every entry up to it was published (or had no row).
    private(set) var published: Int64
    /// The highest seq known to be committed.
    private(set) var committed: Int64
    /// This node's reservations still open, by their first seq.
    private var reserved: [Int64: ClosedRange<Int64>] = [:]
    /// This node's committed entries not handed on yet.
    private var own: [Int64: Entry] = [:]
    /// The read in flight, if any: at most one at a time.
    private(set) var reading: ClosedRange<Int64>?

    /// Starts after `seq`.
    init(after seq: Int64) {
        published = seq
        committed = seq
    }

    /// Whether anything is held back: an open reservation, entries waiting, or a read in flight.
    var isIdle: Bool { reserved.isEmpty && own.isEmpty && reading == nil && committed == published }

    /// This node is about to commit `seqs`.
    mutating func reserve(_ seqs: ClosedRange<Int64>) {
        reserved[seqs.lowerBound] = seqs
    }

    /// This node committed `seqs`; `entries` are their entries (a seq of the range without one had no row).
    mutating func commit(_ seqs: ClosedRange<Int64>, entries: [(seq: Int64, entry: Entry)]) -> [Action] {
        reserved[seqs.lowerBound] = nil
        for (seq, entry) in entries where seq > published {
            own[seq] = entry
        }
        committed = max(committed, seqs.upperBound)
        return advance()
    }

    /// This node's reservation of `seqs` rolled back: nothing was committed with them.
    mutating func fail(_ seqs: ClosedRange<Int64>) -> [Action] {
        reserved[seqs.lowerBound] = nil
        return advance()
    }

    /// Everything up to `seq` is committed (another node said so, or the log's last seq was read).
    mutating func notified(through seq: Int64) -> [Action] {
        committed = max(committed, seq)
        return advance()
    }

    /// The read of `after < seq <= through` answered `entries` (in any order; this node's own are taken from memory).
    mutating func read(after: Int64, through: Int64, entries: [(seq: Int64, entry: Entry)]) -> [Action] {
        guard reading == after + 1...through else { return [] }
        reading = nil
        var found: [Int64: Entry] = [:]
        for (seq, entry) in entries where seq > after && seq <= through {
            found[seq] = entry
        }
        var batch: [(seq: Int64, entry: Entry)] = []
        for seq in (after + 1)...through {
            if let entry = own.removeValue(forKey: seq) ?? found[seq] { batch.append((seq, entry)) }
        }
        published = through
        var actions: [Action] = [.publish(batch, through: through)]
        actions += advance()
        return actions
    }

    /// The read of `after < seq <= through` failed: it is due again (the driver waits before it carries it out).
    mutating func readFailed(after: Int64, through: Int64) -> [Action] {
        guard reading == after + 1...through else { return [] }
        reading = nil
        return advance()
    }

    /// Publishes what may be published: up to the highest committed seq, but before the first open reservation.
    /// Runs of this node's own entries go at once; a seq this node does not hold is read (one read at a time).
    private mutating func advance() -> [Action] {
        guard reading == nil else { return [] }
        let firstReserved = reserved.keys.min()
        let limit = firstReserved.map { min(committed, $0 - 1) } ?? committed
        var batch: [(seq: Int64, entry: Entry)] = []
        while published < limit, let entry = own.removeValue(forKey: published + 1) {
            published += 1
            batch.append((published, entry))
        }
        var actions: [Action] = batch.isEmpty ? [] : [.publish(batch, through: published)]
        if published < limit {
            // A gap: entries committed elsewhere (or seqs with no row). Read them all, up to the limit; what is this
            // node's own in that range is taken from memory when the read answers.
            reading = (published + 1)...limit
            actions.append(.read(after: published, through: limit))
        }
        return actions
    }
}

extension LogOrder: Sendable where Entry: Sendable {}
extension LogOrder.Action: Sendable where Entry: Sendable {}
