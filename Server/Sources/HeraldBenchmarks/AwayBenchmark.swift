import Foundation
import HeraldClient
import HeraldCore
import HeraldNIOTransport
import HeraldServer
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers

/// How soon a phone in the background hears of a message, for each thing an app can do with its stream there: what
/// `LiveNotifications`' default (``LiveNotifications/BackgroundStream``) is decided from.
///
/// Bob's phone is registered for APNs (a local fake) and in the background; Alice writes to him, one message after
/// another:
/// - **closed**: `LiveNotifications` closed the stream when the app went to the background (the default): the time
///   from the post to the push at the fake;
/// - **kept, suspended**: the stream stays open and the app is suspended, as iOS does within seconds of the
///   background (a socket that reads and confirms nothing): the time to the push, which waits for the confirmation
///   that never comes;
/// - **kept, running**: the stream stays open and the app runs (in the seconds before the system suspends it, or on
///   Android for longer): the time to the app's own notification (`local`, after its half-second hold for a
///   `pushed`), and the pushes sent (none: it confirmed).
public enum AwayBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Messages for each way.
        public var messages = 3
        /// The server's `HERALD_CONFIRM_WITHIN`.
        public var grace: Duration = .seconds(5)

        /// Three messages each, the server's default grace period.
        public init() {}
    }

    /// What a run measured.
    public struct Report: Sendable {
        /// The shape.
        public var options: Options
        /// Post to push, the stream closed.
        public var closed: [Duration]
        /// Post to push, the stream open and nobody reading it.
        public var suspended: [Duration]
        /// Post to the app's own notification, the stream open and the app running.
        public var running: [Duration]
        /// Pushes sent while the app ran with its stream open.
        public var runningPushes: Int

        /// The report, for a terminal.
        public var text: String {
            func figures(_ durations: [Duration]) -> String {
                let sorted = durations.sorted()
                return String(format: "median %.0f ms, max %.0f ms",
                              sorted[sorted.count / 2].seconds * 1000, sorted[sorted.count - 1].seconds * 1000)
            }
            return """
                away: a phone in the background, \(options.messages) messages each way, \
                HERALD_CONFIRM_WITHIN=\(String(format: "%g", options.grace.seconds)) s, a local fake APNs
                  stream closed in the background (the default): the push after \(figures(closed))
                  stream kept, app suspended (nothing confirmed): the push after \(figures(suspended))
                  stream kept, app running: its own notification after \(figures(running)) \
                (its \(String(format: "%g", LiveNotifications<ContinuousClock>.localHold.seconds)) s hold included), \
                \(runningPushes) pushes
                """
        }
    }

    /// Runs the benchmark.
    public static func run(_ options: Options) async throws -> Report {
        let logger = BenchmarkLogger.quiet
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await LocalAPNs.run(noting: true, logger: logger) { fake, apns in
            var configuration = ServerConfiguration()
            configuration.databasePath = folder.appendingPathComponent("bench.sqlite").path
            configuration.push.apns = apns
            configuration.push.confirmWithin = options.grace
            return try await BenchmarkServer.run(configuration, logger: logger) { port, environment in
                try await measure(options, port: port, environment: environment, fake: fake)
            }
        }
    }

    private static func measure(
        _ options: Options, port: Int, environment: ServerEnvironment, fake: LocalAPNs
    ) async throws -> Report {
        let server = URL(string: "http://127.0.0.1:\(port)")!
        let (alice, bob) = try await (
            environment.tokens.token(userID: "alice", name: "Alice"), environment.tokens.token(userID: "bob", name: "Bob"))
        try await SignIn.withTokens([alice, bob], at: server)
        let sender = HeraldAPI(configuration: ClientConfiguration(server: server, token: alice, transport: .nio()))
        let chat = try await sender.createConversation(kind: .direct, members: ["bob"]).id
        var phone = ClientConfiguration(server: server, token: bob, transport: .nio())
        phone.deviceID = "phone"
        try await HeraldAPI(configuration: phone).registerDevice("phone", platform: .apns, token: String(repeating: "ab", count: 32))
        let clock = ContinuousClock()
        var sequence = 0

        /// Posts a message; its id and when it was posted.
        func post() async throws -> (id: String, at: ContinuousClock.Instant) {
            sequence += 1
            let id = "away-\(sequence)"
            let at = clock.now
            try await sender.postMessage(in: chat, text: "message \(sequence)", id: id)
            return (id, at)
        }

        /// Waits (up to 60 s) for `id`'s push; the time from `posted`.
        func push(of id: String, after posted: ContinuousClock.Instant) async throws -> Duration {
            let deadline = clock.now + .seconds(60)
            while clock.now < deadline {
                if let arrived = fake.arrivals.withLockedValue({ $0[id] }) { return arrived - posted }
                try await Task.sleep(for: .milliseconds(1))
            }
            throw BenchmarkError("no push of \(id) within 60 s")
        }

        /// Waits (up to 60 s) until nothing waits in the outbox.
        func outboxEmpty() async throws {
            let deadline = clock.now + .seconds(60)
            while try await environment.store.pushJobCount() > 0 {
                guard clock.now < deadline else { throw BenchmarkError("pushes still waiting after 60 s") }
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        // Closed: LiveNotifications' default, in the background.
        var closed: [Duration] = []
        try await withLive(phone, inBackground: .close) { live, _ in
            live.setAppState(.background)
            while !environment.hub.presence(of: "bob").isEmpty { try await Task.sleep(for: .milliseconds(1)) }
            for _ in 0..<options.messages {
                let (id, posted) = try await post()
                closed.append(try await push(of: id, after: posted))
            }
        }

        // Kept, suspended: a stream that says it is in the background, then reads and confirms nothing.
        var suspended: [Duration] = []
        let url = "ws://127.0.0.1:\(port)/v1/stream?token=\(bob)&device=phone"
        let (stop, stopSink) = AsyncStream<Void>.makeStream()
        let (opened, openedSink) = AsyncStream<Void>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                _ = try await WebSocketClient.connect(url: url, logger: BenchmarkLogger.quiet) { _, outbound, _ in
                    try await outbound.write(.text(#"{"type": "app", "state": "background"}"#))
                    openedSink.yield()
                    for await _ in stop {}
                }
            }
            for await _ in opened { break }
            while environment.hub.hasForegroundConnection(userID: "bob") || environment.hub.presence(of: "bob").isEmpty {
                try await Task.sleep(for: .milliseconds(1))
            }
            for _ in 0..<options.messages {
                let (id, posted) = try await post()
                suspended.append(try await push(of: id, after: posted))
            }
            stopSink.finish()
            try await group.waitForAll()
        }

        // Kept, running: the app's own notification, and no push once it confirmed.
        var running: [Duration] = []
        let before = fake.received.withLockedValue { $0 }
        try await withLive(phone, inBackground: .keep) { live, locals in
            live.setAppState(.background)
            while environment.hub.hasForegroundConnection(userID: "bob") { try await Task.sleep(for: .milliseconds(1)) }
            for _ in 0..<options.messages {
                let (id, posted) = try await post()
                let deadline = clock.now + .seconds(60)
                while locals.withLockedValue({ $0[id] }) == nil {
                    guard clock.now < deadline else { throw BenchmarkError("no notification of \(id) within 60 s") }
                    try await Task.sleep(for: .milliseconds(1))
                }
                running.append(locals.withLockedValue { $0[id]! } - posted)
                try await outboxEmpty()
            }
        }
        let runningPushes = fake.received.withLockedValue { $0 } - before
        return Report(options: options, closed: closed, suspended: suspended, running: running, runningPushes: runningPushes)
    }

    /// Runs `body` with `LiveNotifications` for the phone, live, and when each message's `local` effect came.
    private static func withLive(
        _ configuration: ClientConfiguration, inBackground: LiveNotifications<ContinuousClock>.BackgroundStream,
        _ body: (LiveNotifications<ContinuousClock>, NIOLockedValueBox<[String: ContinuousClock.Instant]>) async throws -> Void
    ) async throws {
        let client = HeraldClient(configuration: configuration)
        let live = LiveNotifications(client: client, userID: "bob", inBackground: inBackground)
        let locals = NIOLockedValueBox<[String: ContinuousClock.Instant]>([:])
        let events = client.events()
        let effects = live.effects
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await live.run() }
            group.addTask {
                for await effect in effects {
                    if case .local(let notification) = effect {
                        let now = ContinuousClock.now
                        locals.withLockedValue { $0[notification.messageID] = now }
                    }
                }
            }
            for await event in events where event == .state(.live) { break }
            defer { group.cancelAll() }
            try await body(live, locals)
        }
    }
}
