import Foundation
import HeraldCore
import HeraldTransport
#if canImport(Darwin)
import HeraldURLSession
#endif

/// Where a client connects, as whom, and how it retries.
public struct ClientConfiguration: Sendable {
    /// The server, e.g. `http://127.0.0.1:8080`.
    public var server: URL
    /// The user's token: minted by the app's backend, or the identity provider's ID token. Shared by the copies of
    /// this configuration (a ``HeraldClient`` and its ``HeraldAPI``), so a renewed token serves them all.
    public var token: String {
        get { tokens.current }
        nonmutating set { tokens.current = newValue }
    }
    /// How to get a fresh token when the server says the one in use expired (`token_expired`): on the stream, the
    /// client renews it and reconnects where it was, its unsent messages kept; on HTTP, the request is made again
    /// once. Firebase: `{ try await Auth.auth().currentUser!.getIDToken(forcingRefresh: true) }`. Nil: an expired
    /// token ends the stream (``ConnectionState/refused(code:message:)``).
    public var renewToken: (@Sendable () async throws -> String)? {
        get { tokens.renew }
        nonmutating set { tokens.renew = newValue }
    }
    let tokens: TokenStore
    /// How long to wait before the first reconnect.
    public var initialBackoff: Duration = .milliseconds(250)
    /// The longest wait between reconnects.
    public var maximumBackoff: Duration = .seconds(30)
    /// How much each wait may vary, as a fraction (0.2: ±20%), so many clients do not return at once.
    public var jitter: Double = 0.2
    /// How long a connection must hold before the back-off starts again from ``initialBackoff``.
    public var stableAfter: Duration = .seconds(5)
    /// How the client reaches the server: URLSession on Apple platforms (``ClientTransport/standard``); on Linux the
    /// program names it (the server package's `HeraldNIOTransport` gives `.nio()`, which needs no libcurl).
    public var transport: ClientTransport
    /// This device's id, as registered for pushes (``HeraldAPI/registerDevice(_:platform:token:permission:keys:)``): the stream
    /// tells the server, which sends no push to a device while its stream is open (the app shows its own
    /// notification), and reads marked from here clear the conversation's pushes on the user's other devices.
    public var deviceID: String?

    #if canImport(Darwin)
    /// Creates a configuration, over URLSession unless `transport` says otherwise; `renewToken` gets a fresh token
    /// when the one in use expired.
    public init(
        server: URL, token: String, renewToken: (@Sendable () async throws -> String)? = nil, transport: ClientTransport = .standard
    ) {
        self.init(server: server, token: token, renew: renewToken, over: transport)
    }
    #else
    /// Creates a configuration over `transport` (off Apple platforms there is no default: `.nio()` from the server
    /// package's `HeraldNIOTransport`, or `.urlSession` from `HeraldURLSession`, which loads libcurl); `renewToken` gets
    /// a fresh token when the one in use expired.
    public init(
        server: URL, token: String, renewToken: (@Sendable () async throws -> String)? = nil, transport: ClientTransport
    ) {
        self.init(server: server, token: token, renew: renewToken, over: transport)
    }
    #endif

    private init(server: URL, token: String, renew: (@Sendable () async throws -> String)?, over transport: ClientTransport) {
        self.server = server
        self.transport = transport
        tokens = TokenStore(token, renew: renew)
    }

    /// The stream's address, resuming after `seq`.
    func streamURL(after seq: Int64?) -> String {
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.scheme = server.scheme == "https" ? "wss" : "ws"
        components.path = "/v1/stream"
        components.queryItems = [URLQueryItem(name: "token", value: token)]
            + (seq.map { [URLQueryItem(name: "after", value: String($0))] } ?? [])
            + (deviceID.map { [URLQueryItem(name: "device", value: $0)] } ?? [])
        return components.string ?? ""
    }

    /// The wait before reconnect number `attempt` (1-based): ``initialBackoff`` doubled each time, capped at
    /// ``maximumBackoff``, then varied by ``jitter``; `random` in 0...1 picks where in that range.
    public func backoff(attempt: Int, random: Double) -> Duration {
        let exponent = Double(min(max(attempt - 1, 0), 30))
        let base = min(initialBackoff.seconds * pow(2, exponent), maximumBackoff.seconds)
        let varied = base * (1 + jitter * (2 * random - 1))
        return .microseconds(Int64(max(0, varied) * 1_000_000))
    }
}

/// The token a configuration's copies share, and its renewal: concurrent renewals (the stream and a request at
/// once) make one call to the app.
final class TokenStore: Sendable {
    private struct State {
        var current: String
        var renew: (@Sendable () async throws -> String)?
        var renewing: Task<String, any Error>?
    }

    private let state: LockedState<State>

    init(_ token: String, renew: (@Sendable () async throws -> String)?) {
        state = LockedState(State(current: token, renew: renew))
    }

    var current: String {
        get { state.withLock { $0.current } }
        set { state.withLock { $0.current = newValue } }
    }

    var renew: (@Sendable () async throws -> String)? {
        get { state.withLock { $0.renew } }
        set { state.withLock { $0.renew = newValue } }
    }

    /// A fresh token in place of `expired` (nil without a way to renew): if another caller renewed it meanwhile,
    /// theirs.
    func renewed(replacing expired: String) async throws -> String? {
        let task = state.withLock { state -> Task<String, any Error>? in
            if state.current != expired { return Task { [current = state.current] in current } }
            if let renewing = state.renewing { return renewing }
            guard let renew = state.renew else { return nil }
            let task = Task { try await renew() }
            state.renewing = task
            return task
        }
        guard let task else { return nil }
        defer { state.withLock { if $0.renewing == task { $0.renewing = nil } } }
        let fresh = try await task.value
        state.withLock { $0.current = fresh }
        return fresh
    }
}

#if canImport(Darwin)
extension ClientTransport {
    /// The platform's own: URLSession, so an app compiles nothing of SwiftNIO.
    public static var standard: ClientTransport { .urlSession }
}
#endif
