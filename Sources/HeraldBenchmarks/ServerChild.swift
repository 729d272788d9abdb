import Foundation
import HeraldServer

#if canImport(Glibc)
import Glibc
#endif

/// What the kernel counts for one process: the CPU time it used and the memory it holds. Read from `/proc`, so the
/// same figures for Herald and for any peer it is compared with.
public struct ProcessUsage: Sendable {
    /// The process id.
    public let pid: Int32

    /// Watches process `pid`.
    public init(pid: Int32) {
        self.pid = pid
    }

    /// User plus system CPU time used so far (`/proc/PID/stat`, fields 14 and 15); nil where `/proc` is missing.
    public func cpuTime() -> Duration? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may hold spaces), from field 3 on.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        guard ticks > 0 else { return nil }
        return .nanoseconds((user + system) * 1_000_000_000 / ticks)
    }

    /// Resident memory in bytes (`VmRSS` of `/proc/PID/status`); nil where `/proc` is missing.
    public func residentBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return kilobytes.map { $0 * 1024 }
        }
        return nil
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

    /// Starts `herald serve` (this executable) with `database` and waits up to 30 s until it says where it listens.
    /// Posts are not rate-limited (the benchmark posts faster than people do); logs are errors only.
    init(database: String, environment extra: [String: String] = [:]) async throws {
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        secret = bytes.map { String(format: "%02x", $0) }.joined()
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_JWT_SECRET"] = secret
        environment["HERALD_LIMIT_POSTS_PER_SECOND"] = "1000000"
        environment["HERALD_LIMIT_POST_BURST"] = "1000000"
        environment["HERALD_LIMIT_CONVERSATIONS_PER_HOUR"] = "1000000"
        environment["LOG_LEVEL"] = "error"
        environment.merge(extra) { $1 }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--database", database]
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
                try await Task.sleep(for: .seconds(30))
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
            throw BenchmarkError("the server did not start: \(line.isEmpty ? "no output in 30 s" : line)")
        }
        self.port = port
        var components = URLComponents()
        components.scheme = "http"
        components.host = "127.0.0.1"
        components.port = port
        guard let url = components.url else { throw BenchmarkError("no URL for port \(port)") }
        self.url = url
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
