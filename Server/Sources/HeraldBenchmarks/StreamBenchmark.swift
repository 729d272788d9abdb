import Foundation
import HTTPTypes
import HeraldClient
import HeraldCore
import HeraldNIOTransport
import HeraldServer
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Many connected clients in group conversations, messages at a steady rate: how long from post to receipt, how
/// many deliveries a second, and what the server spends: CPU time per delivery and memory per idle connection,
/// measured from outside its process.
///
/// The same clients run against Herald (`herald serve` started as a child process, in-memory database) or against
/// Mosquitto over MQTT on WebSocket (a group is a topic, a message a QoS 0 publish that every subscriber, the sender
/// included, receives): the same fan-out, so the figures compare.
public enum StreamBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Connected clients, one user each.
        public var clients = 1_000
        /// Members of each group conversation (clients / groupSize groups).
        public var groupSize = 10
        /// Messages posted a second, spread evenly.
        public var rate = 1_000
        /// How long messages are posted.
        public var duration: Duration = .seconds(10)
        /// Whether Herald's clients confirm what they receive (`received`), as the real clients do.
        public var confirms = true
        /// Whether Herald keeps its database in a file (in a temporary folder), as deployed, rather than in memory.
        public var databaseFile = false

        /// The issue's target shape: 1,000 clients in 100 groups of 10, 1,000 messages a second, for 10 s.
        public init() {}
    }

    /// The server the clients talk to.
    public enum Target: Sendable, CustomStringConvertible {
        /// `herald serve`, started by the benchmark.
        case herald
        /// A Mosquitto broker already running with a WebSocket listener on `port`, as process `pid`.
        case mosquitto(port: Int, pid: Int32)

        public var description: String {
            switch self {
            case .herald: "herald"
            case .mosquitto: "mosquitto"
            }
        }
    }

    /// What one run measured.
    public struct Report: Sendable {
        /// The server measured.
        public var target: String
        /// The shape.
        public var options: Options
        /// Messages posted.
        public var sent: Int
        /// Message frames received by all clients.
        public var delivered: Int
        /// Deliveries expected (each message to every member's connection, the sender's included).
        public var expected: Int
        /// Post-to-receive latency percentiles.
        public var p50: Duration, p99: Duration, max: Duration
        /// Wall time from the first post to the last delivery.
        public var elapsed: Duration
        /// The server's CPU time (user and system) while messages were posted and delivered.
        public var serverCPU: Duration?
        /// This process's (the clients') CPU time over the same span: where the server is not the bottleneck, they
        /// may be.
        public var clientCPU: Duration?
        /// The server's resident memory with no client, and with every client connected and idle.
        public var residentBefore: Int?, residentConnected: Int?
        /// The file descriptors this process may open, and so the most clients it could have run.
        public var descriptors = 0, maximumClients = 0

        /// Deliveries a second.
        public var deliveriesPerSecond: Double { Double(delivered) / Swift.max(elapsed.seconds, 1e-9) }

        /// Server CPU time per delivery.
        public var cpuPerDelivery: Duration? {
            guard let serverCPU, delivered > 0 else { return nil }
            return serverCPU / delivered
        }

        /// Growth of the server's resident memory per connected idle client, in bytes.
        public var bytesPerConnection: Double? {
            guard let residentBefore, let residentConnected else { return nil }
            return Double(residentConnected - residentBefore) / Double(Swift.max(1, options.clients))
        }

        /// The report, for a terminal.
        public var text: String {
            func ms(_ duration: Duration) -> String { String(format: "%.2f ms", duration.seconds * 1000) }
            func perDelivery(_ cpu: Duration?) -> String {
                guard let cpu, delivered > 0 else { return "unknown (no /proc)" }
                return String(format: "%.1f µs", (cpu / delivered).seconds * 1e6)
            }
            let memory = bytesPerConnection.map { String(format: "%.1f KiB", $0 / 1024) } ?? "unknown (no /proc)"
            return """
                stream (\(target)): \(options.clients) clients in \(options.clients / options.groupSize) groups of \(options.groupSize), \
                \(options.rate) messages a second for \(String(format: "%.0f", options.duration.seconds)) s\
                \(target == "herald" ? (options.confirms ? ", clients confirming" : ", no confirmations") : "")\
                \(target == "herald" ? (options.databaseFile ? ", database in a file" : ", database in memory") : "")
                  sent \(sent), delivered \(delivered) of \(expected)
                  latency post to receive: p50 \(ms(p50)), p99 \(ms(p99)), max \(ms(max))
                  deliveries: \(String(format: "%.0f", deliveriesPerSecond)) a second
                  server CPU per delivery: \(perDelivery(serverCPU)) (the clients': \(perDelivery(clientCPU)))
                  server memory per idle connection: \(memory)
                  file descriptors: \(descriptors) allowed, enough for \(maximumClients) clients
                """
        }
    }

    /// How many clients a process allowed `descriptors` open files can run: each client needs one here and one in
    /// the server (which is allowed as many), and each side keeps ``FileDescriptorLimit/reserve`` for itself.
    public static func maximumClients(descriptors: Int) -> Int {
        Swift.max(0, descriptors - FileDescriptorLimit.reserve)
    }

    /// Runs the benchmark against `target`.
    ///
    /// - Throws: ``BenchmarkError``, before connecting anyone, when more clients are asked for than the process's
    ///   descriptor limit allows (raised to its hard limit first): it says how many can run.
    public static func run(_ options: Options, target: Target = .herald) async throws -> Report {
        _ = try descriptorLimit(for: options)
        let report: Report
        switch target {
        case .herald:
            let folder = options.databaseFile
                ? FileManager.default.temporaryDirectory.appendingPathComponent("herald-stream-\(UUID().uuidString)") : nil
            if let folder { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            defer { if let folder { try? FileManager.default.removeItem(at: folder) } }
            let server = try await ServerChild(database: folder?.appendingPathComponent("herald.sqlite").path ?? ":memory:")
            do {
                report = try await run(options, nodes: [server], name: "herald")
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        case .mosquitto(let port, let pid):
            let clients = (0..<options.clients).map { FanOutClient(wire: .mqtt(clientID: "c\($0)"), port: port) }
            let channels = groups(options).indices.map { "herald-bench/g\($0)" }
            report = try await measure(options, clients: clients, groups: Array(zip(channels, groups(options))),
                                       usage: ProcessUsage(pid: pid), name: "mosquitto")
        }
        return report
    }

    /// The descriptors this process may open (raised to the hard limit), and how many clients that allows.
    ///
    /// - Throws: ``BenchmarkError`` when `options` asks for more clients than that: it says how many can run.
    static func descriptorLimit(for options: Options) throws -> (descriptors: Int, clients: Int) {
        let descriptors = FileDescriptorLimit.raise()
        let most = maximumClients(descriptors: descriptors)
        guard options.clients <= most else {
            throw BenchmarkError(
                "\(options.clients) clients need about \(options.clients + FileDescriptorLimit.reserve) file "
                    + "descriptors, and this process may open \(descriptors) (ulimit -n, at its hard limit): at most "
                    + "\(most) clients here. Raise the hard limit or run fewer.")
        }
        return (descriptors, most)
    }

    /// The clients' groups: members by index, `groupSize` at a time.
    static func groups(_ options: Options) -> [[Int]] {
        let size = Swift.max(1, options.groupSize)
        return stride(from: 0, to: options.clients, by: size).map { Array($0..<Swift.min($0 + size, options.clients)) }
    }

    /// The workload against Herald nodes already running (their tokens signed with one secret): client `i`
    /// connects to node `i % nodes.count`, so a group's members are spread over the nodes; each group is created by
    /// its first member on its node. The server figures are the nodes' added up.
    static func run(_ options: Options, nodes: [ServerChild], name: String) async throws -> Report {
        let (clients, groups) = try await prepare(options, nodes: nodes)
        return try await measure(options, clients: clients, groups: groups,
                                 usage: ProcessUsage(pids: nodes.map(\.usage.pids).flatMap { $0 }), name: name)
    }

    /// The Herald clients of `options` (client `i` on node `i % nodes.count`), signed in, and their groups, each
    /// created by its first member on its node.
    static func prepare(
        _ options: Options, nodes: [ServerChild]
    ) async throws -> (clients: [FanOutClient], groups: [(channel: String, members: [Int])]) {
        guard let first = nodes.first else { throw BenchmarkError("no node to measure") }
        let tokens = await TokenAuthority(secret: first.secret)
        var clients: [FanOutClient] = []
        for index in 0..<options.clients {
            let token = try await tokens.token(userID: "user-\(index)", name: "User \(index)")
            clients.append(FanOutClient(wire: .herald(token: token), port: nodes[index % nodes.count].port, confirms: options.confirms))
        }
        try await SignIn.withTokens(clients.compactMap(\.herald), at: first.url)
        var channels: [String] = []
        let groups = groups(options)
        for members in groups {
            guard let token = clients[members[0]].herald else { throw BenchmarkError("a Herald client without a token") }
            let node = nodes[members[0] % nodes.count]
            let api = HeraldAPI(configuration: ClientConfiguration(server: node.url, token: token, transport: .nio()))
            let created = try await api.createConversation(
                kind: .group, title: "Group \(channels.count)", members: members.dropFirst().map { "user-\($0)" })
            channels.append(created.id)
        }
        return (clients, Array(zip(channels, groups)))
    }

    private static func measure(
        _ options: Options,
        clients: [FanOutClient],
        groups: [(channel: String, members: [Int])],
        usage: ProcessUsage,
        name: String
    ) async throws -> Report {
        let (descriptors, most) = try descriptorLimit(for: options)
        let logger = {
            var logger = Logger(label: "herald-bench")
            logger.logLevel = .error
            return logger
        }()
        let recorder = LatencyRecorder()
        let clock = ContinuousClock()
        let origin = clock.now
        let residentBefore = usage.residentBytes()

        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            let connections = try await FanOutClient.connectAll(clients, groups: groups, in: &tasks, logger: logger) { sentAt in
                let receivedAt = origin.duration(to: clock.now)
                recorder.record(receivedAt - .nanoseconds(sentAt), at: receivedAt)
            }
            // Idle for a moment, so the memory read is of connections at rest.
            try await clock.sleep(for: .seconds(1), tolerance: nil)
            let residentConnected = usage.residentBytes()

            let interval = Duration.seconds(1) / Swift.max(1, options.rate)
            let total = Int(options.duration.seconds * Double(options.rate))
            var generator = SystemRandomNumberGenerator()
            let clientUsage = ProcessUsage(pid: getpid())
            let cpuBefore = usage.cpuTime(), clientCPUBefore = clientUsage.cpuTime()
            let start = clock.now
            for sequence in 0..<total {
                try await clock.sleep(until: start + interval * sequence, tolerance: nil)
                let group = groups[sequence % groups.count]
                let sender = group.members[Int.random(in: 0..<group.members.count, using: &generator)]
                let sentAt = origin.duration(to: clock.now)
                let nanos = sentAt.components.seconds * 1_000_000_000 + sentAt.components.attoseconds / 1_000_000_000
                try await connections[sender]?.publish(id: "b\(sequence)", text: "t=\(nanos);")
            }
            let expected = (0..<total).reduce(0) { $0 + groups[$1 % groups.count].members.count }
            let settle = clock.now + .seconds(10)
            while recorder.count < expected, clock.now < settle {
                try await clock.sleep(for: .milliseconds(20), tolerance: nil)
            }
            let cpuAfter = usage.cpuTime(), clientCPUAfter = clientUsage.cpuTime()
            let elapsed = start.duration(to: recorder.lastAt.map { origin + $0 } ?? clock.now)
            tasks.cancelAll()
            let summary = recorder.summary()
            var serverCPU: Duration?
            if let cpuBefore, let cpuAfter { serverCPU = cpuAfter - cpuBefore }
            var clientCPU: Duration?
            if let clientCPUBefore, let clientCPUAfter { clientCPU = clientCPUAfter - clientCPUBefore }
            return Report(
                target: name, options: options, sent: total, delivered: summary.count, expected: expected,
                p50: summary.p50, p99: summary.p99, max: summary.max, elapsed: elapsed, serverCPU: serverCPU, clientCPU: clientCPU,
                residentBefore: residentBefore, residentConnected: residentConnected,
                descriptors: descriptors, maximumClients: most
            )
        }
    }

}

/// One benchmark client: a Herald stream, or an MQTT 3.1.1 session over WebSocket.
struct FanOutClient: Sendable {
    enum Wire: Sendable {
        case herald(token: String)
        case mqtt(clientID: String)
    }

    let wire: Wire
    let port: Int
    /// Whether a Herald client confirms what it receives.
    let confirms: Bool

    init(wire: Wire, port: Int, confirms: Bool = false) {
        self.wire = wire
        self.port = port
        self.confirms = confirms
    }

    /// The Herald token, for a Herald client.
    var herald: String? {
        if case .herald(let token) = wire { return token }
        return nil
    }

    /// The send time stamped in a message (`t=<nanoseconds>;`), found by a plain scan of its bytes: the clients
    /// share the machine with the server, so what they spend on each delivery is kept small.
    static func stamp<Bytes: Collection<UInt8>>(in bytes: Bytes) -> Int64? {
        integer(after: Array("t=".utf8), in: bytes)
    }

    /// A Herald message frame's `seq` (the first `"seq":` in it), by the same plain scan.
    static func seq<Bytes: Collection<UInt8>>(in bytes: Bytes) -> Int64? {
        integer(after: Array(#""seq":"#.utf8), in: bytes)
    }

    /// The whole number written right after the first `marker` in `bytes`.
    private static func integer<Bytes: Collection<UInt8>>(after marker: [UInt8], in bytes: Bytes) -> Int64? {
        var matched = 0
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            bytes.formIndex(after: &index)
            matched = byte == marker[matched] ? matched + 1 : (byte == marker[0] ? 1 : 0)
            guard matched == marker.count else { continue }
            var value: Int64 = 0, digits = 0
            while index != bytes.endIndex, case let digit = bytes[index], digit >= 0x30, digit <= 0x39, digits < 19 {
                value = value * 10 + Int64(digit - 0x30)
                digits += 1
                bytes.formIndex(after: &index)
            }
            return digits > 0 ? value : nil
        }
        return nil
    }

    /// Starts each of `clients` as a child task of `tasks`, in its group's channel, and returns their connections by
    /// index once every one is ready (at most two minutes); `onMessage` and `onAck` are each client's.
    static func connectAll(
        _ clients: [FanOutClient],
        groups: [(channel: String, members: [Int])],
        in tasks: inout ThrowingTaskGroup<Void, any Error>,
        logger: Logger,
        onAck: @escaping @Sendable () -> Void = {},
        onMessage: @escaping @Sendable (_ sentAt: Int64) -> Void
    ) async throws -> [Int: Connection] {
        let connected = NIOLockedValueBox<[Int: Connection]>([:])
        let (readiness, readySink) = AsyncStream<Void>.makeStream()
        var channelOf: [Int: String] = [:]
        for group in groups { for member in group.members { channelOf[member] = group.channel } }
        for (index, client) in clients.enumerated() {
            let channel = channelOf[index] ?? ""
            tasks.addTask {
                try await client.run(channel: channel, logger: logger, onReady: { connection in
                    connected.withLockedValue { $0[index] = connection }
                    readySink.yield()
                }, onMessage: onMessage, onAck: onAck)
            }
        }
        try await awaitReady(clients.count, readiness, readySink)
        return connected.withLockedValue { $0 }
    }

    /// A connected client, ready to post to its group.
    struct Connection: Sendable {
        let channel: String
        let outbound: WebSocketOutboundWriter
        let mqtt: Bool

        /// Posts `text` to the client's group (`id` is the message id Herald stores it under).
        func publish(id: String, text: String) async throws {
            if mqtt {
                try await outbound.write(.binary(MQTT.publish(topic: channel, payload: text)))
            } else {
                try await outbound.write(.text(#"{"type":"send","conversation":"\#(channel)","id":"\#(id)","text":"\#(text)"}"#))
            }
        }
    }

    /// Connects, joins `channel` (a Herald conversation it is a member of, or an MQTT topic it subscribes to), calls
    /// `onReady` once it will receive everything posted there, `onMessage` with the text of every message, and
    /// `onAck` for each of Herald's answers to a post.
    func run(
        channel: String,
        logger: Logger,
        onReady: @escaping @Sendable (Connection) -> Void,
        onMessage: @escaping @Sendable (_ sentAt: Int64) -> Void,
        onAck: @escaping @Sendable () -> Void = {}
    ) async throws {
        switch wire {
        case .herald(let token):
            try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/v1/stream?token=\(token)", logger: logger) { inbound, outbound, _ in
                // Confirmations as the clients send them (`received`, at most one a second; here sent when a
                // message comes, so the last of a burst waits for the next message rather than for a timer).
                var confirmedAt = ContinuousClock.now - HeraldClient.confirmationInterval
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message else { continue }
                    if let sentAt = Self.stamp(in: text.utf8) {
                        onMessage(sentAt)
                        let now = ContinuousClock.now
                        if confirms, now - confirmedAt >= HeraldClient.confirmationInterval, let seq = Self.seq(in: text.utf8) {
                            confirmedAt = now
                            try await outbound.write(.text(#"{"type":"received","through":\#(seq)}"#))
                        }
                    } else if text.utf8.count < 200, text.contains(#""type":"ack""#) {
                        onAck()
                    } else if text.utf8.count < 200, text.contains(#""type":"ready""#) {
                        onReady(Connection(channel: channel, outbound: outbound, mqtt: false))
                    }
                }
            }
        case .mqtt(let clientID):
            var headers = HTTPFields()
            headers[.secWebSocketProtocol] = "mqtt"
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/mqtt", configuration: WebSocketClientConfiguration(additionalHeaders: headers),
                logger: logger
            ) { inbound, outbound, _ in
                try await outbound.write(.binary(MQTT.connect(clientID: clientID)))
                try await outbound.write(.binary(MQTT.subscribe(topic: channel)))
                var reader = MQTT.Reader()
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .binary(let buffer) = message else { continue }
                    reader.append(buffer)
                    while let packet = reader.next() {
                        switch packet {
                        case .subscribed: onReady(Connection(channel: channel, outbound: outbound, mqtt: true))
                        case .publish(let payload):
                            if let sentAt = Self.stamp(in: payload.readableBytesView) { onMessage(sentAt) }
                        case .other: break
                        }
                    }
                }
            }
        }
    }
}

/// The few MQTT 3.1.1 packets the benchmark's clients need: CONNECT, SUBSCRIBE, PUBLISH at QoS 0, and reading
/// SUBACK and PUBLISH.
enum MQTT {
    static func connect(clientID: String) -> ByteBuffer {
        var body = ByteBuffer()
        string("MQTT", into: &body)
        body.writeInteger(UInt8(4))        // protocol level 3.1.1
        body.writeInteger(UInt8(0x02))     // clean session
        body.writeInteger(UInt16(600))     // keep alive, seconds
        string(clientID, into: &body)
        return packet(0x10, body)
    }

    static func subscribe(topic: String) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(UInt16(1))       // packet id
        string(topic, into: &body)
        body.writeInteger(UInt8(0))        // QoS 0
        return packet(0x82, body)
    }

    static func publish(topic: String, payload: String) -> ByteBuffer {
        var body = ByteBuffer()
        string(topic, into: &body)
        body.writeString(payload)
        return packet(0x30, body)
    }

    private static func string(_ text: String, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt16(text.utf8.count))
        buffer.writeString(text)
    }

    private static func packet(_ type: UInt8, _ body: ByteBuffer) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(type)
        var length = body.readableBytes
        repeat {
            var byte = UInt8(length % 128)
            length /= 128
            if length > 0 { byte |= 0x80 }
            buffer.writeInteger(byte)
        } while length > 0
        buffer.writeImmutableBuffer(body)
        return buffer
    }

    enum Packet {
        case subscribed
        case publish(ByteBuffer)
        case other
    }

    /// Splits the bytes a broker sends into packets (a WebSocket message may hold several, or part of one).
    struct Reader {
        private var buffer = ByteBuffer()

        mutating func append(_ bytes: ByteBuffer) {
            var bytes = bytes
            buffer.writeBuffer(&bytes)
        }

        mutating func next() -> Packet? {
            var view = buffer
            guard let type = view.readInteger(as: UInt8.self) else { return nil }
            var length = 0, shift = 0
            while true {
                guard let byte = view.readInteger(as: UInt8.self) else { return nil }
                length |= Int(byte & 0x7f) << shift
                shift += 7
                if byte & 0x80 == 0 { break }
            }
            guard var body = view.readSlice(length: length) else { return nil }
            buffer = view
            buffer.discardReadBytes()
            switch type >> 4 {
            case 9:
                return .subscribed
            case 3:
                guard let topicLength = body.readInteger(as: UInt16.self), body.readableBytes >= Int(topicLength) else { return .other }
                body.moveReaderIndex(forwardBy: Int(topicLength))
                if (type >> 1) & 0x03 != 0 { _ = body.readInteger(as: UInt16.self) }   // a packet id above QoS 0
                return .publish(body)
            default:
                return .other
            }
        }
    }
}

/// Latencies from many connections.
final class LatencyRecorder: Sendable {
    private let samples = NIOLockedValueBox<(values: [Duration], last: Duration?)>(([], nil))

    func record(_ latency: Duration, at receivedAt: Duration) {
        samples.withLockedValue {
            $0.values.append(latency)
            $0.last = Swift.max($0.last ?? receivedAt, receivedAt)
        }
    }

    var count: Int { samples.withLockedValue { $0.values.count } }
    var lastAt: Duration? { samples.withLockedValue { $0.last } }

    func summary() -> (count: Int, p50: Duration, p99: Duration, max: Duration) {
        let values = samples.withLockedValue { $0.values }
        let summary = Latencies.summary(values)
        return (values.count, summary.p50, summary.p99, summary.max)
    }
}

/// A benchmark that could not run.
public struct BenchmarkError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Waits until `count` clients said they are ready, for at most two minutes.
func awaitReady(_ count: Int, _ readiness: AsyncStream<Void>, _ sink: AsyncStream<Void>.Continuation) async throws {
    let watchdog = Task {
        try await Task.sleep(for: .seconds(120))
        sink.finish()
    }
    defer { watchdog.cancel() }
    var ready = 0
    for await _ in readiness {
        ready += 1
        if ready == count { break }
    }
    guard ready == count else { throw BenchmarkError("only \(ready) of \(count) clients were ready within 2 minutes") }
}
