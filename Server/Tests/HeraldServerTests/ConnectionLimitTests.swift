import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// At its connection limit the server answers new connections 503 `server_busy` at once and closes them, instead of
/// leaving them unanswered in the listen queue, and keeps serving the connections it has and those that come later.
@Suite("The connection limit: a clear 503 beyond it, and the server keeps serving", .timeLimit(.minutes(3)), .childProcesses)
struct ConnectionLimitTests {
    /// Header and idle timeouts far beyond the test: on a loaded machine filling the server takes long enough for the
    /// first connections to be closed as idle (freeing their places), which is not what these tests look at.
    static let patient: [String: String?] = ["HERALD_HEADER_TIMEOUT": "600", "HERALD_IDLE_TIMEOUT": "600"]

    @Test("HERALD_MAX_CONNECTIONS=10: the 11th to 15th connections get 503 server_busy; the first ten still work")
    func explicitLimit() async throws {
        let folder = try makeTemporaryFolder("herald-limit")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await ServerProcess(
            database: folder.appendingPathComponent("herald.sqlite").path, secret: TestServer.secret,
            environment: Self.patient.merging(["HERALD_MAX_CONNECTIONS": "10"]) { $1 })
        defer { server.stop() }
        try await Self.fill(port: server.port, admitted: 10, extra: 5)
        await server.expectCleanStop()
    }

    @Test("under ulimit -n 100 the limit is what the descriptors allow: turned away cleanly, never stuck, then served")
    func descriptorLimit() async throws {
        let folder = try makeTemporaryFolder("herald-fd-limit")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await ServerProcess(
            database: folder.appendingPathComponent("herald.sqlite").path, secret: TestServer.secret, environment: Self.patient,
            descriptorLimit: 100)
        defer { server.stop() }
        try await Self.fill(port: server.port, admitted: 100 - FileDescriptorLimit.reserve, extra: 20)
        await server.expectCleanStop()
    }

    @Test("herald-bench stream checks the descriptor limit first: too many clients is one clear line and exit 1, never a trap")
    func benchmarkChecksDescriptors() async throws {
        let result = try await runHeraldBench(["stream", "--clients", "100000", "--seconds", "1"], timeout: .seconds(30))
        #expect(result.reason == .exit, "it ended by itself, not by a signal")
        #expect(result.status == 1)
        #expect(result.stderr.contains("100000 clients need about"), "\(result.stderr)")
        #expect(result.stderr.contains("at most"))
    }

    /// Opens `admitted` connections (each answers a request), then `extra` more (each gets the 503 and is closed),
    /// then closes them all and checks that a new connection is served.
    private static func fill(port: Int, admitted: Int, extra: Int) async throws {
        var open: [RawConnection] = []
        for _ in 0..<admitted {
            let connection = try await RawConnection(port: port)
            try await connection.send("GET /health HTTP/1.1\r\nHost: herald\r\n\r\n")
            while !connection.text.contains("\"status\":\"ok\""), try await connection.read() {}
            #expect(connection.text.hasPrefix("HTTP/1.1 200"), "an admitted connection is served")
            connection.consume(connection.received.count)
            open.append(connection)
        }
        for _ in 0..<extra {
            let turnedAway = try await RawConnection(port: port)
            let answer = String(decoding: try await turnedAway.readToEnd(), as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer)")
            #expect(answer.contains(#""code":"server_busy""#))
            #expect(answer.contains("Retry-After: 1"))
            await turnedAway.close()
        }
        // The connections it holds keep working at the limit.
        let first = open[0]
        try await first.send("GET /health HTTP/1.1\r\nHost: herald\r\n\r\n")
        while !first.text.contains("\"status\":\"ok\""), try await first.read() {}
        #expect(first.text.hasPrefix("HTTP/1.1 200"))
        for connection in open { await connection.close() }
        // Once they are gone, newcomers are served again (the count follows closes, shortly after).
        let deadline = ContinuousClock.now + .seconds(60)
        var served = false
        while !served, ContinuousClock.now < deadline {
            let again = try await RawConnection(port: port)
            try await again.send("GET /health HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
            served = String(decoding: try await again.readToEnd(), as: UTF8.self).hasPrefix("HTTP/1.1 200")
            await again.close()
            if !served { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(served, "served again after the connections closed")
    }
}
