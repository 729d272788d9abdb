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
    package func delivery(of seq: Int64) async {
        await withCheckedContinuation { continuation in
            whenDelivered(seq) { continuation.resume() }
        }
    }

    /// Runs one transaction that appends entries (`body`), and tells the sink its part: the seqs `body` reserves
    /// before its commit (``Reservation/reserve(_:)``), released if it throws. The caller tells
    /// ``committed(_:entries:waiters:)`` with what it returns, once it knows who waits.
    ///
    /// `body` may throw while the transaction it started still runs: PostgreSQL's bound (``BoundedPostgres``)
    /// answers its caller at the limit, and the use goes on until it reaches a point that answers cancellation.
    /// The reservation ends here either way, so a `reserve` that comes after it is refused (the transaction rolls
    /// back) and one that was under way is released by its own caller: no seq stays reserved for a transaction
    /// nobody will report, which would hold back every later entry, and every post waiting for one, for ever.
    package func appending<T>(
        _ body: (Reservation) async throws -> T
    ) async throws -> (result: T, reserved: ClosedRange<Int64>?) {
        let reservation = Reservation(sink: self)
        do {
            let result = try await body(reservation)
            return (result, reservation.end())
        } catch {
            if let seqs = reservation.end() { failed(seqs) }
            throw error
        }
    }
}

/// The seqs one appending transaction reserved (``CommitSink/appending(_:)``).
///
/// It ends when ``CommitSink/appending(_:)`` does, even when the transaction still runs (its caller stopped
/// waiting at the database's bound): from then on it reserves nothing.
package final class Reservation: Sendable {
    private enum State {
        /// Nothing reserved yet.
        case open
        /// The sink is being told of these seqs.
        case reserving(ClosedRange<Int64>)
        /// The sink holds these seqs back.
        case reserved(ClosedRange<Int64>)
        /// The transaction's caller ended it while the sink was being told: the one telling releases them.
        case abandoned
        /// Ended: the caller has what was reserved, and nothing more is.
        case ended
    }

    private let sink: any CommitSink
    private let state = NIOLockedValueBox(State.open)

    fileprivate init(sink: any CommitSink) {
        self.sink = sink
    }

    /// Tells the sink that the transaction is about to commit `seqs` (once per transaction).
    ///
    /// - Throws: ``Ended`` when the transaction's caller has stopped waiting for it: the transaction must not commit
    ///   (thrown inside it, it rolls back), since nobody would tell the sink that it did.
    package func reserve(_ seqs: ClosedRange<Int64>) throws {
        let open = state.withLockedValue { state -> Bool in
            guard case .open = state else { return false }
            state = .reserving(seqs)
            return true
        }
        guard open else { throw Ended() }
        // Not under the lock: the sink is someone else's code.
        sink.reserve(seqs)
        let abandoned = state.withLockedValue { state -> Bool in
            guard case .reserving = state else { return true }
            state = .reserved(seqs)
            return false
        }
        if abandoned {
            sink.failed(seqs)
            throw Ended()
        }
    }

    /// Ends the reservation: the seqs reserved, which the caller reports (committed or failed); nil when none were,
    /// or when a `reserve` under way releases them itself.
    fileprivate func end() -> ClosedRange<Int64>? {
        state.withLockedValue { state -> ClosedRange<Int64>? in
            switch state {
            case .reserved(let seqs):
                state = .ended
                return seqs
            case .reserving:
                state = .abandoned
                return nil
            case .open:
                state = .ended
                return nil
            case .abandoned, .ended:
                return nil
            }
        }
    }

    /// The transaction's caller stopped waiting for it (it failed at the database's bound): it reserves nothing now.
    package struct Ended: Error, CustomStringConvertible {
        package var description: String { "the transaction outlived its caller and was rolled back" }
    }
}

/// Where a store's commits go: the sink the application attached (its event log), or, until it did (a store used
/// alone, the migrations), nowhere: whoever waits for a seq resumes at once.
package final class CommitTarget: CommitSink {
    private let sink = NIOLockedValueBox<(any CommitSink)?>(nil)

    package init() {}

    /// From now on, commits go to `sink`.
    package func attach(_ sink: any CommitSink) {
        self.sink.withLockedValue { $0 = sink }
    }

    private var current: (any CommitSink)? { sink.withLockedValue { $0 } }

    package func reserve(_ seqs: ClosedRange<Int64>) {
        current?.reserve(seqs)
    }

    package func committed(_ seqs: ClosedRange<Int64>, entries: [IncomingMessage], waiters: [LogWaiter]) {
        if let current {
            current.committed(seqs, entries: entries, waiters: waiters)
        } else {
            for waiter in waiters { waiter.resume() }
        }
    }

    package func failed(_ seqs: ClosedRange<Int64>) {
        current?.failed(seqs)
    }

    package func notified(through seq: Int64) {
        current?.notified(through: seq)
    }

    package func whenDelivered(_ seq: Int64, _ resume: @escaping @Sendable () -> Void) {
        if let current { current.whenDelivered(seq, resume) } else { resume() }
    }
}
