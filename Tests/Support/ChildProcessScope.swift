import Foundation
import Testing

/// The processes a test starts end with it, on every path: a suite that starts processes carries this trait
/// (`@Suite(.childProcesses)`), and when each of its tests ends (passed, failed, threw, or past its time limit) every
/// child it started that is still running gets SIGTERM and is waited for; one that has not ended within
/// ``ChildProcessScope/grace`` is killed and named in an issue, with the end of its log.
///
/// A ``ChildProcess`` started outside such a test is an issue of its own: a process nothing waits for outlives its
/// test, and on a busy machine one that spins starves every suite after it.
public struct ChildProcessScope: SuiteTrait, TestTrait, TestScoping {
    /// How long a child has to end after SIGTERM: a server's own shutdown bound (10 s, then 5 s of cancellation) and
    /// room for a loaded machine.
    public static let grace = Duration.seconds(30)

    @TaskLocal static var current: Children?

    public var isRecursive: Bool { true }

    public init() {}

    /// A scope for each test case; none for the suite itself.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let children = Children()
        let outcome: Result<Void, any Error>
        do {
            try await Self.$current.withValue(children) { try await function() }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await children.endAll()
        try outcome.get()
    }

    /// Puts `child` in the running test's scope, or records that there is none.
    static func adopt(_ child: ChildProcess) {
        guard let children = current else {
            Issue.record("\(child.commandLine) was started outside a test with the .childProcesses trait: nothing would stop it")
            return
        }
        children.add(child)
    }

    /// The children of one test case.
    final class Children: @unchecked Sendable {
        private let lock = NSLock()
        private var children: [ChildProcess] = []

        func add(_ child: ChildProcess) {
            lock.withLock { children.append(child) }
        }

        /// SIGTERM to every child still running (and SIGCONT, for one a test left stopped), then a bounded wait for
        /// each; SIGKILL and an issue for one that outstays it.
        func endAll() async {
            let running = lock.withLock { children.filter(\.isRunning) }
            for child in running {
                child.signal(SIGTERM)
                child.signal(SIGCONT)
            }
            for child in running where !(await child.ended(within: ChildProcessScope.grace)) {
                child.signal(SIGKILL)
                _ = await child.ended(within: .seconds(10))
                Issue.record("""
                    \(child.commandLine) (pid \(child.pid)) did not end within \(ChildProcessScope.grace) of SIGTERM \
                    and was killed; the end of its log:
                    \(child.logTail())
                    """)
            }
            for child in lock.withLock({ children }) where child.removesErrorFile {
                if let log = child.errorFile { try? FileManager.default.removeItem(at: log) }
            }
        }
    }
}

extension Trait where Self == ChildProcessScope {
    /// The processes each test starts end with it: see ``ChildProcessScope``.
    public static var childProcesses: Self { ChildProcessScope() }
}
