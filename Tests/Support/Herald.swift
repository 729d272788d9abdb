import Foundation

/// The package's root folder, found from this file's path.
public let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The `herald` executable that `swift test` built beside the tests.
public let heraldExecutable: URL = {
    let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var folder = testBinary.deletingLastPathComponent()
    while folder.path != "/" {
        let candidate = folder.appendingPathComponent("herald")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        folder = folder.deletingLastPathComponent()
    }
    return packageRoot.appendingPathComponent(".build/debug/herald")
}()

// Child processes, without blocking Swift concurrency's threads.
//
// On Linux, Swift concurrency runs on as many threads as the machine has cores. A test that blocks its thread in
// `waitUntilExit()` or `readDataToEndOfFile()` holds one of them, and a few such tests at once starve everything else
// (it happened, in CI). So every wait here is asynchronous: exits arrive through `terminationHandler`, and blocking
// reads of a pipe run on a thread of their own.
//
// Two more things about Foundation's `Process` on Linux shape what follows:
// - a child inherits the blocked signals of the thread that started it, and Dispatch's threads block nearly all; a
//   tmux server started that way never notices its panes exit and ignores `kill-server`. Children are therefore
//   started with no signals blocked, as from a shell.
// - it learns that a child exited when a socket the child inherits is closed. A child that leaves a daemon behind
//   (the tmux client that starts a server) is reported only once the daemon ends too; never await such a child.

/// Runs `body` on a new thread of its own and returns its result, leaving Swift concurrency's threads free.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// A process for `executable` with `arguments`; its environment is the test's with `environment` laid over it (a nil
/// value removes the variable), and its output goes nowhere until a caller says otherwise.
public func makeProcess(_ executable: URL, _ arguments: [String], environment: [String: String?] = [:]) -> Process {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if !environment.isEmpty {
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        process.environment = merged
    }
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    return process
}

/// A started child process whose exit can be awaited.
public final class ChildProcess: Sendable {
    /// The process; started already.
    public let process: Process
    private let exit: Task<Process.TerminationReason, Never>

    /// Starts `process` (configured, not yet running).
    public init(_ process: Process) throws {
        let (exits, continuation) = AsyncStream.makeStream(of: Process.TerminationReason.self)
        process.terminationHandler = { finished in
            continuation.yield(finished.terminationReason)
            continuation.finish()
        }
        try Self.runWithNoSignalsBlocked(process)
        self.process = process
        exit = Task { await exits.first { _ in true } ?? .exit }
    }

    /// Starts `process` from this thread with no signals blocked for the moment it takes, so the child begins with
    /// none blocked either.
    private static func runWithNoSignalsBlocked(_ process: Process) throws {
        var none = sigset_t(), saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try process.run()
    }

    /// Waits for the process to exit; its exit status (or the number of the signal that ended it), and which it was.
    @discardableResult
    public func exited() async -> (status: Int32, reason: Process.TerminationReason) {
        let reason = await exit.value
        return (process.terminationStatus, reason)
    }

    /// Sends `signal` (SIGTERM by default) without waiting.
    public func signal(_ signal: Int32 = SIGTERM) {
        if process.isRunning { Foundation.kill(process.processIdentifier, signal) }
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
/// Not for a command that leaves a daemon behind: the daemon would hold its pipes, and its exit report, open for ever.
public func runProcess(
    _ executable: URL, _ arguments: [String], input: String = "", environment: [String: String?] = [:],
    timeout: Duration = .seconds(60)
) async throws -> ProcessResult {
    let process = makeProcess(executable, arguments, environment: environment)
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    let child = try ChildProcess(process)
    let watchdog = Task { [child] in
        try await Task.sleep(for: timeout)
        child.signal(SIGKILL)
    }
    defer { watchdog.cancel() }
    let writer = stdin.fileHandleForWriting
    async let written: Void = onOwnThread {
        writer.write(Data(input.utf8))
        try? writer.close()
    }
    async let out = onOwnThread { stdout.fileHandleForReading.readDataToEndOfFile() }
    async let err = onOwnThread { stderr.fileHandleForReading.readDataToEndOfFile() }
    let (_, output, errors) = await (written, out, err)
    let (status, reason) = await child.exited()
    return ProcessResult(
        status: status, reason: reason,
        stdout: String(decoding: output, as: UTF8.self), stderr: String(decoding: errors, as: UTF8.self)
    )
}

/// Runs `arguments` (the first found on the `PATH`) to its end with `posix_spawn`, its standard input empty and its
/// standard error discarded; its exit status (or the signal that ended it) and its standard output. It is killed
/// after `timeout`.
///
/// For the short commands tests start by the hundred (tmux, asked for its screen every few milliseconds):
/// Foundation's `Process.run()` on Linux (Swift 6.3.1) now and then over-reads a directory entry of `/proc/self/fd`
/// and crashes the test process (swift-corelibs-foundation pull request 5472), which the hundreds made likely.
public func spawn(_ arguments: [String], timeout: Duration = .seconds(30)) async throws -> (status: Int32, stdout: String) {
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { throw ProcessFailure("pipe failed: errno \(errno)") }
    let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addclose(&actions, readEnd)
    posix_spawn_file_actions_addclose(&actions, writeEnd)
    // The child starts with no signal blocked, whatever this thread blocks.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    let argv: [UnsafeMutablePointer<CChar>?] = (["/usr/bin/env"] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, &attributes, argv, environ)
    close(writeEnd)
    guard spawned == 0 else {
        close(readEnd)
        throw ProcessFailure("posix_spawn \(arguments.first ?? "") failed: errno \(spawned)")
    }
    let child = pid
    let watchdog = Task {
        try await Task.sleep(for: timeout)
        kill(child, SIGKILL)
    }
    defer { watchdog.cancel() }
    return await onOwnThread {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count > 0 {
                output += buffer[0..<count]
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        close(readEnd)
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED: no signal in the low seven bits; then WEXITSTATUS, else WTERMSIG.
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
        return (code, String(decoding: output, as: UTF8.self))
    }
}

/// Runs `herald` with `arguments` to its end, feeding `input` on standard input.
public func runHerald(
    _ arguments: [String], input: String = "", environment: [String: String?] = [:], timeout: Duration = .seconds(60)
) async throws -> ProcessResult {
    try await runProcess(heraldExecutable, arguments, input: input, environment: environment, timeout: timeout)
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

/// `herald serve` as a child process.
public final class ServerProcess: Sendable {
    private let child: ChildProcess
    /// The port it listens on.
    public let port: Int
    /// The first line it printed (without its newline).
    public let firstLine: String

    /// Starts the server on a free port with `database`, and waits (up to 30 s) until it says where it listens.
    /// Without `secret`, the server keeps its own beside the database. Posts, streams opened and frames are not
    /// rate-limited (tests go faster than people) unless `environment` says otherwise; its other variables are passed
    /// on too.
    /// With `descriptorLimit`, it runs under that soft and hard limit of open files (`ulimit -n`). With `errorLog`,
    /// its standard error (its log) goes to that file.
    public init(
        database: String, secret: String? = nil, demo: Bool = false, environment: [String: String?] = [:],
        descriptorLimit: Int? = nil, errorLog: URL? = nil
    ) async throws {
        let defaults: [String: String?] = [
            "HERALD_JWT_SECRET": secret, "HERALD_LIMIT_POSTS_PER_SECOND": "1000000", "HERALD_LIMIT_POST_BURST": "1000000",
            "HERALD_LIMIT_STREAM_OPENS_PER_MINUTE": "1000000", "HERALD_LIMIT_STREAM_FRAMES_PER_SECOND": "1000000",
            "HERALD_LIMIT_STREAM_FRAME_BURST": "1000000",
        ]
        let arguments = ["serve", "--port", "0", "--database", database] + (demo ? ["--demo"] : [])
        let process = if let descriptorLimit {
            makeProcess(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", heraldExecutable.path] + arguments,
                environment: defaults.merging(environment) { $1 })
        } else {
            makeProcess(heraldExecutable, arguments, environment: defaults.merging(environment) { $1 })
        }
        let output = Pipe()
        process.standardOutput = output
        if let errorLog {
            _ = FileManager.default.createFile(atPath: errorLog.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: errorLog)
        }
        let child = try ChildProcess(process)
        self.child = child
        let watchdog = Task { [child] in
            try await Task.sleep(for: .seconds(30))
            child.signal(SIGKILL)
        }
        defer { watchdog.cancel() }
        let firstLine = await onOwnThread { HeraldTestSupport.firstLine(of: output.fileHandleForReading) }
        guard let range = firstLine.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(firstLine[range].split(separator: ":").last ?? "")
        else {
            child.signal(SIGKILL)
            throw ProcessFailure("the server did not say where it listens: \(firstLine)")
        }
        self.port = port
        self.firstLine = String(firstLine.prefix { $0 != "\n" })
    }


    /// Its resident memory now (Linux's `VmRSS`), in bytes; nil where /proc does not say.
    public var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(child.process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }

    /// SIGKILL: no shutdown, no flush; returns once it is gone.
    public func kill() async {
        child.signal(SIGKILL)
        await child.exited()
    }

    /// SIGTERM, and wait for the graceful exit; its exit status.
    public func terminate() async -> Int32 {
        stop()
        return await exited()
    }

    /// Waits for it to exit; its exit status.
    public func exited() async -> Int32 {
        await child.exited().status
    }

    /// SIGTERM without waiting, for a `defer`.
    public func stop() {
        child.signal(SIGTERM)
    }
}

/// A child process that did not do what a test needs.
public struct ProcessFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A new empty folder under the temporary directory, for one test's files; remove it when done.
public func makeTemporaryFolder(_ prefix: String) throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}
