import Foundation
import Testing

/// The repository's root folder (the client package's), found from this file's path: the folder is compiled by both
/// packages, the server's reaching it through its link `Server/Tests/Support`.
public let packageRoot: URL = {
    let package = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let isServer = FileManager.default.fileExists(atPath: package.appendingPathComponent("../Server/Package.swift").path)
        && package.lastPathComponent == "Server"
    return isServer ? package.deletingLastPathComponent() : package
}()

/// The server package's folder.
public let serverPackageRoot = packageRoot.appendingPathComponent("Server")

/// The `herald` executable that `swift test` built beside the tests.
public let heraldExecutable: URL = {
    let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var folder = testBinary.deletingLastPathComponent()
    while folder.path != "/" {
        let candidate = folder.appendingPathComponent("herald")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        folder = folder.deletingLastPathComponent()
    }
    return serverPackageRoot.appendingPathComponent(".build/debug/herald")
}()

/// `herald serve` as a child process, stopped when its test ends (``ChildProcessScope``) if not before.
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
    /// With `descriptorLimit`, it runs under that soft and hard limit of open files (`ulimit -n`). Its standard error
    /// (its log) goes to `errorLog`, or to a file of its own that is shown when it fails to stop and removed after
    /// the test.
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
        let log = errorLog ?? FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID().uuidString).log")
        let environment = defaults.merging(environment) { $1 }
        let child = if let descriptorLimit {
            try ChildProcess(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", heraldExecutable.path] + arguments,
                environment: environment, output: .pipe, errors: .file(log), removingErrorFile: errorLog == nil)
        } else {
            try ChildProcess(
                heraldExecutable, arguments, environment: environment, output: .pipe, errors: .file(log),
                removingErrorFile: errorLog == nil)
        }
        self.child = child
        // A server that never says where it listens is killed after 30 s, which ends the read below.
        let watchdog = DispatchWorkItem { child.signal(SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: watchdog)
        defer { watchdog.cancel() }
        let output = child.output!
        let firstLine = await onOwnThread { HeraldTestSupport.firstLine(of: output) }
        guard let range = firstLine.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(firstLine[range].split(separator: ":").last ?? "")
        else {
            child.signal(SIGKILL)
            throw ProcessFailure("the server did not say where it listens: \(firstLine)\n\(child.logTail())")
        }
        self.port = port
        self.firstLine = String(firstLine.prefix { $0 != "\n" })
    }

    /// Its process id.
    public var pid: pid_t { child.pid }

    /// Whether it has not ended yet.
    public var isRunning: Bool { child.isRunning }

    /// Its resident memory now (Linux's `VmRSS`), in bytes; nil where /proc does not say.
    public var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }

    /// The processor time it has used so far (Linux's `utime` + `stime`), in seconds; nil where /proc does not say.
    public var processorSeconds: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")")
        else { return nil }
        // After the command's closing parenthesis: state is field 3, utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The last lines of its log.
    public func logTail(_ count: Int = 20) -> String { child.logTail(count) }

    /// SIGKILL: no shutdown, no flush; returns once it is gone.
    public func kill() async {
        child.signal(SIGKILL)
        await child.exited()
    }

    /// SIGTERM, and wait for the graceful exit; its exit status. One that has not ended within
    /// ``ChildProcessScope/grace`` is killed, and the status is then the signal's number.
    public func terminate() async -> Int32 {
        stop()
        return await exited()
    }

    /// Waits for it to exit, up to ``ChildProcessScope/grace`` (then it is killed, with an issue naming it); its exit
    /// status.
    public func exited() async -> Int32 {
        if !(await child.ended(within: ChildProcessScope.grace)) {
            child.signal(SIGKILL)
            Issue.record("herald serve on port \(port) did not end within \(ChildProcessScope.grace); the end of its log:\n\(child.logTail())")
        }
        return await child.exited().status
    }

    /// SIGTERM, and the expectation that it stops gracefully (exit status 0) within ``ChildProcessScope/grace``: when
    /// it does not, the test records the end of the server's log with the status, so a stop that failed on a busy
    /// machine says why.
    public func expectCleanStop(_ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) async {
        let status = await terminate()
        if status != 0 {
            Issue.record("herald serve on port \(port) exited with status \(status)\(comment.isEmpty ? "" : " (\(comment))"); the end of its log:\n\(logTail(60))",
                         sourceLocation: sourceLocation)
        }
    }

    /// SIGTERM without waiting, for a `defer`: the test's scope waits for the end.
    public func stop() {
        child.signal(SIGTERM)
    }
}

/// A new empty folder under the temporary directory, for one test's files; remove it when done.
public func makeTemporaryFolder(_ prefix: String) throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}
