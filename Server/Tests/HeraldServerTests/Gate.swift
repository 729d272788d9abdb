import NIOConcurrencyHelpers

/// Holds whoever waits on it until it opens; once open, a wait ends at once.
final class Gate: Sendable {
    private let state = NIOLockedValueBox<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    /// Returns once the gate is open.
    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state -> Bool in
                if state.open { return true }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets every wait end, those waiting and those to come.
    func open() {
        let waiting = state.withLockedValue { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
