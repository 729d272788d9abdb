import Foundation
import HeraldCore
import HeraldServer
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import ServiceLifecycle

/// The real Herald application, on port 0 with an in-memory database, for the length of a test.
struct TestServer {
    let environment: ServerEnvironment
    let port: Int

    static let secret = "test-secret-0123456789-abcdefghijklmnop"

    /// Starts a server, runs `body` against it, and shuts it down gracefully.
    static func run(
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (TestServer) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.databasePath = ":memory:"
        configuration.jwtSecret = secret
        // Tests post, connect and send frames faster than a person; the tests of the limits set their own.
        configuration.limits.postsPerSecond = 1_000_000
        configuration.limits.postBurst = 1_000_000
        configuration.limits.streamOpensPerMinute = 1_000_000
        configuration.limits.streamFramesPerSecond = 1_000_000
        configuration.limits.streamFrameBurst = 1_000_000
        // Dozens of tests share one PostgreSQL on two cores: a database use that a loaded machine stalls for a few
        // seconds is not the failure these tests look for (PostgresServeTests hold the 5 s bound to account).
        configuration.databaseQueryLimit = .seconds(30)
        configure(&configuration)
        var logger = Logger(label: "herald-test")
        logger.logLevel = ProcessInfo.processInfo.environment["HERALD_TEST_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
        let environment = try await ServerEnvironment.make(configuration, logger: logger)
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        let app = buildApplication(environment, logger: logger) { port in portSink.yield(port) }
        try await withRunning(app, ports: ports, logger: logger) { port in
            try await body(TestServer(environment: environment, port: port))
        }
    }

    /// Runs `app` until `body`, given the port `ports` first yields (the app's `onServerRunning` feeds it), ends;
    /// then stops it gracefully (closing what it opened) whether `body` threw or not.
    static func withRunning(
        _ app: some Service, ports: AsyncStream<Int>, logger: Logger, _ body: (Int) async throws -> Void
    ) async throws {
        let services = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TestFailure("the server did not start") }
            var failure: (any Error)?
            do {
                try await body(port)
            } catch {
                failure = error
            }
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            if let failure { throw failure }
        }
    }

    /// A token for `user`, signed with the server's secret; the user is known to the server from now on, as if they
    /// had signed in (only known users may be added to a conversation).
    func token(_ user: String, name: String? = nil, picture: String? = nil) async throws -> String {
        let name = name ?? user.capitalized
        try await environment.store.upsertUser(Person(id: user, displayName: name, avatarURL: picture.flatMap(URL.init(string:))))
        return try await environment.tokens.token(userID: user, name: name, picture: picture)
    }

    /// An HTTP request; the response's status and body.
    func request(
        _ method: String,
        _ path: String,
        token: String? = nil,
        body: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> HTTPResult {
        try await HTTPClient.request(port: port, method, path, token: token, body: body, headers: headers)
    }

    /// Creates a conversation as `token`'s user; its id. Members the server does not know yet are made known first,
    /// as if they had signed in (only known people may be added).
    func createConversation(_ token: String, kind: String, title: String? = nil, members: [String]) async throws -> String {
        for unknown in try await environment.store.unknownUsers(among: members) {
            try await environment.store.upsertUser(Person(id: unknown, displayName: unknown.capitalized))
        }
        let title = title.map { #", "title": "\#($0)""# } ?? ""
        let members = members.map { "\"\($0)\"" }.joined(separator: ", ")
        let result = try await request(
            "POST", "/v1/conversations", token: token, body: #"{"kind": "\#(kind)"\#(title), "members": [\#(members)]}"#)
        guard result.status == 201 || result.status == 200 else {
            throw TestFailure("creating a conversation failed: \(result.status) \(result.text)")
        }
        return try result.decode(ConversationJSON.self).id
    }

    /// Posts a message as `token`'s user; the stored message.
    @discardableResult
    func post(_ token: String, to conversation: String, id: String? = nil, text: String) async throws -> MessageJSON {
        let body = try String(decoding: JSONEncoder().encode(["id": id, "text": text].compactMapValues { $0 }), as: UTF8.self)
        let result = try await request("POST", "/v1/conversations/\(conversation)/messages", token: token, body: body)
        guard result.status == 201 || result.status == 200 else {
            throw TestFailure("posting failed: \(result.status) \(result.text)")
        }
        return try result.decode(MessageJSON.self)
    }

    /// Opens a stream as `token`'s user.
    func stream(_ token: String, after: Int64? = nil, device: String? = nil) async throws -> TestSocket {
        let query = (after.map { "&after=\($0)" } ?? "") + (device.map { "&device=\($0)" } ?? "")
        return try await TestSocket.connect(url: "ws://127.0.0.1:\(port)/v1/stream?token=\(token)\(query)")
    }
}

/// One HTTP request to a server on this machine.
enum HTTPClient {
    static func request(
        port: Int, _ method: String, _ path: String, token: String? = nil, body: String? = nil, headers: HTTPFields = [:]
    ) async throws -> HTTPResult {
        var fields = headers
        if let token { fields[.authorization] = "Bearer \(token)" }
        if body != nil { fields[.contentType] = "application/json" }
        let client = TestClient(host: "127.0.0.1", port: port, configuration: .init(timeout: .seconds(20)))
        client.connect()
        let request = TestClient.Request(
            path, method: HTTPRequest.Method(method)!, authority: "127.0.0.1", headers: fields, body: body.map { ByteBuffer(string: $0) })
        let response = try await withThrowingTaskGroup(of: TestClient.Response?.self) { group in
            group.addTask { try await client.execute(request) }
            group.addTask {
                // TestClient's own timeout waits for the response's future, which only the connection's end completes:
                // a server that keeps the connection open and never answers would hold the request for ever. At the
                // bound the connection is closed, so the request fails instead.
                try await Task.sleep(for: .seconds(25))
                try? await client.close(mode: .all)
                return nil
            }
            defer { group.cancelAll() }
            while let finished = try await group.next() {
                if let response = finished { return response }
            }
            throw TestFailure("\(method) \(path): no answer within 25 s")
        }
        try? await client.shutdown()
        return HTTPResult(
            status: response.status.code, body: response.body.map { Data($0.readableBytesView) } ?? Data(),
            headers: response.headers)
    }
}

/// An HTTP response in a test.
struct HTTPResult {
    var status: Int
    var body: Data
    var headers = HTTPFields()

    var text: String { String(decoding: body, as: UTF8.self) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: body)
    }

    /// The error code of an error body, if it is one.
    var errorCode: String? {
        (try? decode(ErrorJSON.self))?.error.code
    }

    /// An error answer's message, unescaped.
    var errorMessage: String {
        (try? decode(ErrorJSON.self))?.error.message ?? ""
    }

    /// A string field of a JSON object answer.
    func field(_ name: String) -> String? {
        ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?[name] as? String
    }
}

struct ErrorJSON: Decodable {
    struct Detail: Decodable {
        var code: String
        var message: String
    }

    var error: Detail
}

struct ConversationJSON: Decodable, Equatable {
    var id: String
    var kind: String
    var title: String?
    var members: [String]
    var owners: [String]?
}

struct MessageJSON: Decodable, Equatable {
    var id: String
    var seq: Int64
    var conversationId: String
    var senderId: String
    var text: String?
    var imageURL: String?
    var createdAt: String
    /// `message` or `event`.
    var kind: String?
    var event: EventJSON?
    /// Present (true) once its sender edited it.
    var edited: Bool?
    /// Present (true) on a deleted message's tombstone.
    var deleted: Bool?
}

/// An event entry's `event`.
struct EventJSON: Decodable, Equatable {
    struct Member: Decodable, Equatable {
        var id: String
        var name: String
    }

    var type: String
    var members: [Member]
    var title: String?
    /// The message an edit or a deletion is about.
    var messageId: String?
}

/// Any frame the server sends.
struct FrameJSON: Decodable {
    struct Ref: Decodable {
        var id: String
        var kind: String?
        var title: String?
        var name: String?
        var avatarURL: String?
    }

    var type: String
    /// A `message` frame's message.
    var message: MessageJSON?
    /// An `error` frame's message.
    var errorMessage: String?
    var conversation: Ref?
    var sender: Ref?
    var seq: Int64?
    var id: String?
    var code: String?
    var ref: String?
    /// A `pushed` frame's conversation and message (ids, not objects).
    var pushed: (conversation: String, message: String)?

    private enum CodingKeys: String, CodingKey {
        case type, message, conversation, sender, seq, id, code, ref
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(String.self, forKey: .type)
        if type == "pushed" {
            pushed = (try container.decode(String.self, forKey: .conversation), try container.decode(String.self, forKey: .message))
            seq = try container.decode(Int64.self, forKey: .seq)
            return
        }
        if type == "error" {
            errorMessage = try container.decodeIfPresent(String.self, forKey: .message)
        } else {
            message = try container.decodeIfPresent(MessageJSON.self, forKey: .message)
        }
        conversation = try container.decodeIfPresent(Ref.self, forKey: .conversation)
        sender = try container.decodeIfPresent(Ref.self, forKey: .sender)
        seq = try container.decodeIfPresent(Int64.self, forKey: .seq)
        id = try container.decodeIfPresent(String.self, forKey: .id)
        code = try container.decodeIfPresent(String.self, forKey: .code)
        ref = try container.decodeIfPresent(String.self, forKey: .ref)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Waits until `condition` holds, checking every 20 ms; throws naming `what` (and `detail()`, what was last seen)
/// when `limit` runs out first.
func eventually(
    _ what: String, within limit: Duration = .seconds(60), detail: () -> String = { "" },
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    let seen = detail()
    throw TestFailure("never within \(limit): \(what)\(seen.isEmpty ? "" : "; last: \(seen)")")
}

/// A WebSocket client for tests: frames in order, sends, and how it closed. Its connection is served by a task that
/// ends when the connection closes, and is cancelled when the socket is released: it never outlives its test.
final class TestSocket: Sendable {
    private enum Command: Sendable {
        case text(String)
        case close
    }

    let frames: AsyncStream<String>
    private let commands: AsyncStream<Command>.Continuation
    private let connection: Task<WebSocketCloseFrame?, any Error>

    private init(frames: AsyncStream<String>, commands: AsyncStream<Command>.Continuation, connection: Task<WebSocketCloseFrame?, any Error>) {
        self.frames = frames
        self.commands = commands
        self.connection = connection
    }

    /// Connects and waits for the upgrade; throws if the server refuses it.
    static func connect(url: String, readsFrames: Bool = true) async throws -> TestSocket {
        let (frames, frameSink) = AsyncStream<String>.makeStream()
        let (commands, commandSink) = AsyncStream<Command>.makeStream()
        let (opened, openedSink) = AsyncStream<Void>.makeStream()
        var logger = Logger(label: "test-socket")
        logger.logLevel = .critical
        let connection = Task {
            defer {
                frameSink.finish()
                openedSink.finish()
            }
            return try await WebSocketClient.connect(
                url: url,
                configuration: .init(maxFrameSize: 2 << 20),
                logger: logger
            ) { inbound, outbound, _ in
                openedSink.yield()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        guard readsFrames else {
                            try await Task.sleep(for: .seconds(3600))
                            return
                        }
                        for try await message in inbound.messages(maxSize: 2 << 20) {
                            if case .text(let text) = message { frameSink.yield(text) }
                        }
                        frameSink.finish()
                    }
                    group.addTask {
                        for await command in commands {
                            switch command {
                            case .text(let text): try await outbound.write(.text(text))
                            case .close:
                                try await outbound.close(.normalClosure, reason: nil)
                                return
                            }
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
        }
        var iterator = opened.makeAsyncIterator()
        guard await iterator.next() != nil else {
            _ = try await connection.value
            throw TestFailure("the stream was refused")
        }
        return TestSocket(frames: frames, commands: commandSink, connection: connection)
    }

    func send(_ text: String) {
        commands.yield(.text(text))
    }

    func close() {
        commands.yield(.close)
    }

    /// The close frame the server sent, once the connection is over.
    func closed() async throws -> WebSocketCloseFrame? {
        try await connection.value
    }

    deinit {
        commands.finish()
        connection.cancel()
    }
}

/// Reads a socket's frames in order. (Tests that read carry a time limit, so a missing frame fails them.)
extension TestSocket {
    /// Confirms every message up to `seq` (the `received` frame).
    func confirm(through seq: Int64) {
        send(#"{"type": "received", "through": \#(seq)}"#)
    }
}

struct FrameReader {
    private var iterator: AsyncStream<String>.Iterator

    init(_ socket: TestSocket) {
        iterator = socket.frames.makeAsyncIterator()
    }

    /// The next frame; fails if the connection ended.
    mutating func next() async throws -> FrameJSON {
        guard let text = await iterator.next() else { throw TestFailure("the stream ended") }
        return try JSONDecoder().decode(FrameJSON.self, from: Data(text.utf8))
    }

    /// The next frame's text, or nil if the connection ended.
    mutating func nextText() async -> String? {
        await iterator.next()
    }

    /// Frames up to and including the first `ready`.
    mutating func untilReady() async throws -> (messages: [FrameJSON], ready: FrameJSON) {
        var messages: [FrameJSON] = []
        while true {
            let frame = try await next()
            if frame.type == "ready" { return (messages, frame) }
            messages.append(frame)
        }
    }

    /// Sends a ping and returns every frame before its pong: what the server had queued for this connection.
    mutating func drain(_ socket: TestSocket) async throws -> [FrameJSON] {
        socket.send(#"{"type": "ping"}"#)
        var frames: [FrameJSON] = []
        while true {
            let frame = try await next()
            if frame.type == "pong" { return frames }
            frames.append(frame)
        }
    }
}

/// Waits (up to 60 s) until the `herald serve` on `port` counts `depth` jobs in its push outbox (`/metrics`).
func waitForOutboxDepth(_ depth: Int, port: Int) async throws {
    var last: Double?
    try await eventually("the outbox holds \(depth) jobs", detail: { "\(last.map { "\($0)" } ?? "no herald_push_outbox_depth")" }) {
        last = try await metric("herald_push_outbox_depth", port: port)
        return last == Double(depth)
    }
}

/// The value of the unlabelled metric `name` on the `/metrics` of the `herald serve` on `port`, if it shows one.
func metric(_ name: String, port: Int) async throws -> Double? {
    let text = try await HTTPClient.request(port: port, "GET", "/metrics").text
    let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
    return line.flatMap { Double($0.dropFirst(name.count + 1)) }
}
