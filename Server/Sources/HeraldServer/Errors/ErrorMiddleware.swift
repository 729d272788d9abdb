import Foundation
import Hummingbird
import Logging
import NIOCore
import HeraldProtocol

/// The first middleware of the router, so it also wraps the router's not-found responder: every failure, from
/// any route, middleware or the router itself (an unknown path), becomes a JSON error body with a stable code.
/// Unexpected errors are logged and answered `internal`. Being first, it also counts the requests in flight.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        HeraldMetrics.requestsInFlight.increment()
        defer { HeraldMetrics.requestsInFlight.decrement() }
        do {
            return try await next(request, context)
        } catch {
            let apiError = APIError(error)
            if error is CancellationError {
                // The server's stop outlasted its shutdown timeout and cut this request.
                context.logger.notice("request cut short by shutdown")
            } else if apiError.code == .internalError {
                context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            return apiError.response()
        }
    }
}

extension Request {
    /// The body decoded as JSON, with errors that say whether it was not JSON at all or which field is wrong.
    func decodeJSON<T: Decodable>(as type: T.Type, context: some RequestContext) async throws -> T {
        let body = try await body.collect(upTo: context.maxUploadSize)
        do {
            return try JSONDecoder().decode(T.self, from: body)
        } catch let error as DecodingError {
            throw APIError.decoding(error)
        }
    }
}

extension APIError {
    /// The API error for any error: itself, or a translation of the framework's and decoders' errors.
    init(_ error: any Error) {
        if let answer = StorageFailure.apiError(for: error) {
            self = answer
            return
        }
        switch error {
        case let apiError as APIError:
            self = apiError
        case let httpError as HTTPError:
            switch httpError.status {
            case .notFound: self.init(.notFound, .notFound, "no such endpoint")
            case .contentTooLarge: self.init(.contentTooLarge, .tooLarge, "the request body is too large")
            case .badRequest: self.init(.badRequest, .invalidRequest, httpError.body ?? "bad request")
            default: self.init(httpError.status, .internalError, httpError.body ?? httpError.status.reasonPhrase)
            }
        case let unknown as UnknownFrameType:
            self.init(.badRequest, .unknownType, "unknown frame type `\(unknown.type)`")
        case let decodingError as DecodingError:
            self = APIError.decoding(decodingError)
        case is NIOTooManyBytesError:
            self.init(.contentTooLarge, .tooLarge, "the request body is too large")
        default:
            self.init(.internalServerError, .internalError, "the server failed to handle this request")
        }
    }

    /// Describes a decoding failure: not JSON at all, or which field is wrong.
    static func decoding(_ error: DecodingError) -> APIError {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.isEmpty ? "the body" : "`" + codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
                .joined(separator: ".") + "`"
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return APIError(.badRequest, .invalidJSON, "not valid JSON")
        case .dataCorrupted(let context):
            return .invalidRequest("\(path(context.codingPath)) is invalid: \(context.debugDescription)")
        case .keyNotFound(let key, let context):
            return .invalidRequest("missing \(path(context.codingPath + [key]))")
        case .typeMismatch(let type, let context):
            return .invalidRequest("\(path(context.codingPath)) must be \(describe(type))")
        case .valueNotFound(let type, let context):
            return .invalidRequest("\(path(context.codingPath)) must be \(describe(type)), not null")
        @unknown default:
            return .invalidRequest("the body does not match what this endpoint takes")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Bool.Type: "true or false"
        case is [String].Type: "an array of strings"
        default: "of type \(type)"
        }
    }

    /// The HTTP response carrying this error.
    func response() -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The JSON body: `{"error": {"code", "message"}}`.
    var body: Data {
        (try? JSONEncoder().encode(WireError(code: code.rawValue, message: message)))
            ?? Data(#"{"error":{"code":"internal","message":""}}"#.utf8)
    }
}
