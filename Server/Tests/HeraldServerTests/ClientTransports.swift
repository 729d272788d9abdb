import Foundation
import HeraldClient
import HeraldNIOTransport
import HeraldURLSession
import Testing

/// The transports the Swift client's tests run on, each against the real server: SwiftNIO (the client's own on Linux)
/// and URLSession (its own on Apple platforms). On Linux, FoundationNetworking carries HTTP; its WebSockets need a
/// libcurl built with them, which Debian 12's is not, so there the URLSession runs' stream goes over SwiftNIO unless
/// this system's libcurl carries WebSockets (``URLSessionStreamTransport/isSupported``).
enum TestTransport: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case nio
    case urlSession

    var transport: ClientTransport {
        switch self {
        case .nio:
            return .nio()
        case .urlSession:
            let stream: any StreamTransport = URLSessionStreamTransport.isSupported ? URLSessionStreamTransport() : WebSocketClientTransport()
            return ClientTransport(http: URLSessionHTTPTransport(), stream: stream)
        }
    }

    var testDescription: String {
        switch self {
        case .nio: "over SwiftNIO"
        case .urlSession: URLSessionStreamTransport.isSupported ? "over URLSession" : "over URLSession (its stream over SwiftNIO: no WebSockets in this libcurl)"
        }
    }
}

extension ClientConfiguration {
    /// A configuration for the test server on `port`, as `token`, over `transport`.
    static func local(port: Int, token: String, _ transport: TestTransport) -> ClientConfiguration {
        ClientConfiguration(server: URL(string: "http://127.0.0.1:\(port)")!, token: token, transport: transport.transport)
    }
}
