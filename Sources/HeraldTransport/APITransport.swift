import Foundation
import HeraldProtocol

/// Herald's HTTP API as its Swift clients call it: JSON bodies in Herald's wire JSON, a bearer credential (a user's
/// token, or the app's backend's service key), and refusals as ``HeraldAPIError``, over an ``HTTPTransport``.
/// `HeraldAPI` (a user) and `HeraldService` (the app's backend) both send through it.
public struct APITransport: Sendable {
    /// The server.
    public let server: URL
    /// What is sent as `Authorization: Bearer`.
    public let credential: String
    /// How long one request may take.
    public var timeout: Duration
    private let http: any HTTPTransport

    /// A transport to `server` with `credential`, sending through `http`.
    public init(server: URL, credential: String, http: any HTTPTransport, timeout: Duration = .seconds(30)) {
        self.server = server
        self.credential = credential
        self.timeout = timeout
        self.http = http
    }

    /// Sends a request and decodes its answer.
    ///
    /// - Throws: ``HeraldAPIError``: the server's refusal, or `bad_response` for an answer that cannot be read.
    public func request<Answer: Decodable>(
        _ method: APIMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none, as answer: Answer.Type
    ) async throws -> Answer {
        try decode(Answer.self, from: try await exchange(method, path, body: body).data, method: method, path: path)
    }

    /// `data` decoded, or `bad_response`.
    public func decode<Answer: Decodable>(_ type: Answer.Type, from data: Data, method: APIMethod, path: String) throws -> Answer {
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
    public func perform(_ method: APIMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none) async throws -> Data {
        try await exchange(method, path, body: body).data
    }

    /// Sends a request; its status (a 2xx) and body.
    ///
    /// - Throws: ``HeraldAPIError`` when the server refuses it, or (status 0, code `network`) when no answer came.
    public func exchange(
        _ method: APIMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none
    ) async throws -> (status: Int, data: Data) {
        let base = server.absoluteString.hasSuffix("/") ? String(server.absoluteString.dropLast()) : server.absoluteString
        guard let url = URL(string: base + path) else {
            throw HeraldAPIError(status: 0, code: "invalid_request", message: "\(base + path) is not an address")
        }
        var headers = [(name: "Authorization", value: "Bearer \(credential)")]
        var data: Data?
        if let body {
            headers.append((name: "Content-Type", value: "application/json"))
            data = try WireJSON.encoder().encode(body)
        }
        let response: TransportResponse
        do {
            response = try await http.send(TransportRequest(method: method, url: url, headers: headers, body: data, timeout: timeout))
        } catch let error as TransportError {
            throw HeraldAPIError(status: 0, code: "network", message: "cannot reach \(base): \(error.reason)")
        }
        guard (200..<300).contains(response.status) else {
            let wire = try? WireJSON.decoder().decode(WireError.self, from: response.body)
            throw HeraldAPIError(
                status: response.status, code: wire?.error.code ?? "http_\(response.status)",
                message: wire?.error.message ?? "\(method) \(path) answered \(response.status)"
            )
        }
        return (response.status, response.body)
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
