import Foundation

/// A value behind a lock, for state a client shares across tasks and threads. Foundation's `NSLock`: the clients
/// depend on nothing else for it.
public final class LockedState<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, alone; what it returns.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
