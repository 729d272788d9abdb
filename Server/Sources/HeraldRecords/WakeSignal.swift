import NIOConcurrencyHelpers

/// Wakes one waiting loop: a notification that comes while nobody waits is kept for the next wait.
package final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = NIOLockedValueBox(State())

    /// A signal with no notification kept.
    package init() {}

    package func notify() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns at the next notification (or one kept since the last wait), after `timeout`, or when cancelled.
    package func wait(timeout: Duration) async {
        // A notification kept since the last wait (what a loop busy with a stream of work finds): no tasks, no timer.
        let kept = state.withLockedValue { state in
            defer { state.pending = false }
            return state.pending
        }
        if kept { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.next() }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func next() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLockedValue { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            notify()
        }
    }
}
