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

/// Runs `herald` with `arguments`, feeding `input` on standard input.
public func runHerald(_ arguments: [String], input: String) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = heraldExecutable
    process.arguments = arguments
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}


/// `herald serve` as a child process.
public final class ServerProcess: @unchecked Sendable {
    let process = Process()
    /// The port it listens on.
    public let port: Int

    /// Starts the server on a free port with `database`, and waits until it listens. Without `secret`, the server
    /// keeps its own beside the database.
    public init(database: String, secret: String? = nil, demo: Bool = false) throws {
        process.executableURL = heraldExecutable
        process.arguments = ["serve", "--port", "0", "--database", database] + (demo ? ["--demo"] : [])
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_JWT_SECRET"] = secret
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while !text.contains("\n"), Date() < deadline {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let range = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(text[range].split(separator: ":").last ?? "")
        else {
            process.terminate()
            throw ProcessFailure("the server did not say where it listens: \(text)")
        }
        self.port = port
    }

    /// SIGKILL: no shutdown, no flush.
    public func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM, and wait for the graceful exit.
    public func terminate() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
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
