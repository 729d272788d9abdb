import AsyncHTTPClient
import Foundation
import HeraldProtocol
import NIOCore
import NIOHTTP1

/// Herald's HTTP API as its Swift clients call it: JSON bodies in Herald's wire JSON, a bearer credential (a user's
/// token, or the app's backend's service key), and refusals as ``HeraldAPIError``. `HeraldAPI` (a user) and
/// `HeraldService` (the app's backend) both send through it.
public struct APITransport: Sendable {
    /// The server.
    public let server: URL
    /// What is sent as `Authorization: Bearer`.
    public let credential: String
    /// How long one request may take.
    public var timeout: TimeAmount
    private let http: HTTPClient

    /// A transport to `server` with `credential`, on `httpClient` (the process-wide shared one by default).
    public init(server: URL, credential: String, httpClient: HTTPClient = .shared, timeout: TimeAmount = .seconds(30)) {
        self.server = server
        self.credential = credential
        self.timeout = timeout
        http = httpClient
    }

    /// Sends a request and decodes its answer.
    ///
    /// - Throws: ``HeraldAPIError``: the server's refusal, or `bad_response` for an answer that cannot be read.
    public func request<Answer: Decodable>(
        _ method: HTTPMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none, as answer: Answer.Type
    ) async throws -> Answer {
        try decode(Answer.self, from: try await exchange(method, path, body: body).data, method: method, path: path)
    }

    /// `data` decoded, or `bad_response`.
    public func decode<Answer: Decodable>(_ type: Answer.Type, from data: Data, method: HTTPMethod, path: String) throws -> Answer {
        do {
            return try WireJSON.decoder().decode(Answer.self, from: data)
        } catch {
            throw HeraldAPIError(status: 0, code: "bad_response", message: "the server's answer to \(method) \(path) was not understood: \(error)")
        }
    }

    /// Sends a request; its body.
    ///
    /// - Throws: ``HeraldAPIError`` when the server refuses it.
    @discardableResult
    public func perform(_ method: HTTPMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none) async throws -> Data {
        try await exchange(method, path, body: body).data
    }

    /// Sends a request; its status (a 2xx) and body.
    ///
    /// - Throws: ``HeraldAPIError`` when the server refuses it.
    public func exchange(
        _ method: HTTPMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none
    ) async throws -> (status: Int, data: Data) {
        let base = server.absoluteString.hasSuffix("/") ? String(server.absoluteString.dropLast()) : server.absoluteString
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(credential)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try WireJSON.encoder().encode(body)))
        }
        let response = try await http.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 16 << 20)
        let data = Data(bytes.readableBytesView)
        guard (200..<300).contains(response.status.code) else {
            let wire = try? WireJSON.decoder().decode(WireError.self, from: data)
            throw HeraldAPIError(
                status: Int(response.status.code), code: wire?.error.code ?? "http_\(response.status.code)",
                message: wire?.error.message ?? "\(method) \(path) answered \(response.status)"
            )
        }
        return (Int(response.status.code), data)
    }

    /// `?after=&before=&limit=` for a page of history (empty when none is given).
    public static func pageQuery(after: Int64?, before: Int64?, limit: Int?) -> String {
        var query: [String] = []
        if let after { query.append("after=\(after)") }
        if let before { query.append("before=\(before)") }
        if let limit { query.append("limit=\(limit)") }
        return query.isEmpty ? "" : "?" + query.joined(separator: "&")
    }

    /// `component` for a URL's path: every character but the unreserved ones escaped, `/` too.
    public static func escape(_ component: String) -> String {
        component.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? component
    }
}

/// The server refused a request: its HTTP status and the error's stable code (see `docs/protocol.md`).
public struct HeraldAPIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status (0 when the answer could not be read).
    public var status: Int
    /// The stable code, such as `not_a_member` or `conversation_not_found`.
    public var code: String
    /// The server's explanation.
    public var message: String

    /// An error with these parts.
    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { "\(code) (\(status)): \(message)" }
}
