import HeraldCore

/// Work that did not finish within its time limit (``withDeadline(_:clock:_:)``).
public struct DeadlinePassed: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable code for logs and tests.
    public static let code = "deadline_passed"
    /// The limit that passed.
    public var limit: Duration

    /// The error for `limit`.
    public init(limit: Duration) {
        self.limit = limit
    }

    /// What happened, for a person.
    public var description: String { "\(Self.code): not done within \(limit)" }
}

/// The result of `operation`, or ``DeadlinePassed`` once `limit` has passed on `clock` (the operation is then
/// cancelled). The operation must end when cancelled (URLSession's requests do), since this returns only once it has;
/// an error it throws first is thrown as it is.
public func withDeadline<T: Sendable, C: Clock>(
    _ limit: Duration, clock: C, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T where C.Duration == Duration {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await clock.sleep(until: clock.now.advanced(by: limit), tolerance: nil)
            throw DeadlinePassed(limit: limit)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw DeadlinePassed(limit: limit) }
        return first
    }
}

/// ``withDeadline(_:clock:_:)`` on the continuous clock.
public func withDeadline<T: Sendable>(
    _ limit: Duration, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withDeadline(limit, clock: ContinuousClock(), operation)
}
