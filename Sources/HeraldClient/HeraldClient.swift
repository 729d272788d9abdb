import Foundation
import HeraldCore
import HeraldProtocol
import HeraldTransport
import Logging

/// A connection to a Herald server for one user's device: it keeps the stream open, resumes after every drop,
/// and tells the app what arrives.
///
/// - Call ``run()`` from a task the app owns; it connects, reconnects with exponential back-off and jitter, and
///   returns when that task is cancelled.
/// - ``events()`` gives a stream of ``ClientEvent``s; each call is a new subscriber.
/// - Messages are surfaced once: the client remembers the last `seq` it saw, resumes after it, and skips anything
///   at or below it.
/// - ``send(_:to:id:)`` queues a message that is sent, and sent again after reconnects, until the server
///   acknowledges or refuses it; the id makes the retries safe.
/// - ``focus(_:)`` and ``setAppState(_:)`` are reported now and again after every reconnect, so the server always
///   knows what this device is looking at.
/// - Once the messages up to a `seq` were handed to the app's subscribers, the client confirms them to the server
///   (`received`, at most every ``confirmationInterval``): a connected device holds back a push only for what it
///   confirmed, so a frozen app is pushed, and one that runs is not.
public final class HeraldClient: Sendable {
    private struct State {
        var lastSeq: Int64?
        /// The furthest seq whose messages were all handed to a subscriber: what the next `received` says.
        var confirmable: Int64 = 0
        var focus: String?
        var appState: AppState = .foreground
        var pending: [PendingSend] = []
        /// The pending sends written on the current connection.
        var sent: Set<String> = []
        var wake: AsyncStream<Void>.Continuation?
        var drop: AsyncStream<Void>.Continuation?
        var retries: AsyncStream<Duration>.Continuation?
        var subscribers: [UUID: AsyncStream<ClientEvent>.Continuation] = [:]
        var liveSince: ContinuousClock.Instant?
        /// The server's refusal of the token, if it refused it.
        var refusal: (code: String, message: String)?
        /// Closed by the app until it resumes.
        var paused = false
    }

    /// The least time between two `received` frames: the first message after a quiet spell is confirmed at once, a
    /// burst by one frame a second, well within the stream's frame budget and the server's grace period (5 s).
    /// Measured: four a second cost the server a tenth more CPU per delivery at ten messages a second a stream.
    public static let confirmationInterval = Duration.seconds(1)

    /// The codes with which the server refuses a token: no retry can succeed with the same one.
    static let tokenRefusals: Set<String> = ["missing_token", "invalid_token", "token_expired"]

    /// The settings it connects with.
    public let configuration: ClientConfiguration
    private let state: LockedState<State>
    private let logger: Logger
    /// Wakes a paused run.
    private let resumes: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation) =
        AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))

    /// The HTTP API as the same user: conversations with unread counts, history, read markers.
    public var api: HeraldAPI { HeraldAPI(configuration: configuration) }

    /// Creates a client; `resumeAfter` is the last `seq` the app has already shown (nil: only new messages).
    public init(configuration: ClientConfiguration, resumeAfter: Int64? = nil, logger: Logger = Logger(label: "herald-client")) {
        self.configuration = configuration
        self.logger = logger
        state = LockedState(State(lastSeq: resumeAfter))
    }

    /// A new stream of events from now on. It ends when ``run()`` returns.
    public func events() -> AsyncStream<ClientEvent> {
        let (stream, continuation) = AsyncStream<ClientEvent>.makeStream()
        let id = UUID()
        continuation.onTermination = { [state] _ in
            state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        state.withLock { $0.subscribers[id] = continuation }
        return stream
    }

    /// The last sequence number seen: what to resume after.
    public var lastSeq: Int64? { state.withLock { $0.lastSeq } }

    /// Queues a message, mentioning the members `mentions` (user ids) or, with `mentionsAll`, everyone; returns its
    /// id. It is retried across reconnects until acknowledged or refused (a mention of someone who is not a member
    /// is refused with `invalid_mentions`).
    @discardableResult
    public func send(
        _ text: String, to conversationID: String, mentions: [String] = [], mentionsAll: Bool = false,
        id: String = UUID().uuidString.lowercased()
    ) -> String {
        let wake = state.withLock { state in
            state.pending.append(PendingSend(
                id: id, conversationID: conversationID, text: text, mentions: mentions, mentionsAll: mentionsAll))
            return state.wake
        }
        wake?.yield()
        return id
    }

    /// Reports the conversation on screen (nil: none).
    public func focus(_ conversationID: String?) {
        state.withLock { state in
            state.focus = conversationID
            return state.wake
        }?.yield()
    }

    /// Reports whether the app is in the foreground.
    public func setAppState(_ appState: AppState) {
        state.withLock { state in
            state.appState = appState
            return state.wake
        }?.yield()
    }

    /// Closes the current connection; the client connects again after its back-off (after a network change, say).
    public func reconnect() {
        state.withLock { $0.drop }?.yield()
    }

    /// Closes the stream and keeps it closed (``ConnectionState/paused``) until ``resume()``: the server then knows at
    /// once that this device is away and pushes to it, rather than waiting for confirmations a suspended app cannot
    /// send. Sends and reports wait for the next connection.
    public func pause() {
        state.withLock { state -> AsyncStream<Void>.Continuation? in
            guard !state.paused else { return nil }
            state.paused = true
            return state.drop
        }?.yield()
    }

    /// Opens the stream again after ``pause()``, resuming after the last `seq` seen.
    public func resume() {
        let resumed = state.withLock { state -> Bool in
            defer { state.paused = false }
            return state.paused
        }
        if resumed { resumes.continuation.yield() }
    }

    /// Keeps the stream open until the calling task is cancelled, or until the server refuses the token (then the
    /// last state is ``ConnectionState/refused(code:message:)``).
    public func run() async {
        var attempt = 0
        var resumed = resumes.stream.makeAsyncIterator()
        emit(.state(.connecting))
        while !Task.isCancelled {
            if state.withLock({ $0.paused }) {
                emit(.state(.paused))
                while state.withLock({ $0.paused }) {
                    // Nil once the task is cancelled.
                    if await resumed.next() == nil { break }
                }
                if Task.isCancelled { break }
                attempt = 0
                emit(.state(.connecting))
            }
            let (drops, dropSink) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            state.withLock {
                $0.drop = dropSink
                $0.liveSince = nil
                $0.sent = []
            }
            var reason: String
            let used = configuration.token
            do {
                guard let url = URL(string: configuration.streamURL(after: lastSeq)) else {
                    throw TransportError(reason: "\(configuration.server) is not an address")
                }
                let close = try await configuration.transport.stream.connect(to: url, maximumMessageSize: 1 << 20) {
                    inbound, outbound in
                    try await self.session(inbound: inbound, outbound: outbound, drops: drops)
                }
                reason = close.map { "the server closed the connection (\($0.code)\($0.reason.map { ": " + $0 } ?? ""))" }
                    ?? "connection lost"
            } catch {
                logger.debug("stream ended", metadata: ["error": "\(error)"])
                reason = Self.describe(error, server: configuration.server)
            }
            if Task.isCancelled { break }
            if let refusal = state.withLock({ $0.refusal }) {
                // An expired token is renewed, when the app said how, and the stream goes on where it was.
                if refusal.code == "token_expired", configuration.renewToken != nil {
                    do {
                        if try await configuration.tokens.renewed(replacing: used) != nil {
                            state.withLock { $0.refusal = nil }
                            logger.debug("token renewed; reconnecting where the stream was")
                            continue
                        }
                    } catch {
                        emit(.state(.refused(code: refusal.code, message: "\(refusal.message); renewing it failed: \(error)")))
                        break
                    }
                }
                emit(.state(.refused(code: refusal.code, message: refusal.message)))
                break
            }
            let stable = state.withLock { state -> Bool in
                defer { state.wake = nil; state.drop = nil; state.retries = nil }
                guard let since = state.liveSince else { return false }
                return since.duration(to: .now) >= configuration.stableAfter
            }
            if stable { attempt = 0 }
            // Closed by the app: no back-off, the loop waits for `resume()`.
            if state.withLock({ $0.paused }) { continue }
            attempt += 1
            let delay = configuration.backoff(attempt: attempt, random: Double.random(in: 0...1))
            emit(.state(.reconnecting(attempt: attempt, delay: delay, reason: reason)))
            try? await Task.sleep(for: delay)
        }
        let subscribers = state.withLock { $0.subscribers.values }
        for subscriber in subscribers { subscriber.finish() }
    }

    private func session(
        inbound: AsyncThrowingStream<String, any Error>, outbound: any StreamWriter, drops: AsyncStream<Void>
    ) async throws {
        let (wakes, wakeSink) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (retries, retrySink) = AsyncStream<Duration>.makeStream()
        state.withLock {
            $0.wake = wakeSink
            $0.retries = retrySink
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var reported = Reported()
                try await self.flush(outbound, reported: &reported, retries: retrySink)
                for await _ in wakes {
                    try await self.flush(outbound, reported: &reported, retries: retrySink)
                }
            }
            group.addTask {
                // A send the server rate-limited goes again once its wait is over.
                await withDiscardingTaskGroup { timers in
                    for await delay in retries {
                        timers.addTask {
                            try? await Task.sleep(for: delay)
                            wakeSink.yield()
                        }
                    }
                }
            }
            group.addTask {
                for try await text in inbound { self.handle(text) }
            }
            group.addTask {
                var iterator = drops.makeAsyncIterator()
                if await iterator.next() != nil { throw CancellationError() }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// What this connection has told the server.
    private struct Reported {
        var focus: String??
        var app: AppState?
        /// The last `received`, and when it went.
        var received: Int64 = 0
        var receivedAt: ContinuousClock.Instant?
        /// Whether a wake-up for the next `received` is set.
        var waking = false
    }

    /// Writes what the server has not been told on this connection: focus, app state, pending sends, how far the
    /// messages were taken in (a `received` waits out ``confirmationInterval`` after the last: `retries` wakes this
    /// again then).
    private func flush(
        _ outbound: any StreamWriter, reported: inout Reported, retries: AsyncStream<Duration>.Continuation
    ) async throws {
        let now = ContinuousClock.now
        let (focus, appState, pending, confirmable) = state.withLock { state in
            let due = state.pending.filter { !state.sent.contains($0.id) && ($0.notBefore.map { $0 <= now } ?? true) }
            state.sent.formUnion(due.map(\.id))
            return (state.focus, state.appState, due, state.confirmable)
        }
        if confirmable > reported.received {
            let next = reported.receivedAt.map { $0 + Self.confirmationInterval } ?? now
            if next <= now {
                try await outbound.write(ClientFrame.received(through: confirmable).text)
                reported.received = confirmable
                reported.receivedAt = now
                reported.waking = false
            } else if !reported.waking {
                // One wake-up at the interval's end, however many messages come meanwhile.
                retries.yield(now.duration(to: next))
                reported.waking = true
            }
        }
        if reported.focus == nil || reported.focus! != focus {
            try await outbound.write(ClientFrame.focus(conversationID: focus).text)
            reported.focus = .some(focus)
        }
        if reported.app != appState {
            try await outbound.write(ClientFrame.app(appState).text)
            reported.app = appState
        }
        for send in pending {
            try await outbound.write(send.frame.text)
        }
    }

    private func handle(_ text: String) {
        let frame: ServerFrame
        do {
            frame = try ServerFrame(parsing: text)
        } catch let unknown as UnknownFrameType {
            logger.debug("frame type from a newer server ignored", metadata: ["type": "\(unknown.type)"])
            return
        } catch {
            logger.warning("unreadable frame", metadata: ["error": "\(error)"])
            return
        }
        switch frame {
        case .message(let incoming):
            let seq = incoming.message.seq ?? 0
            let isNew = state.withLock { state -> Bool in
                if let last = state.lastSeq, seq <= last { return false }
                state.lastSeq = seq
                return true
            }
            if isNew, emit(.message(incoming)) { confirm(through: seq) }
        case .ready(let seq, _):
            let through = state.withLock { state in
                state.lastSeq = max(state.lastSeq ?? seq, seq)
                state.liveSince = .now
                return state.lastSeq ?? seq
            }
            // Everything of the user's up to here was handed on (the catch-up), or there was nothing.
            if emit(.state(.live)) { confirm(through: through) }
        case .ack(let id, let seq):
            let known = state.withLock { state -> Bool in
                guard let index = state.pending.firstIndex(where: { $0.id == id }) else { return false }
                state.pending.remove(at: index)
                return true
            }
            if known { emit(.acknowledged(id: id, seq: seq)) }
        case .error(let code, let message, let ref, let retryAfter):
            guard let ref, code != "internal" else {
                if ref == nil, Self.tokenRefusals.contains(code) {
                    state.withLock { $0.refusal = (code, message) }
                }
                logger.notice("stream error", metadata: ["code": "\(code)", "message": "\(message)"])
                return
            }
            if code == "rate_limited" {
                let delay = Duration.seconds(max(1, retryAfter ?? 1))
                let retries = state.withLock { state -> AsyncStream<Duration>.Continuation? in
                    guard let index = state.pending.firstIndex(where: { $0.id == ref }) else { return nil }
                    state.pending[index].notBefore = .now + delay
                    state.sent.remove(ref)
                    return state.retries
                }
                retries?.yield(delay)
                return
            }
            let known = state.withLock { state -> Bool in
                guard let index = state.pending.firstIndex(where: { $0.id == ref }) else { return false }
                state.pending.remove(at: index)
                return true
            }
            if known { emit(.refused(id: ref, code: code, message: message)) }
        case .muted(let conversationID, let muted):
            emit(.muted(conversationID: conversationID, muted: muted))
        case .level(let conversationID, let choice):
            emit(.level(conversationID: conversationID, choice))
        case .notifications(let settings):
            emit(.notificationSettings(settings))
        case .pushed(let conversationID, let messageID, let seq):
            emit(.pushed(conversationID: conversationID, messageID: messageID, seq: seq))
        case .pong:
            break
        }
    }

    /// The messages up to `seq` were handed to the app: the next flush confirms them.
    private func confirm(through seq: Int64) {
        state.withLock { state -> AsyncStream<Void>.Continuation? in
            guard seq > state.confirmable else { return nil }
            state.confirmable = seq
            return state.wake
        }?.yield()
    }

    /// Why a connection could not be made, for people: "cannot reach http://…: connection refused".
    static func describe(_ error: any Error, server: URL) -> String {
        "cannot reach \(server.absoluteString): " + ((error as? TransportError)?.reason ?? String(describing: error))
    }

    /// Hands `event` to every subscriber; whether there was one.
    @discardableResult
    private func emit(_ event: ClientEvent) -> Bool {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(event) }
        return !subscribers.isEmpty
    }
}
