import AsyncHTTPClient
import Foundation
import HeraldServer
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// What the kernel counts for a process, or for several taken together (the nodes of a cluster): the CPU time they
/// used and the memory they hold. Read from `/proc`, so the same figures for Herald and for any peer it is compared
/// with.
public struct ProcessUsage: Sendable {
    /// The process ids.
    public let pids: [Int32]

    /// Watches process `pid`.
    public init(pid: Int32) {
        pids = [pid]
    }

    /// Watches processes `pids`, their figures added up.
    public init(pids: [Int32]) {
        self.pids = pids
    }

    /// User plus system CPU time used so far (`/proc/PID/stat`, fields 14 and 15); nil where `/proc` is missing.
    public func cpuTime() -> Duration? {
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        guard ticks > 0 else { return nil }
        var total = Duration.zero
        for pid in pids {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let end = stat.lastIndex(of: ")")
            else { return nil }
            // Fields after the command name (which may hold spaces), from field 3 on.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
            total += .nanoseconds((user + system) * 1_000_000_000 / ticks)
        }
        return total
    }

    /// Resident memory in bytes (`VmRSS` of `/proc/PID/status`); nil where `/proc` is missing.
    public func residentBytes() -> Int? {
        var total = 0
        for pid in pids {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                  let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
            else { return nil }
            total += kilobytes * 1024
        }
        return total
    }
}

/// `herald serve` in a child process, on a free port, for the length of a benchmark: measured from outside, as a
/// peer server is, so its CPU and memory are the server's alone and not the benchmark clients'.
final class ServerChild: Sendable {
    /// The port it listens on.
    let port: Int
    /// Its HTTP address.
    let url: URL
    /// The secret its tokens are signed with.
    let secret: String
    /// Its CPU and memory.
    let usage: ProcessUsage
    private let process: Process

    /// Starts `herald serve` (the `herald` built beside this executable: ``heraldExecutable``) with `database` and waits
    /// up to `startLimit` until it says where it listens.
    /// Posts, streams opened and frames are not rate-limited (the benchmark goes faster than people do) unless
    /// `environment` sets them; logs are errors only. Its tokens are signed with `secret` (nodes of one cluster
    /// share one), a new random one without it. With a `launcher` (a program and its arguments, such as
    /// `valgrind --tool=callgrind`), the server runs under it, as the same process; `executable` is another `herald`
    /// to run.
    init(
        database: String, secret: String = ServerChild.randomSecret(), environment extra: [String: String] = [:],
        launcher: [String] = [], startLimit: Duration = .seconds(30), executable: URL? = nil
    ) async throws {
        self.secret = secret
        var environment = ProcessInfo.processInfo.environment
        // The database is what the benchmark says, never one the caller's environment names.
        environment["HERALD_POSTGRES_URL"] = nil
        environment["HERALD_JWT_SECRET"] = secret
        environment["HERALD_LIMIT_POSTS_PER_SECOND"] = "1000000"
        environment["HERALD_LIMIT_POST_BURST"] = "1000000"
        environment["HERALD_LIMIT_CONVERSATIONS_PER_HOUR"] = "1000000"
        environment["HERALD_LIMIT_STREAM_OPENS_PER_MINUTE"] = "1000000"
        environment["HERALD_LIMIT_STREAM_FRAMES_PER_SECOND"] = "1000000"
        environment["HERALD_LIMIT_STREAM_FRAME_BURST"] = "1000000"
        environment["LOG_LEVEL"] = "error"
        environment.merge(extra) { $1 }

        let process = Process()
        let herald = try executable ?? ServerChild.heraldExecutable()
        let arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--database", database]
        if let program = launcher.first {
            process.executableURL = try ServerChild.program(program)
            process.arguments = launcher.dropFirst() + [herald.path] + arguments
        } else {
            process.executableURL = herald
            process.arguments = arguments
        }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        self.process = process
        usage = ProcessUsage(pid: process.processIdentifier)

        let handle = output.fileHandleForReading
        let line = try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    Thread.detachNewThread {
                        var text = ""
                        while !text.contains("\n") {
                            let data = handle.availableData
                            if data.isEmpty { break }
                            text += String(decoding: data, as: UTF8.self)
                        }
                        continuation.resume(returning: text)
                        // Keep reading so the server never blocks on a full pipe.
                        while !handle.availableData.isEmpty {}
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: startLimit)
                return ""
            }
            let first = try await group.next() ?? ""
            group.cancelAll()
            return first
        }
        guard let range = line.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(line[range].split(separator: ":").last ?? "")
        else {
            process.terminate()
            let why = !line.isEmpty ? line
                : process.isRunning ? "no output in \(startLimit)" : "it exited with status \(process.terminationStatus)"
            throw BenchmarkError("the server did not start: \(why)")
        }
        self.port = port
        var components = URLComponents()
        components.scheme = "http"
        components.host = "127.0.0.1"
        components.port = port
        guard let url = components.url else { throw BenchmarkError("no URL for port \(port)") }
        self.url = url
    }

    /// The `herald` in the folder of the running executable (`swift build` puts `herald-bench` and `herald` side by
    /// side).
    static func heraldExecutable() throws -> URL {
        let folder = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        let herald = folder.appendingPathComponent("herald")
        guard FileManager.default.isExecutableFile(atPath: herald.path) else {
            throw BenchmarkError("no herald beside herald-bench in \(folder.path): build both (swift build -c release)")
        }
        return herald
    }

    /// `name` as found on `PATH`, or as given when it holds a `/`.
    static func program(_ name: String) throws -> URL {
        if name.contains("/") { return URL(fileURLWithPath: name) }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw BenchmarkError("\(name) is not on PATH")
    }

    /// Its process id (under a launcher such as valgrind, the same process).
    var pid: Int32 { process.processIdentifier }

    /// 32 random bytes in hex.
    static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Its heap in use, by the allocator's own count (`herald_heap_bytes_in_use` from its `/metrics`); nil where the
    /// platform does not tell.
    func heapBytes() async -> Int? {
        guard let response = try? await HTTPClient.shared.get(url: url.appendingPathComponent("metrics").absoluteString).get(),
              let body = response.body else { return nil }
        let text = String(buffer: body)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("herald_heap_bytes_in_use ") }),
              let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { return nil }
        return Int(value)
    }

    /// Stops it with SIGTERM and waits (up to 10 s, then SIGKILL) until it is gone.
    func stop() async {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<200 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
