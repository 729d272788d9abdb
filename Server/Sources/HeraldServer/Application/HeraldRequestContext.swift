import Foundation
import Hummingbird
import HeraldProtocol

/// The request context of every Herald route: who is calling (set by ``AuthenticationMiddleware``), Herald's
/// JSON coding, and the body limit.
public struct HeraldRequestContext: RequestContext {
    /// Hummingbird's storage.
    public var coreContext: CoreRequestContextStorage
    /// The caller, once authenticated.
    public var identity: Identity?
    /// For the app's backend's routes: the id of the service key it called with.
    public var serviceKeyID: String?

    /// Creates a context for a new request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
        serviceKeyID = nil
    }

    /// Request bodies over 64 KiB get `too_large`.
    public var maxUploadSize: Int { 64 * 1024 }

    /// Herald's JSON: ISO 8601 times with milliseconds, absent values as null.
    public var responseEncoder: JSONEncoder { WireJSON.encoder() }

    /// The caller; routes behind ``AuthenticationMiddleware`` always have one.
    func requireIdentity() throws -> Identity {
        guard let identity else { throw APIError(.unauthorized, .missingToken, "a bearer token is required") }
        return identity
    }
}

