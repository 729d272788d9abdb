import Foundation
import HeraldRecords
import NIOConcurrencyHelpers

/// Writes finished jobs in batches: while one batch is being written, the jobs finishing meanwhile gather for the
/// next, so a busy outbox writes one transaction for many pushes, and an idle one writes each at once.
///
/// ``run()`` is the writer, a task of the push dispatcher's; ``finish(_:)`` waits until its job is written.
final class OutcomeWriter: Sendable {
    private struct Waiting {
        var finished: FinishedPush
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        /// Set by ``close()``: the writer writes what waits, then ends; later jobs are refused.
        var closed = false
    }

    /// Why a job was not written: the writer was closed or cancelled (the job stays leased, and goes again at the
    /// next start).
    struct Closed: Error {}

    private let store: any PushOutbox
    private let state = NIOLockedValueBox(State())
    private let signal = WakeSignal()

    init(store: any PushOutbox) {
        self.store = store
    }

    /// Records `finished`; returns once it is written.
    func finish(_ finished: FinishedPush) async throws {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = state.withLockedValue { state -> Bool in
                guard !state.closed else { return false }
                state.waiting.append(Waiting(finished: finished, continuation: continuation))
                return true
            }
            if accepted { signal.notify() } else { continuation.resume(throwing: Closed()) }
        }
    }

    /// How many times in a row a batch is written again after a failure before its senders are told (the jobs then
    /// stay leased until their lease runs out, or the next start).
    static let attempts = 10

    /// Writes what waits, batch after batch, until ``close()`` (then what is left) or cancellation (then what is
    /// left is refused). A write that fails while running (the database's bound, under load) is tried again a
    /// moment later, with whatever joined it, up to ``attempts`` times: left leased, a job would wait for its lease
    /// to run out, and a follow-up behind its alert with it.
    func run() async {
        var failures = 0
        while true {
            let (batch, closed) = state.withLockedValue { state -> ([Waiting], Bool) in
                defer { state.waiting = [] }
                return (state.waiting, state.closed)
            }
            if batch.isEmpty {
                if closed { return }
                if Task.isCancelled { break }
                await signal.wait(timeout: .seconds(60))
                continue
            }
            do {
                let finished = batch.map(\.finished)
                let write: @Sendable () async throws -> Void = { [store] in try await store.finishPushJobs(finished) }
                // Once closed (the stop), each write is bounded: the stop ends within its grace period with the
                // database gone (what is not written is sent again at the next start).
                if closed { try await withinLimit(lastWriteLimit, write) } else { try await write() }
                failures = 0
                for waiting in batch { waiting.continuation.resume() }
            } catch {
                failures += 1
                if !closed, !Task.isCancelled, failures < Self.attempts {
                    state.withLockedValue { $0.waiting = batch + $0.waiting }
                    try? await Task.sleep(for: .milliseconds(100 * failures))
                    continue
                }
                failures = 0
                for waiting in batch { waiting.continuation.resume(throwing: error) }
            }
        }
        let left = state.withLockedValue { state -> [Waiting] in
            state.closed = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiting in left { waiting.continuation.resume(throwing: Closed()) }
    }

    /// Ends ``run()`` once what waits is written.
    func close() {
        state.withLockedValue { $0.closed = true }
        signal.notify()
    }
}
