import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The web client: the files of `Resources/web` (plain HTML, CSS and ES modules, no build step), served at `/`, and
/// the modules of the JavaScript package (`clients/js/src`), served at `/herald/`, which the page imports: the page
/// runs the same client and engine as a React Native app. Both are embedded in the binary at build time
/// (``EmbeddedFiles``), so a server copied alone serves them.
enum WebPage {
    /// Where the package's modules are served.
    static let packagePath = "/herald"
    /// The embedded folder of the page's own files, served at `/`.
    static let pageFolder = "/web"

    /// Serves the page's files (`/` is `index.html`) and the package's modules under ``packagePath``, for GET and
    /// HEAD requests no route answered. Each carries an `ETag`, and `Cache-Control: no-cache`, so a browser
    /// revalidates (a 304 when unchanged) and a new server version is never hidden behind a stale module. Other
    /// unknown paths keep their JSON 404.
    static func files(logger: Logger) -> [FileMiddleware<HeraldRequestContext, EmbeddedFileProvider>] {
        let page = EmbeddedFileProvider(folder: pageFolder), package = EmbeddedFileProvider(folder: packagePath)
        guard !page.isEmpty, !package.isEmpty else {
            logger.error("the web page's files are missing from the binary; / will not be served")
            return []
        }
        let cacheControl = CacheControl([(MediaType(type: .any), [.noCache])])
        return [
            FileMiddleware(fileProvider: package, urlBasePath: packagePath, cacheControl: cacheControl),
            FileMiddleware(fileProvider: page, cacheControl: cacheControl, searchForIndexHtml: true),
        ]
    }

    /// The embedded file a request's path names, as the file middlewares find it: `/herald/x` is the package's `x`,
    /// anything else the page's (a folder's `index.html`).
    static func embeddedPath(of requestPath: String) -> String? {
        if requestPath.hasPrefix(packagePath + "/") { return requestPath }
        guard requestPath.hasPrefix("/") else { return nil }
        return pageFolder + requestPath + (requestPath.hasSuffix("/") ? "index.html" : "")
    }
}

/// The page's files compressed (gzip, made once: ``EmbeddedFiles/gzipped``) for a browser that accepts it, with
/// `Content-Encoding: gzip`, `Vary: Accept-Encoding` (on every answer for such a file, compressed or not, so a cache
/// keeps the two apart) and an `ETag` of its own (`"…-gzip"`), which revalidates to `304` as the plain one does. A
/// range request is answered from the plain file. The path is read percent-decoded, as the file middleware reads it
/// (`/%69ndex.html` is `/index.html`, compressed alike).
///
/// It also writes out what the file middleware (Hummingbird's) reads wrongly: a suffix range, `bytes=-N` (the last
/// N bytes), which it would take for the first N + 1, becomes `bytes=<size - N>-<size - 1>`; a range that starts at
/// or past the end, or asks for the last 0 bytes, is answered `416` with `Content-Range: bytes */<size>`.
struct CompressedFilesMiddleware<Context: RequestContext>: RouterMiddleware {
    /// What the `ETag` of a compressed answer adds to the plain file's.
    static var etagSuffix: String { "-gzip" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .get || request.method == .head, let decoded = request.uri.path.removingPercentEncoding,
              let path = WebPage.embeddedPath(of: decoded), let plain = EmbeddedFiles.file(path)
        else { return try await next(request, context) }
        var request = request
        if let range = request.headers[.range] {
            switch Self.range(range, size: plain.bytes.readableBytes) {
            case .unchanged:
                break
            case .explicit(let rewritten):
                var head = request.head
                head.headerFields[.range] = rewritten
                request = Request(head: head, body: request.body)
            case .unsatisfiable:
                return Response(
                    status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(plain.bytes.readableBytes)"])
            }
        }
        guard let gzipped = EmbeddedFiles.gzipped[path] else { return try await next(request, context) }
        let compress = request.headers[.range] == nil && Self.acceptsGzip(request.headers[values: .acceptEncoding])
        if compress, let tags = request.headers[.ifNoneMatch] {
            // The file middleware knows the plain file's tag: the compressed one's is asked for as that.
            var head = request.head
            head.headerFields[.ifNoneMatch] = tags.replacingOccurrences(of: Self.etagSuffix + "\"", with: "\"")
            request = Request(head: head, body: request.body)
        }
        var response = try await next(request, context)
        response.headers[values: .vary].append("Accept-Encoding")
        guard compress, response.status == .ok || response.status == .notModified else { return response }
        if let tag = response.headers[.eTag], tag.hasSuffix("\"") {
            response.headers[.eTag] = String(tag.dropLast()) + Self.etagSuffix + "\""
        }
        guard response.status == .ok else { return response }
        response.headers[.contentEncoding] = "gzip"
        response.headers[.contentLength] = String(gzipped.readableBytes)
        response.body = request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: gzipped)
        return response
    }

    /// What a `Range` header asks of a file of `size` bytes, for the file middleware.
    enum RangeRequest: Equatable {
        /// As it is (a first byte within the file, or a header it refuses itself).
        case unchanged
        /// A suffix range written out as first and last byte.
        case explicit(String)
        /// Nothing of the file: `416`.
        case unsatisfiable
    }

    /// What `header` asks of a file of `size` bytes (RFC 9110, 14.1.2: a single range of `bytes`).
    static func range(_ header: String, size: Int) -> RangeRequest {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.hasPrefix("bytes="), !value.contains(",") else { return .unchanged }
        let spec = value.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-") else { return .unchanged }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        let digits = { (part: Substring) in !part.isEmpty && part.count <= 18 && part.allSatisfy { $0.isASCII && $0.isNumber } }
        if first.isEmpty {
            guard digits(last), let suffix = Int(last) else { return .unchanged }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .explicit("bytes=\(max(0, size - suffix))-\(size - 1)")
        }
        guard digits(first), let start = Int(first) else { return .unchanged }
        return start >= size ? .unsatisfiable : .unchanged
    }

    /// Whether an `Accept-Encoding` takes gzip: named (or `*`) with a weight above zero, and not refused by name.
    static func acceptsGzip(_ values: [String]) -> Bool {
        var gzip: Bool?, any: Bool?
        for item in values.flatMap({ $0.split(separator: ",") }) {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = parts.first else { continue }
            let weight = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            if coding == "gzip" || coding == "x-gzip" { gzip = weight > 0 } else if coding == "*" { any = weight > 0 }
        }
        return gzip ?? any ?? false
    }
}

/// Headers on every response, the page's and the API's: a strict Content-Security-Policy (scripts, styles, fonts
/// and connections from this server only, no inline script or style, no plugins, no framing; images from this
/// server or, for avatars, any `https`/`http` host), `X-Content-Type-Options: nosniff` and no `Referer`.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = SecurityHeaders.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[SecurityHeaders.referrerPolicy] = "no-referrer"
        return response
    }
}

/// The values ``SecurityHeadersMiddleware`` sets, built once (a generic type cannot hold stored statics).
enum SecurityHeaders {
    static let contentSecurityPolicy = [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' https: http:",
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ].joined(separator: "; ")

    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}

/// Cross-origin access for the configured origins (`HERALD_CORS_ORIGINS`): a request whose `Origin` is listed gets
/// `Access-Control-Allow-Origin` (and `Retry-After` exposed); a preflight from a listed origin is answered 204 with the
/// methods and headers the API takes. Any other origin gets no CORS header, so its browser keeps the answer from it.
///
/// (Hummingbird's `CORSMiddleware` takes its list of origins as variadic arguments only, so a list read from a
/// setting cannot be handed to it.)
struct AllowedOriginsMiddleware<Context: RequestContext>: RouterMiddleware {
    let origins: Set<String>
    /// Every method the API answers (the OpenAPI description's, which a test compares): a preflight for any other is
    /// refused by the browser.
    static var methods: String { "GET, HEAD, POST, PUT, PATCH, DELETE" }

    init(_ origins: [String]) {
        self.origins = Set(origins)
    }

    private func allowed(_ origin: String) -> String? {
        if origins.contains("*") { return "*" }
        return origins.contains(origin) ? origin : nil
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin] else { return try await next(request, context) }
        let allowOrigin = allowed(origin)
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            var headers: HTTPFields = [.vary: "Origin"]
            if let allowOrigin {
                headers[.accessControlAllowOrigin] = allowOrigin
                headers[.accessControlAllowMethods] = Self.methods
                headers[.accessControlAllowHeaders] = "Authorization, Content-Type"
                headers[.accessControlMaxAge] = "600"
            }
            return Response(status: .noContent, headers: headers)
        }
        var response = try await next(request, context)
        response.headers[values: .vary].append("Origin")
        if let allowOrigin {
            response.headers[.accessControlAllowOrigin] = allowOrigin
            response.headers[.accessControlExposeHeaders] = "Retry-After"
        }
        return response
    }
}
