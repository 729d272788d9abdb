import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Child processes, started with `posix_spawn` and reaped by this file alone.
//
// Foundation's `Process` on Linux learns that a child ended through a socket the child inherits, and it asks
// `isRunning` of that bookkeeping: a child that left a daemon holding the socket is "running" after its exit, and a
// test that trusted `isRunning` to decide whether to signal once left a server it never signalled. Here a thread of
// our own waits for the child (`waitid` without reaping it, so its pid stays ours until we say), a signal goes to
// the pid for as long as the child has not been reaped, and every other descriptor of the test process is closed in
// the child: nothing a child inherits can hold another test's pipe open.
//
// Every wait is asynchronous (exits arrive from that thread), so no test blocks one of Swift concurrency's threads;
// a bounded wait uses the thread's own clock, so it holds in a task that is already cancelled (a test past its time
// limit still stops what it started).

/// Where a child's standard input, output or error goes.
public enum ChildStream: Sendable {
    /// `/dev/null`.
    case null
    /// A pipe to this process (``ChildProcess/input``, ``ChildProcess/output``, ``ChildProcess/errors``).
    case pipe
    /// A file, created (or emptied) for it.
    case file(URL)
}

/// A started child process: its exit can be awaited, with or without a bound, and it can be signalled until then.
public final class ChildProcess: @unchecked Sendable {
    /// Its process id.
    public let pid: pid_t
    /// What it runs, for messages: the program and its arguments.
    public let commandLine: String
    /// The write end of its standard input, when it is ``ChildStream/pipe``.
    public let input: FileHandle?
    /// The read end of its standard output, when it is ``ChildStream/pipe``.
    public let output: FileHandle?
    /// The read end of its standard error, when it is ``ChildStream/pipe``.
    public let errors: FileHandle?
    /// The file its standard error goes to, when it is ``ChildStream/file(_:)``: its log, for a failure's message.
    public let errorFile: URL?
    /// Whether ``errorFile`` is removed once the test that started it ended (a log kept only for failures).
    public let removesErrorFile: Bool

    private let lock = NSLock()
    /// Its wait status once it ended (it is reaped then, and its pid no longer ours).
    private var status: Int32?
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private let ended = DispatchSemaphore(value: 0)

    /// Starts `executable` with `arguments`. Its environment is this process's with `environment` laid over it (a nil
    /// value removes the variable); its standard streams go where they are told (a standard error in a file, with
    /// `removingErrorFile`, is removed after the test). Unless `scoped` is false, the child belongs to the running
    /// test's ``ChildProcessScope`` and is stopped when that test ends, whatever happened.
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String?] = [:],
        input: ChildStream = .null, output: ChildStream = .null, errors: ChildStream = .null,
        removingErrorFile: Bool = false, scoped: Bool = true
    ) throws {
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32?] = [nil, nil, nil]
        var childEnds: [Int32] = []
        defer { childEnds.forEach { close($0) } }
        for (target, stream) in [(Int32(0), input), (1, output), (2, errors)] {
            switch stream {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let url):
                posix_spawn_file_actions_addopen(&actions, target, url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .pipe:
                let (read, write) = try Self.pipe()
                let (parent, child) = target == 0 ? (write, read) : (read, write)
                posix_spawn_file_actions_adddup2(&actions, child, target)
                parentEnds[Int(target)] = parent
                childEnds.append(child)
            }
        }
        Self.closeTheRest(&actions)
        // The child starts with no signal blocked, whatever this thread blocks (Dispatch's threads block nearly all,
        // and a tmux server started with them blocked never notices its panes exit).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            parentEnds.compactMap { $0 }.forEach { close($0) }
            throw ProcessFailure("cannot start \(executable.path): \(String(cString: strerror(spawned)))")
        }
        self.pid = pid
        commandLine = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        self.input = parentEnds[0].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.output = parentEnds[1].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.errors = parentEnds[2].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        if case .file(let url) = errors { errorFile = url } else { errorFile = nil }
        removesErrorFile = removingErrorFile
        Thread.detachNewThread { [self] in awaitExit() }
        if scoped { ChildProcessScope.adopt(self) }
    }

    /// Whether it has not ended yet.
    public var isRunning: Bool { lock.withLock { status == nil } }

    /// Its exit status, or the number of the signal that ended it, and which of the two; nil while it runs.
    public var termination: (status: Int32, reason: Process.TerminationReason)? {
        lock.withLock { status.map(Self.decode) }
    }

    /// Sends `signal` (SIGTERM by default) unless it has ended; never waits.
    public func signal(_ signal: Int32 = SIGTERM) {
        // Under the lock: the pid is ours (unreaped) for as long as `status` is nil.
        lock.withLock {
            if status == nil { _ = kill(pid, signal) }
        }
    }

    /// Waits for it to end; its exit status (or the signal's number), and which it was.
    @discardableResult
    public func exited() async -> (status: Int32, reason: Process.TerminationReason) {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = lock.withLock {
                if status != nil { return true }
                waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        return termination ?? (0, .exit)
    }

    /// Waits up to `limit` for it to end; whether it did. Holds its bound in a cancelled task too.
    public func ended(within limit: Duration) async -> Bool {
        if !isRunning { return true }
        let ended = self.ended
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        guard await onOwnThread({ ended.wait(timeout: .now() + seconds) == .success }) else { return false }
        ended.signal()  // for the next one who asks
        return true
    }

    /// The last `count` lines of its log (``errorFile``), or a note that there is none.
    public func logTail(_ count: Int = 20) -> String {
        guard let errorFile, let text = try? String(contentsOf: errorFile, encoding: .utf8) else { return "(no log kept)" }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        // A crash's report is long, and its reason is at its start: that, the 30 lines before it and the first
        // thread's frames come first.
        if let crash = lines.firstIndex(where: { $0.contains("Fatal error") || $0.contains("*** Program crashed") || $0.contains("failed: file") }) {
            let start = max(lines.startIndex, crash - 30)
            let report = lines[start..<min(lines.endIndex, crash + 40)].joined(separator: "\n")
            return report + "\n[…]\n" + lines.suffix(count).joined(separator: "\n")
        }
        return lines.suffix(count).joined(separator: "\n")
    }

    /// On its own thread: waits without reaping, records the status under the lock, then reaps.
    private func awaitExit() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        var raw: Int32 = 0
        let resumed = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
            status = raw
            defer { waiters = [] }
            return waiters
        }
        ended.signal()
        resumed.forEach { $0.resume() }
    }

    /// WIFEXITED: no signal in the low seven bits; then WEXITSTATUS, else WTERMSIG.
    private static func decode(_ status: Int32) -> (status: Int32, reason: Process.TerminationReason) {
        status & 0x7F == 0 ? ((status >> 8) & 0xFF, .exit) : (status & 0x7F, .uncaughtSignal)
    }

    /// A pipe whose ends are closed in every child but the one that is given an end on purpose.
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard Foundation.pipe(&ends) == 0 else { throw ProcessFailure("pipe failed: errno \(errno)") }
        // (Another thread's spawn in between inherits nothing: each child closes every descriptor from 3 up.)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// Every descriptor from 3 up is closed in the child: glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and
    /// later; looked up at run time, as Swift's Glibc module does not export it).
    private static func closeTheRest(_ actions: inout posix_spawn_file_actions_t) {
        #if os(Linux)
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        #endif
    }
}

/// Runs `body` on a new thread of its own and returns its result, leaving Swift concurrency's threads free.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// What a finished child process printed, and how it ended.
public struct ProcessResult: Sendable {
    /// Its exit status, or the signal that ended it.
    public var status: Int32
    /// `.exit` when it exited, `.uncaughtSignal` when a signal ended it.
    public var reason: Process.TerminationReason
    /// Its standard output.
    public var stdout: String
    /// Its standard error.
    public var stderr: String
}

/// Runs `executable` with `arguments` to its end, feeding it `input`, and returns what it printed; after `timeout`
/// it is killed (SIGKILL), so a command that should have ended but did not fails its test instead of hanging it.
/// The child never outlives the call.
public func runProcess(
    _ executable: URL, _ arguments: [String], input: String = "", environment: [String: String?] = [:],
    timeout: Duration = .seconds(60)
) async throws -> ProcessResult {
    let child = try ChildProcess(
        executable, arguments, environment: environment, input: .pipe, output: .pipe, errors: .pipe, scoped: false)
    let (writer, stdout, stderr) = (child.input!, child.output!, child.errors!)
    async let written: Void = onOwnThread {
        writer.write(Data(input.utf8))
        try? writer.close()
    }
    async let out = onOwnThread { stdout.readDataToEndOfFile() }
    async let err = onOwnThread { stderr.readDataToEndOfFile() }
    if !(await child.ended(within: timeout)) {
        child.signal(SIGKILL)
    }
    let (_, output, errors) = await (written, out, err)
    let (status, reason) = await child.exited()
    return ProcessResult(
        status: status, reason: reason,
        stdout: String(decoding: output, as: UTF8.self), stderr: String(decoding: errors, as: UTF8.self)
    )
}

/// Runs `arguments` (the first found on the `PATH`) to its end, its standard input empty and its standard error
/// discarded; its exit status (or the signal that ended it) and its standard output. It is killed after `timeout`.
public func spawn(_ arguments: [String], timeout: Duration = .seconds(30)) async throws -> (status: Int32, stdout: String) {
    let child = try ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), arguments, output: .pipe, scoped: false)
    let stdout = child.output!
    async let out = onOwnThread { stdout.readDataToEndOfFile() }
    if !(await child.ended(within: timeout)) {
        child.signal(SIGKILL)
    }
    let output = await out
    return (await child.exited().status, String(decoding: output, as: UTF8.self))
}

/// Runs `herald` with `arguments` to its end, feeding `input` on standard input.
public func runHerald(
    _ arguments: [String], input: String = "", environment: [String: String?] = [:], timeout: Duration = .seconds(60)
) async throws -> ProcessResult {
    try await runProcess(heraldExecutable, arguments, input: input, environment: environment, timeout: timeout)
}

/// Runs `herald-bench` (built beside `herald`) with `arguments` to its end.
public func runHeraldBench(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> ProcessResult {
    let bench = heraldExecutable.deletingLastPathComponent().appendingPathComponent("herald-bench")
    return try await runProcess(bench, arguments, timeout: timeout)
}

/// Reads up to the first newline, then goes on reading (on a thread of its own, to the end) so the child never
/// blocks on a full pipe; the text up to the first newline, or all there was if the child ended first.
public func firstLine(of handle: FileHandle) -> String {
    var text = ""
    while !text.contains("\n") {
        let data = handle.availableData
        if data.isEmpty { return text }
        text += String(decoding: data, as: UTF8.self)
    }
    Thread.detachNewThread { while !handle.availableData.isEmpty {} }
    return text
}

/// A child process that did not do what a test needs.
public struct ProcessFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
