import ArgumentParser
import Foundation
import HeraldClient
import HeraldNIOTransport

/// `herald health`: asks the server on this machine for `GET /health`, as a container's HEALTHCHECK does (the image
/// has no curl). Prints the answer's body; exits 0 on 200, 1 on anything else, with one line on standard error.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask the server on this machine whether it is healthy (GET /health): exit 0 on 200, 1 otherwise.",
        discussion: """
            Prints the answer's body. The port is --port, else HERALD_PORT, else 8080: in the container image, the \
            same setting the server listens on.
            """
    )

    @Option(help: "The server's port (default: HERALD_PORT, else 8080).")
    var port: Int?

    @Option(help: "The address to ask.")
    var host = "127.0.0.1"

    @Option(help: "Seconds to wait for the answer.")
    var timeout = 5

    func validate() throws {
        if let port, !(1...65_535).contains(port) { throw ValidationError("--port must be between 1 and 65535") }
        guard (1...300).contains(timeout) else { throw ValidationError("--timeout must be between 1 and 300 seconds") }
        _ = try resolvedPort()
    }

    func run() async throws {
        let address = "\(host.contains(":") ? "[\(host)]" : host):\(try resolvedPort())"
        guard let url = URL(string: "http://\(address)/health") else {
            throw ValidationError("--host \(host) does not make a URL")
        }
        let response: TransportResponse
        do {
            response = try await AsyncHTTPClientTransport().send(
                TransportRequest(method: .GET, url: url, timeout: .seconds(timeout)))
        } catch {
            throw Self.failure("\(url) did not answer: \(error)")
        }
        let body = String(decoding: response.body, as: UTF8.self)
        if !body.isEmpty { print(body) }
        guard response.status == 200 else { throw Self.failure("\(url) answered \(response.status), not 200") }
    }

    /// The port to ask: `--port`, else `HERALD_PORT`, else 8080.
    private func resolvedPort() throws -> Int {
        if let port { return port }
        guard let text = ProcessInfo.processInfo.environment["HERALD_PORT"], !text.isEmpty else { return 8080 }
        guard let port = Int(text), (1...65_535).contains(port) else {
            throw ValidationError("HERALD_PORT is \(text.debugDescription), not a port between 1 and 65535; give --port")
        }
        return port
    }

    /// Writes `line` on standard error; the exit status 1, to throw.
    private static func failure(_ line: String) -> ExitCode {
        Console.error("herald health: \(line)\n")
        return ExitCode.failure
    }
}
