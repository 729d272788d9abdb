import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// `deploy/grafana-dashboard.json` draws what a server exports: every `herald_…` metric its queries name is declared
/// on the `/metrics` of a live `herald serve` (a real process: only `herald serve` makes the Prometheus registry the
/// metrics backend), and every metric docs/deploy.md's table lists has a panel.
@Suite("The Grafana dashboard and the metrics a server exports", .timeLimit(.minutes(2)), .childProcesses)
struct GrafanaDashboardTests {
    static let dashboard = packageRoot.appendingPathComponent("deploy/grafana-dashboard.json")

    @Test("every herald_ metric in the dashboard's queries is declared (# TYPE) on a live server's /metrics, a histogram's by its _bucket, _sum and _count; only those HeraldMetrics makes at their first event, with labels, are found in its source instead")
    func everyMetricExists() async throws {
        let named = try Self.dashboardMetrics()
        #expect(named.count >= 10, "the dashboard's queries name \(named.sorted())")

        // A live server, and a little traffic: a stream that catches up, and a message posted and delivered to it.
        let folder = try makeTemporaryFolder("herald-dashboard")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await ServerProcess(
            database: folder.appendingPathComponent("herald.sqlite").path, secret: TestServer.secret)
        defer { server.stop() }
        let tokens = await TokenAuthority(secret: TestServer.secret)
        let alice = try await tokens.token(userID: "alice", name: "Alice")
        let bob = try await tokens.token(userID: "bob", name: "Bob")
        #expect(try await HTTPClient.request(port: server.port, "GET", "/v1/conversations", token: bob).status == 200)
        let created = try await HTTPClient.request(
            port: server.port, "POST", "/v1/conversations", token: alice, body: #"{"kind": "direct", "members": ["bob"]}"#)
        let chat = try #require(created.field("id"), "\(created.status) \(created.text)")
        let stream = try await TestSocket.connect(url: "ws://127.0.0.1:\(server.port)/v1/stream?token=\(bob)&after=0")
        var frames = FrameReader(stream)
        _ = try await frames.untilReady()
        let posted = try await HTTPClient.request(
            port: server.port, "POST", "/v1/conversations/\(chat)/messages", token: alice, body: #"{"text": "dashboard"}"#)
        #expect(posted.status == 201, "\(posted.text)")
        var frame = try await frames.next()
        while frame.message?.text != "dashboard" { frame = try await frames.next() }

        let scrape = try await HTTPClient.request(port: server.port, "GET", "/metrics").text
        var declared: [String: String] = [:]  // name: type
        for line in scrape.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let words = line.split(separator: " ")
            if words.count == 4 { declared[String(words[2])] = String(words[3]) }
        }
        let madeAtFirstEvent = try Self.metricsMadeAtFirstEvent()
        #expect(!madeAtFirstEvent.isEmpty, "HeraldMetrics declares its labelled metrics as `label: \"herald_…\", dimensions:`")
        for name in named.sorted() {
            let histogram = ["_bucket", "_sum", "_count"].lazy.filter { name.hasSuffix($0) }
                .map { String(name.dropLast($0.count)) }
                .first { ["histogram", "summary"].contains(declared[$0]) }
            let found = declared[name] != nil || histogram != nil || madeAtFirstEvent.contains(name)
            #expect(found, "\(name) is in the dashboard but neither on /metrics nor made by HeraldMetrics at its first event")
        }
        stream.close()
        _ = try await stream.closed()
        await server.expectCleanStop()
    }

    @Test("every metric docs/deploy.md's metrics table lists has a panel in the dashboard")
    func everyDocumentedMetricDrawn() throws {
        let guide = try String(contentsOf: packageRoot.appendingPathComponent("docs/deploy.md"), encoding: .utf8)
        let documented = Set(guide.split(separator: "\n").filter { $0.hasPrefix("| `herald_") }.compactMap {
            $0.firstMatch(of: #/`(herald_[a-z0-9_]+)/#).map { String($0.output.1) }
        })
        #expect(documented.count >= 10, "docs/deploy.md's table lists \(documented.sorted())")
        let drawn = try Self.dashboardMetrics()
        for name in documented.sorted() {
            let histogram = ["_bucket", "_sum", "_count"].contains { drawn.contains(name + $0) }
            #expect(drawn.contains(name) || histogram, "\(name) is documented but the dashboard draws no panel of it")
        }
    }

    /// The `herald_…` names in the dashboard's queries: every panel target's `expr`, and the variables' queries.
    static func dashboardMetrics() throws -> Set<String> {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: dashboard))
        var queries: [String] = []
        func walk(_ value: Any, key: String?) {
            if let object = value as? [String: Any] {
                for (key, value) in object { walk(value, key: key) }
            } else if let array = value as? [Any] {
                for value in array { walk(value, key: key) }
            } else if let text = value as? String, ["expr", "query", "definition"].contains(key) {
                queries.append(text)
            }
        }
        walk(json, key: nil)
        return Set(queries.flatMap { $0.matches(of: #/herald_[a-z0-9_]+/#).map { String($0.output) } })
    }

    /// The metrics HeraldMetrics makes only when they first move, with labels (`Counter(label: "…", dimensions: …)`):
    /// a scrape shows them only after an event of theirs (a webhook's end, a push job's end).
    static func metricsMadeAtFirstEvent() throws -> Set<String> {
        let source = try String(
            contentsOf: serverPackageRoot.appendingPathComponent("Sources/HeraldServer/Metrics/HeraldMetrics.swift"),
            encoding: .utf8)
        return Set(source.matches(of: #/label: "(herald_[a-z0-9_]+)", dimensions:/#).map { String($0.output.1) })
    }
}
