import CompressNIO
import Foundation
import HTTPTypes
import NIOCore
import HeraldServer
import HeraldTestSupport
import Testing

/// `herald serve` serves the web client at `/`: the page and its modules with the right types, validators and
/// security headers; `HEAD` wherever `GET` works; CORS only for configured origins; the demo's sign-in only with
/// `--demo`. (The page itself is tested in a real browser: Tests/Browser.)
@Suite("The web page and what the server sends with it", .timeLimit(.minutes(3)))
struct WebPageTests {
    static let csp = HTTPField.Name("Content-Security-Policy")!
    static let nosniff = HTTPField.Name("X-Content-Type-Options")!

    @Test("/ is the page, and its modules (the JavaScript package's under /herald/), styles and icon come with their types, an ETag and no-cache")
    func files() async throws {
        try await TestServer.run { server in
            let expected = [
                "/": "text/html", "/index.html": "text/html", "/app.js": "text/javascript",
                "/banners.js": "text/javascript", "/herald/engine.js": "text/javascript", "/herald/api.js": "text/javascript",
                "/herald/stream.js": "text/javascript", "/herald/client.js": "text/javascript", "/herald/live.js": "text/javascript",
                "/herald/index.js": "text/javascript", "/herald/presentation.js": "text/javascript",
                "/style.css": "text/css", "/favicon.svg": "image/svg+xml",
            ]
            for (path, type) in expected {
                let result = try await server.request("GET", path)
                #expect(result.status == 200, "\(path)")
                #expect(result.headers[.contentType]?.hasPrefix(type) == true, "\(path): \(result.headers[.contentType] ?? "none")")
                #expect(result.headers[.eTag] != nil, "\(path)")
                #expect(result.headers[.cacheControl] == "no-cache", "\(path)")
            }
            let page = try await server.request("GET", "/")
            #expect(page.text.contains(#"<script type="module" src="/app.js"></script>"#))
            #expect(!page.text.contains("<script>"), "no inline script: the CSP would refuse it")
            #expect(!page.text.contains("style="), "no inline style: the CSP would refuse it")
        }
    }

    @Test("every file of the page, of the JavaScript package and the API description is served byte for byte from the binary (nothing read from the build tree), a range too")
    func embedded() async throws {
        try await TestServer.run { server in
            let manager = FileManager.default
            var served: [(path: String, file: URL)] = [("/openapi.yaml", serverPackageRoot.appendingPathComponent("Sources/HeraldServer/Resources/openapi.yaml"))]
            for (prefix, folder) in [("", "Server/Sources/HeraldServer/Resources/web"), ("/herald", "clients/js/src")] {
                let url = packageRoot.appendingPathComponent(folder)
                for name in try manager.contentsOfDirectory(atPath: url.path).sorted() where !name.hasPrefix(".") {
                    served.append(("\(prefix)/\(name)", url.appendingPathComponent(name)))
                }
            }
            #expect(served.count >= 17, "the page, the package's modules and the API description")
            for (path, file) in served {
                let result = try await server.request("GET", path)
                #expect(result.status == 200, "\(path)")
                #expect(result.body == (try Data(contentsOf: file)), "\(path) is \(file.path), byte for byte")
            }
            let part = try await server.request("GET", "/herald/engine.js", headers: [.range: "bytes=3-9"])
            #expect(part.status == 206)
            let engine = try Data(contentsOf: packageRoot.appendingPathComponent("clients/js/src/engine.js"))
            #expect(part.body == engine.subdata(in: 3..<10))
            // The last five bytes (a suffix range), the whole file when it asks for more, nothing for none or past the end.
            let tail = try await server.request("GET", "/herald/engine.js", headers: [.range: "bytes=-5"])
            #expect(tail.status == 206 && tail.body == engine.suffix(5))
            #expect(tail.headers[.contentRange] == "bytes \(engine.count - 5)-\(engine.count - 1)/\(engine.count)")
            let more = try await server.request("GET", "/herald/engine.js", headers: [.range: "bytes=-99999999"])
            #expect(more.status == 206 && more.body == engine)
            for refused in ["bytes=-0", "bytes=\(engine.count)-", "bytes=99999999-99999999"] {
                let answer = try await server.request("GET", "/herald/engine.js", headers: [.range: refused])
                #expect(answer.status == 416 && answer.headers[.contentRange] == "bytes */\(engine.count)", "\(refused)")
            }
            #expect(try await server.request("GET", "/herald/").status == 404, "a folder with no index.html is no file")
        }
    }

    @Test("a path with a control byte, raw or percent-encoded, is refused before the file server: never served or redirected")
    func controlBytesInPaths() async throws {
        try await TestServer.run { server in
            let token = try await server.token("alice")
            for path in ["/sw.js%00.html", "/%00evil", "/index.html%0A", "/%7F", "/app.js%1b[31m", "/sw.js%0", "/%zz"] {
                let result = try await server.request("GET", path)
                #expect(result.status == 400, "\(path): \(result.status)")
                #expect(result.errorCode == "invalid_request", "\(path)")
                #expect(result.headers[.contentType]?.hasPrefix("application/json") == true, "\(path)")
                #expect(result.headers[.location] == nil, "\(path): never redirected")
            }
            let api = try await server.request("GET", "/v1/conversations/a%00b/messages", token: token)
            #expect(api.status == 400)
            // Ordinary paths and percent-encoded ids are untouched.
            #expect(try await server.request("GET", "/sw.js").status == 200)
            #expect(try await server.request("GET", "/v1/conversations/caf%C3%A9/messages", token: token).status == 404)
        }
    }

    @Test("a browser that accepts gzip gets the page's text files gzipped, the same bytes once inflated, with Vary and an ETag of their own that revalidates; others get them plain")
    func compressed() async throws {
        try await TestServer.run { server in
            let gzip: HTTPFields = [.acceptEncoding: "gzip, deflate, br"]
            for path in ["/", "/style.css", "/app.js", "/chat.js", "/herald/engine.js", "/herald/client.js", "/favicon.svg"] {
                let plain = try await server.request("GET", path)
                let packed = try await server.request("GET", path, headers: gzip)
                #expect(plain.headers[.contentEncoding] == nil && plain.headers[values: .vary].contains("Accept-Encoding"), "\(path)")
                #expect(packed.status == 200 && packed.headers[.contentEncoding] == "gzip", "\(path)")
                #expect(packed.headers[values: .vary].contains("Accept-Encoding"), "\(path)")
                #expect(packed.body.count < plain.body.count && packed.headers[.contentLength] == String(packed.body.count), "\(path)")
                var buffer = ByteBuffer(bytes: packed.body)
                let inflated = try buffer.decompress(with: .gzip())
                #expect(Data(inflated.readableBytesView) == plain.body, "\(path): the same bytes")
                let tag = try #require(packed.headers[.eTag])
                #expect(tag != plain.headers[.eTag], "\(path): a representation of its own")
                let again = try await server.request("GET", path, headers: [.acceptEncoding: "gzip", .ifNoneMatch: tag])
                #expect(again.status == 304 && again.body.isEmpty && again.headers[.eTag] == tag, "\(path)")
                let head = try await server.request("HEAD", path, headers: gzip)
                #expect(head.body.isEmpty && head.headers[.contentLength] == String(packed.body.count), "\(path)")
            }
            // Refused by weight, or not asked for: plain. A range is cut from the plain file.
            for accept in ["gzip;q=0", "identity", "br", "*;q=0", "gzip;q=0, *"] {
                let result = try await server.request("GET", "/app.js", headers: [.acceptEncoding: accept])
                #expect(result.headers[.contentEncoding] == nil, "\(accept)")
            }
            #expect(try await server.request("GET", "/app.js", headers: [.acceptEncoding: "*"]).headers[.contentEncoding] == "gzip")
            let part = try await server.request("GET", "/app.js", headers: [.acceptEncoding: "gzip", .range: "bytes=0-9"])
            #expect(part.status == 206 && part.headers[.contentEncoding] == nil && part.body.count == 10)
            // A percent-encoded path is the same file, compressed alike.
            let encoded = try await server.request("GET", "/%69ndex.html", headers: gzip)
            #expect(encoded.status == 200 && encoded.headers[.contentEncoding] == "gzip")
            #expect(encoded.headers[values: .vary].contains("Accept-Encoding"))
            // The API's answers are not the page's files.
            #expect(try await server.request("GET", "/health", headers: gzip).headers[.contentEncoding] == nil)
        }
    }

    @Test("the page's modules are split by concern, each under 400 lines")
    func modulesStaySmall() throws {
        let folder = serverPackageRoot.appendingPathComponent("Sources/HeraldServer/Resources/web")
        let modules = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".js") }
        #expect(modules.count >= 15)
        for name in modules {
            let lines = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count < 400, "\(name): \(lines.count) lines")
        }
    }

    @Test("a matching If-None-Match gets 304 with no body")
    func notModified() async throws {
        try await TestServer.run { server in
            let first = try await server.request("GET", "/herald/engine.js")
            let eTag = try #require(first.headers[.eTag])
            let again = try await server.request("GET", "/herald/engine.js", headers: [.ifNoneMatch: eTag])
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
        }
    }

    @Test("every response carries the strict CSP, nosniff and no-referrer: the page's and the API's")
    func securityHeaders() async throws {
        try await TestServer.run { server in
            for path in ["/", "/app.js", "/health", "/v1/conversations", "/no/such/path"] {
                let result = try await server.request("GET", path)
                let policy = try #require(result.headers[Self.csp], "\(path)")
                #expect(policy.contains("default-src 'none'"))
                #expect(policy.contains("script-src 'self'"))
                #expect(policy.contains("style-src 'self'"))
                #expect(policy.contains("connect-src 'self'"))
                #expect(!policy.contains("unsafe"), "no unsafe-inline or unsafe-eval")
                #expect(result.headers[Self.nosniff] == "nosniff", "\(path)")
                #expect(result.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer", "\(path)")
            }
        }
    }

    @Test("API and stream paths keep their JSON errors; an unknown file is a JSON 404, and so is a path out of the folder (a dot segment is no path)")
    func jsonErrors() async throws {
        try await TestServer.run { server in
            for (path, status, code) in [
                ("/v1/conversations", 401, "missing_token"), ("/v1/stream", 401, "missing_token"),
                ("/v1/nothing", 404, "not_found"), ("/missing.js", 404, "not_found"),
                ("/../Package.swift", 404, "not_found"), ("/%2e%2e/Package.swift", 404, "not_found"),
            ] {
                let result = try await server.request("GET", path)
                #expect(result.status == status, "\(path)")
                #expect(result.errorCode == code, "\(path): \(result.text)")
                #expect(result.headers[.contentType]?.hasPrefix("application/json") == true, "\(path)")
            }
        }
    }

    @Test("HEAD works wherever GET does: the same status and headers, no body")
    func head() async throws {
        try await TestServer.run { server in
            let token = try await server.token("alice")
            for (path, token) in [("/", nil), ("/style.css", nil), ("/health", nil), ("/openapi.yaml", nil), ("/v1/conversations", token)] {
                let get = try await server.request("GET", path, token: token)
                let head = try await server.request("HEAD", path, token: token)
                #expect(head.status == get.status, "\(path)")
                #expect(head.status == 200, "\(path)")
                #expect(head.body.isEmpty, "\(path)")
                #expect(head.headers[.contentType] == get.headers[.contentType], "\(path)")
            }
        }
    }

    @Test("no CORS by default: another origin gets no Access-Control header and its preflight no permission")
    func noCORSByDefault() async throws {
        try await TestServer.run { server in
            let token = try await server.token("alice")
            let get = try await server.request("GET", "/v1/conversations", token: token, headers: [.origin: "https://app.example.com"])
            #expect(get.status == 200)
            #expect(get.headers[.accessControlAllowOrigin] == nil)
            let preflight = try await server.request(
                "OPTIONS", "/v1/conversations", headers: [.origin: "https://app.example.com", .accessControlRequestMethod: "POST"])
            #expect(preflight.headers[.accessControlAllowOrigin] == nil)
        }
    }

    @Test("HERALD_CORS_ORIGINS: a listed origin may call the API, and import the JavaScript package's modules, and its preflight is answered; others may not")
    func corsForListedOrigins() async throws {
        try await TestServer.run(configure: { $0.corsOrigins = ["https://app.example.com", "http://localhost:3000"] }) { server in
            let token = try await server.token("alice")
            let preflight = try await server.request("OPTIONS", "/v1/conversations", headers: [
                .origin: "http://localhost:3000", .accessControlRequestMethod: "POST",
                .accessControlRequestHeaders: "authorization, content-type",
            ])
            #expect(preflight.status == 204)
            #expect(preflight.headers[.accessControlAllowOrigin] == "http://localhost:3000")
            // Every method the API description names is allowed (an edit is a PATCH).
            let allowed = Set((preflight.headers[.accessControlAllowMethods] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            })
            let description = try String(
                contentsOf: serverPackageRoot.appendingPathComponent("Sources/HeraldServer/Resources/openapi.yaml"), encoding: .utf8)
            let used = Set(description.split(separator: "\n").compactMap { line -> String? in
                let method = line.trimmingCharacters(in: .whitespaces).dropLast()
                return line.hasPrefix("    ") && !line.hasPrefix("     ") && line.hasSuffix(":")
                    && ["get", "post", "put", "patch", "delete"].contains(String(method)) ? String(method) : nil
            })
            #expect(used.contains("patch") && used.isSubset(of: allowed), "the API uses \(used.sorted()), a preflight allows \(allowed.sorted())")
            #expect(preflight.headers[.accessControlAllowHeaders]?.lowercased().contains("authorization") == true)

            let get = try await server.request("GET", "/v1/conversations", token: token, headers: [.origin: "https://app.example.com"])
            #expect(get.status == 200)
            #expect(get.headers[.accessControlAllowOrigin] == "https://app.example.com")
            #expect(get.headers[.accessControlExposeHeaders]?.contains("Retry-After") == true)
            #expect(get.headers[values: .vary].contains("Origin"))

            let refused = try await server.request("GET", "/v1/conversations", token: token, headers: [.origin: "https://evil.example"])
            #expect(refused.headers[.accessControlAllowOrigin] == nil)
            let error = try await server.request("GET", "/v1/conversations", headers: [.origin: "https://app.example.com"])
            #expect(error.status == 401)
            #expect(error.headers[.accessControlAllowOrigin] == "https://app.example.com", "errors are readable too")

            // A page of the app's own imports the JavaScript package's modules from here (module scripts use CORS).
            let module = try await server.request("GET", "/herald/index.js", headers: [.origin: "https://app.example.com"])
            #expect(module.status == 200)
            #expect(module.headers[.accessControlAllowOrigin] == "https://app.example.com")
        }
    }

    @Test("HERALD_CORS_ORIGINS is read strictly: origins or *, nothing else")
    func corsSetting() throws {
        let parsed = try ServerConfiguration.fromEnvironment(["HERALD_CORS_ORIGINS": "https://a.example, http://localhost:3000"])
        #expect(parsed.corsOrigins == ["https://a.example", "http://localhost:3000"])
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_CORS_ORIGINS": "*"]).corsOrigins == ["*"])
        #expect(try ServerConfiguration.fromEnvironment([:]).corsOrigins == [])
        for bad in ["https://a.example/", "a.example", "ftp://a.example", "https://A.example", "https://a.example/app"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try ServerConfiguration.fromEnvironment(["HERALD_CORS_ORIGINS": bad])
            }
        }
    }

    @Test("the demo's sign-in exists only with --demo, and its tokens work")
    func demoSignIn() async throws {
        try await TestServer.run { server in
            let people = try await server.request("GET", "/v1/demo/people")
            let minted = try await server.request("POST", "/v1/demo/tokens", body: #"{"user": "alice"}"#)
            #expect(people.status == 404)
            #expect(minted.status == 404)
            #expect(minted.errorCode == "not_found")
        }
        try await TestServer.run(configure: { $0.demo = true }) { server in
            let people = try await server.request("GET", "/v1/demo/people")
            #expect(people.status == 200)
            #expect(people.text.contains(#""name":"Alice Johnson""#))
            let minted = try await server.request("POST", "/v1/demo/tokens", body: #"{"user": "alice"}"#)
            #expect(minted.status == 200)
            struct Minted: Decodable { var token: String }
            let token = try minted.decode(Minted.self).token
            #expect(try await server.request("GET", "/v1/conversations", token: token).status == 200)
            let stranger = try await server.request("POST", "/v1/demo/tokens", body: #"{"user": "mallory"}"#)
            #expect(stranger.status == 400)
            #expect(stranger.errorCode == "invalid_request")
        }
    }
}
