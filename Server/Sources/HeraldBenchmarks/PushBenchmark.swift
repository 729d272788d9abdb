import Foundation
import HeraldCore
import HeraldRecords
import HeraldServer
import Hummingbird
import JWTKit
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// A message to a group whose members are all away, each with two phones: how long it takes from the post to a job
/// queued for every phone (commit, the log, the push decision; polled every millisecond), and how fast the outbox then sends them to a local fake APNs.
/// Then the delivery trail's cost: on a second server whose pushes are only logged (a `--demo` server's provider,
/// so no push service's HTTP drowns it), messages in pairs, the trail on for one and off for the other
/// (`HERALD_TRAIL_HOURS=0`), and the process's CPU time from post to last push counted for each.
///
/// Everything runs in this process: the store on a temporary SQLite file (as in production), the dispatcher with
/// the real APNs provider (ES256 provider token, the same requests), and the fake on a free loopback port over
/// plain HTTP/1.1 (the real APNs takes HTTP/2 over TLS; the fake measures Herald's side, not the network's).
public enum PushBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Members of the group who get the pushes (the sender is one more).
        public var members = 1_000
        /// Phones each member has.
        public var devicesPerMember = 2
        /// Messages posted, one after another, each sent in full before the next.
        public var messages = 5
        /// Pairs of messages for the trail's cost, the trail on for one and off for the other.
        public var trailPairs = 10
        /// Pushes sent at once.
        public var concurrency = 32

        /// The issue's shape: 1,000 members with 2 devices each.
        public init() {}
    }

    /// What a run measured.
    public struct Report: Sendable {
        /// The shape.
        public var options: Options
        /// The time from the post to its jobs all queued, per message.
        public var decide: [Duration]
        /// Jobs queued for each message.
        public var jobs: Int
        /// The time from queueing to the fake's answer to the last push, per message.
        public var send: [Duration]
        /// The time the APNs provider alone (no outbox: no lease, no outcome written) takes to send as many pushes
        /// at the same concurrency, per message: the peer that shows what the outbox costs.
        public var direct: [Duration]
        /// The process's CPU time from post to last push logged (the store and the server: the pushes are only
        /// logged), per message with the delivery trail on.
        public var cpuTrailOn: [Duration] = []
        /// The same with the trail off.
        public var cpuTrailOff: [Duration] = []

        /// The report, for a terminal.
        public var text: String {
            func ms(_ duration: Duration) -> String { String(format: "%.2f ms", duration.seconds * 1000) }
            let decided = decide.sorted(), sent = send.sorted(), alone = direct.sorted()
            let medianDecide = decided[decided.count / 2], medianSend = sent[sent.count / 2]
            let medianDirect = alone[alone.count / 2]
            let cpuOn = cpuTrailOn.reduce(.zero, +).seconds / Double(max(1, cpuTrailOn.count * jobs))
            let cpuOff = cpuTrailOff.reduce(.zero, +).seconds / Double(max(1, cpuTrailOff.count * jobs))
            return """
                push: a message to \(options.members) members, all away, \(options.devicesPerMember) phones each \
                (\(jobs) jobs a message), \(options.messages) messages, \(options.concurrency) pushes at once to a local fake APNs
                  post to queued:   median \(ms(medianDecide)), min \(ms(decided.first!)), max \(ms(decided.last!)) \
                (\(Int(Double(jobs) / medianDecide.seconds)) jobs queued a second)
                  send all:         median \(ms(medianSend)), min \(ms(sent.first!)), max \(ms(sent.last!)) \
                (\(Int(Double(jobs) / medianSend.seconds)) pushes a second at the fake)
                  the provider alone, no outbox: median \(ms(medianDirect)) \
                (\(Int(Double(jobs) / medianDirect.seconds)) pushes a second; the outbox costs \
                \(String(format: "%.0f", (medianSend.seconds / medianDirect.seconds - 1) * 100))%)
                  the trail's cost, pushes only logged: CPU per delivery from post to push, \(cpuTrailOn.count) messages each: \
                trail on \(String(format: "%.1f", cpuOn * 1e6)) µs, off \(String(format: "%.1f", cpuOff * 1e6)) µs \
                (the trail: \(String(format: "%+.1f", (cpuOn - cpuOff) * 1e6)) µs, \(String(format: "%+.0f", (cpuOn / max(cpuOff, 1e-9) - 1) * 100))%)
                """
        }
    }

    /// Runs the benchmark.
    public static func run(_ options: Options) async throws -> Report {
        let logger = BenchmarkLogger.quiet
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await LocalAPNs.run(logger: logger) { fake, apns in
            var configuration = ServerConfiguration()
            configuration.databasePath = folder.appendingPathComponent("bench.sqlite").path
            configuration.push.concurrency = options.concurrency
            configuration.push.apns = apns
            var report = try await BenchmarkServer.run(configuration, logger: logger) { _, environment in
                try await measure(options, environment: environment, received: fake.received)
            }
            // The trail's cost, with no push service: APNs' pushes logged, as a `--demo` server does.
            var logged = ServerConfiguration()
            logged.databasePath = folder.appendingPathComponent("trail.sqlite").path
            logged.demo = true
            (report.cpuTrailOn, report.cpuTrailOff) = try await BenchmarkServer.run(logged, logger: logger) { _, environment in
                try await trailCost(options, environment: environment)
            }
            return report
        }
    }

    /// The sender and a group of `options.members` others, each with `options.devicesPerMember` phones.
    private static func group(_ options: Options, store: any Store) async throws -> (Person, ConversationRecord) {
        let sender = Person(id: "sender", displayName: "Sender")
        try await store.upsertUser(sender)
        var members: [String] = []
        for index in 0..<options.members {
            let person = Person(id: "member-\(index)", displayName: "Member \(index)")
            try await store.upsertUser(person)
            members.append(person.id)
            for phone in 0..<options.devicesPerMember {
                try await store.registerDevice(
                    DeviceRegistration(
                        id: "phone-\(phone)", userID: person.id, platform: .apns,
                        token: String(format: "%032x%032x", index, phone)),
                    limit: 100)
            }
        }
        let (everyone, _) = try await store.createConversation(kind: .group, title: "Everyone", memberIDs: [sender.id] + members)
        return (sender, everyone)
    }

    /// The trail's cost: pairs of messages to the group, the trail on for the first and off for the second, on a
    /// server whose pushes are only logged; the process's CPU time from post to the last push finished, per message.
    private static func trailCost(
        _ options: Options, environment: ServerEnvironment
    ) async throws -> (on: [Duration], off: [Duration]) {
        let (store, dispatcher) = (environment.store, environment.push)
        let (sender, everyone) = try await group(options, store: store)
        let jobs = options.members * options.devicesPerMember
        let usage = ProcessUsage(pid: getpid())
        var on: [Duration] = [], off: [Duration] = []
        for index in 0..<(2 * options.trailPairs) {
            let trail = index % 2 == 0
            store.trailSwitch.hours = trail ? 24 : 0
            let sentBefore = dispatcher.counts.sent
            guard let cpuBefore = usage.cpuTime() else { throw BenchmarkError("no /proc: no CPU time") }
            _ = try await store.post(MessageDraft(
                id: "trail-\(index)", conversation: everyone.conversation, sender: sender,
                text: "Message \(index) to everyone", imageURL: nil))
            let deadline = ContinuousClock.now + .seconds(120)
            while dispatcher.counts.sent < sentBefore + jobs {
                guard ContinuousClock.now < deadline else { throw BenchmarkError("the pushes were not all logged in 2 minutes") }
                try await Task.sleep(for: .milliseconds(1))
            }
            guard let cpuAfter = usage.cpuTime() else { throw BenchmarkError("no /proc: no CPU time") }
            if trail { on.append(cpuAfter - cpuBefore) } else { off.append(cpuAfter - cpuBefore) }
        }
        store.trailSwitch.hours = 24
        return (on, off)
    }

    /// The posts and the direct sends, on a running server whose APNs pushes `received` counts.
    private static func measure(
        _ options: Options, environment: ServerEnvironment, received: NIOLockedValueBox<Int>
    ) async throws -> Report {
            let (store, dispatcher) = (environment.store, environment.push)
            let (sender, everyone) = try await group(options, store: store)
            var decide: [Duration] = [], send: [Duration] = []
            let jobs = options.members * options.devicesPerMember
            for index in 0..<options.messages {
                let draft = MessageDraft(
                    id: "bench-\(index)", conversation: everyone.conversation, sender: sender,
                    text: "Message \(index) to everyone", imageURL: nil)
                let (queuedBefore, before) = (dispatcher.counts.queued, received.withLockedValue { $0 })
                let clock = ContinuousClock()
                let start = clock.now
                // The post commits and returns once the log handed the message on; the decider, a consumer of the
                // log, then decides and queues a job for every phone.
                _ = try await store.post(draft)
                var deadline = start + .seconds(120)
                while dispatcher.counts.queued < queuedBefore + jobs {
                    guard clock.now < deadline else { throw BenchmarkError("the jobs were not all queued in 2 minutes") }
                    try await Task.sleep(for: .milliseconds(1))
                }
                let queued = clock.now
                decide.append(queued - start)
                deadline = queued + .seconds(120)
                while received.withLockedValue({ $0 }) < before + jobs {
                    guard clock.now < deadline else { throw BenchmarkError("the pushes were not all sent in 2 minutes") }
                    try await Task.sleep(for: .milliseconds(1))
                }
                send.append(clock.now - queued)
            }
            // The same pushes through the provider alone, as many at once, with nothing written.
            guard let provider = dispatcher.providers[.apns] else { throw BenchmarkError("no APNs provider") }
            var direct: [Duration] = []
            let sample = PushJob(
                id: 0, kind: .alert, device: DeviceRegistration(id: "phone-0", userID: "member-0", platform: .apns, token: ""),
                content: PushContent(
                    alert: IncomingMessage(
                        message: Message(id: "direct", conversationID: everyone.conversation.id, senderID: sender.id,
                                         text: "Direct", sentAt: Date(), seq: 1),
                        conversation: everyone.conversation, sender: sender),
                    badge: 1),
                createdAt: Date(), attempts: 0)
            for _ in 0..<options.messages {
                let clock = ContinuousClock()
                let start = clock.now
                let concurrency = options.concurrency
                try await withThrowingTaskGroup(of: Void.self) { sends in
                    for index in 0..<jobs {
                        if index >= concurrency { try await sends.next() }
                        var job = sample
                        job.device.token = String(format: "%032x%032x", index / options.devicesPerMember, index % options.devicesPerMember)
                        sends.addTask {
                            guard case .sent = await provider.send(job) else { throw BenchmarkError("a direct push failed") }
                        }
                    }
                    try await sends.waitForAll()
                }
                direct.append(clock.now - start)
            }
            return Report(options: options, decide: decide, jobs: jobs, send: send, direct: direct)
    }
}
