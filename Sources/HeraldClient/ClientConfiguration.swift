import Foundation
import HeraldCore

/// Where a client connects, as whom, and how it retries.
public struct ClientConfiguration: Sendable {
    /// The server, e.g. `http://127.0.0.1:8080`.
    public var server: URL
    /// The user's token, minted by the app's backend.
    public var token: String
    /// How long to wait before the first reconnect.
    public var initialBackoff: Duration = .milliseconds(250)
    /// The longest wait between reconnects.
    public var maximumBackoff: Duration = .seconds(30)
    /// How much each wait may vary, as a fraction (0.2: ±20%), so many clients do not return at once.
    public var jitter: Double = 0.2
    /// How long a connection must hold before the back-off starts again from ``initialBackoff``.
    public var stableAfter: Duration = .seconds(5)
    /// This device's id, as registered for pushes (``HeraldAPI/registerDevice(_:platform:token:)``): the stream
    /// tells the server, which sends no push to a device while its stream is open (the app shows its own
    /// notification), and reads marked from here clear the conversation's pushes on the user's other devices.
    public var deviceID: String?

    /// Creates a configuration.
    public init(server: URL, token: String) {
        self.server = server
        self.token = token
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
