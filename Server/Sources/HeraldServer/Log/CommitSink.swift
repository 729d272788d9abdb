import HeraldCore
import NIOConcurrencyHelpers

/// Who waits for a seq to be handed on, and what resumes them.
public typealias LogWaiter = (seq: Int64, resume: @Sendable () -> Void)

/// What storage tells of the entries it appends: the one seam from a commit to everything that follows it.
///
/// The application's ``EventLog`` is the sink; storage knows nothing of its consumers. A store tells, for each
/// transaction that appends entries, the seqs it is about to commit (where several nodes commit at once), then that
/// it committed them with their entries or that it rolled back; other nodes' commits come as a seq to read up to.
public protocol CommitSink: Sendable {
    /// An open transaction is about to commit `seqs`: nothing at or past them is handed on until it ends.
    func reserve(_ seqs: ClosedRange<Int64>)
    /// A transaction committed `seqs` with these entries. Each waiter resumes once its seq was handed on.
    func committed(_ seqs: ClosedRange<Int64>, entries: [IncomingMessage], waiters: [LogWaiter])
    /// A transaction that reserved `seqs` rolled back.
    func failed(_ seqs: ClosedRange<Int64>)
    /// Another node committed everything up to `seq`.
    func notified(through seq: Int64)
    /// Resumes `resume` once `seq` was handed on (at once if it was).
    func whenDelivered(_ seq: Int64, _ resume: @escaping @Sendable () -> Void)
}

extension CommitSink {
    /// Returns once `seq` was handed on.
    func delivery(of seq: Int64) async {
        await withCheckedContinuation { continuation in
            whenDelivered(seq) { continuation.resume() }
        }
    }

    /// Runs one transaction that appends entries (`body`), and tells the sink its part: the seqs `body` reserves
    /// before its commit (``Reservation/reserve(_:)``), released if it throws. The caller tells
    /// ``committed(_:entries:waiters:)`` with what it returns, once it knows who waits.
    func appending<T>(
        _ body: (Reservation) async throws -> T
    ) async throws -> (result: T, reserved: ClosedRange<Int64>?) {
        let reservation = Reservation(sink: self)
        do {
            let result = try await body(reservation)
            return (result, reservation.seqs)
        } catch {
            if let seqs = reservation.seqs { failed(seqs) }
            throw error
        }
    }
}

/// The seqs one appending transaction reserved (``CommitSink/appending(_:)``).
final class Reservation: Sendable {
    private let sink: any CommitSink
    private let reserved = NIOLockedValueBox<ClosedRange<Int64>?>(nil)

    fileprivate init(sink: any CommitSink) {
        self.sink = sink
    }

    /// Tells the sink that the transaction is about to commit `seqs`.
    func reserve(_ seqs: ClosedRange<Int64>) {
        sink.reserve(seqs)
        reserved.withLockedValue { $0 = seqs }
    }

    /// What was reserved, if anything.
    var seqs: ClosedRange<Int64>? { reserved.withLockedValue { $0 } }
}

/// Where a store's commits go: the sink the application attached (its event log), or, until it did (a store used
/// alone, the migrations), nowhere: whoever waits for a seq resumes at once.
final class CommitTarget: CommitSink {
    private let sink = NIOLockedValueBox<(any CommitSink)?>(nil)

    init() {}

    /// From now on, commits go to `sink`.
    func attach(_ sink: any CommitSink) {
        self.sink.withLockedValue { $0 = sink }
    }

    private var current: (any CommitSink)? { sink.withLockedValue { $0 } }

    func reserve(_ seqs: ClosedRange<Int64>) {
        current?.reserve(seqs)
    }

    func committed(_ seqs: ClosedRange<Int64>, entries: [IncomingMessage], waiters: [LogWaiter]) {
        if let current {
            current.committed(seqs, entries: entries, waiters: waiters)
        } else {
            for waiter in waiters { waiter.resume() }
        }
    }

    func failed(_ seqs: ClosedRange<Int64>) {
        current?.failed(seqs)
    }

    func notified(through seq: Int64) {
        current?.notified(through: seq)
    }

    func whenDelivered(_ seq: Int64, _ resume: @escaping @Sendable () -> Void) {
        if let current { current.whenDelivered(seq, resume) } else { resume() }
    }
}
