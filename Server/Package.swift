// swift-tools-version:6.2
import PackageDescription

// Herald's server package: the server, the command line (`herald`), the SwiftNIO transport Linux programs use, the
// backend SDK and the benchmarks. It depends on the client package (the repository's root) by path, so an app that
// adds Herald by URL resolves none of this.

/// The client package's products this package builds on.
func client(_ name: String) -> Target.Dependency { .product(name: name, package: "Herald") }

let package = Package(
    name: "HeraldServer",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "HeraldNIOTransport", targets: ["HeraldNIOTransport"]),
        .library(name: "HeraldService", targets: ["HeraldService"]),
        .library(name: "HeraldReplay", targets: ["HeraldReplay"]),
        .executable(name: "herald", targets: ["herald"]),
        .executable(name: "herald-bench", targets: ["herald-bench"]),
    ],
    dependencies: [
        // The client package: the repository's root.
        .package(name: "Herald", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
    ],
    targets: [
        // The Swift client's two transports over AsyncHTTPClient and hummingbird-websocket's client (SwiftNIO): what
        // Linux programs use (`herald chat`, a backend), where FoundationNetworking would need libcurl.
        .target(
            name: "HeraldNIOTransport",
            dependencies: [
                client("HeraldTransport"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        // The webhooks' signature (HMAC-SHA256): made by the server, checked by the backend SDK.
        .target(
            name: "HeraldWebhookSignature",
            dependencies: [.product(name: "Crypto", package: "swift-crypto", condition: .when(platforms: [.linux]))]
        ),
        // For the app's backend: the service API's client, and the webhooks' events and signature.
        .target(
            name: "HeraldService",
            dependencies: [
                client("HeraldCore"),
                client("HeraldProtocol"),
                client("HeraldTransport"),
                "HeraldNIOTransport",
                "HeraldWebhookSignature",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The records and rules every store shares, below storage (docs/architecture.md): the stores' protocols and
        // rows, the outcomes they report, the group, amendment and outbox rules, what the nodes tell each other.
        // Nothing here reads a database.
        .target(
            name: "HeraldRecords",
            dependencies: [
                client("HeraldCore"),
                client("HeraldProtocol"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The embedded store: SQLite through its C API, on a thread of its own.
        .target(
            name: "HeraldSQLite",
            dependencies: [
                "HeraldRecords",
                client("HeraldCore"),
                client("HeraldProtocol"),
                "CSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The store for several nodes and what they tell each other: PostgreSQL through postgres-nio; and the copy
        // of a SQLite database into it (`herald database copy`).
        .target(
            name: "HeraldPostgres",
            dependencies: [
                "HeraldRecords",
                "HeraldSQLite",
                client("HeraldCore"),
                client("HeraldProtocol"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The server above the stores: the event log, live streams and presence, push, webhooks and the HTTP API.
        .target(
            name: "HeraldServer",
            dependencies: [
                client("HeraldCore"),
                client("HeraldProtocol"),
                "HeraldRecords",
                "HeraldSQLite",
                "HeraldPostgres",
                "HeraldWebhookSignature",
                "CHeapUsage",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ],
            // The page's files, the JavaScript package's modules it imports (served at /herald/, one source:
            // clients/js) and the API description, embedded in the binary at build time: nothing is read from the
            // build tree, so the binary can be copied alone.
            exclude: ["Resources"],
            // Push/WebPushEncryption.swift is a link to HeraldPresentation's file: with this, it compiles over
            // swift-crypto here (CryptoKit there).
            swiftSettings: [.define("HERALD_SWIFT_CRYPTO")],
            plugins: [.plugin(name: "EmbedFiles")]
        ),
        // The tool the EmbedFiles plugin runs: files of the repository into a Swift source file.
        .executableTarget(name: "herald-embed"),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["herald-embed"]),
        // The system's SQLite (libsqlite3): the embedded store drives its C API on a thread of its own.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        // Terminal plumbing the Swift C library overlay does not export: raw mode, size, character widths.
        .target(name: "CTerminal"),
        // `herald chat`: the terminal chat client, its screen as a pure function of its model.
        .target(
            name: "HeraldChat",
            dependencies: [client("HeraldCore"), client("HeraldProtocol"), client("HeraldClient"), "HeraldNIOTransport", "CTerminal"]
        ),
        // Trace-driven runs of the engine in virtual time (`herald replay`).
        .target(name: "HeraldReplay", dependencies: [client("HeraldCore")]),
        // Benchmarks that print figures (`herald-bench`); run them from a release build.
        .target(
            name: "HeraldBenchmarks",
            dependencies: [
                client("HeraldCore"),
                "HeraldServer",
                "HeraldRecords",
                "HeraldSQLite",
                "HeraldPostgres",
                client("HeraldClient"),
                "HeraldNIOTransport",
                "CHeapUsage",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The allocator's own count of bytes in use (glibc's mallinfo2, Darwin's zone statistics).
        .target(name: "CHeapUsage"),
        // The command line; kept thin: it parses arguments and calls the libraries.
        .executableTarget(
            name: "herald",
            dependencies: [
                client("HeraldCore"),
                "HeraldReplay",
                "HeraldServer",
                "HeraldRecords",
                "HeraldSQLite",
                "HeraldPostgres",
                client("HeraldClient"),
                "HeraldNIOTransport",
                "HeraldChat",
                client("HeraldProtocol"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The benchmarks' command line (`herald-bench`), apart from what is deployed.
        .executableTarget(
            name: "herald-bench",
            dependencies: [
                "HeraldBenchmarks",
                "HeraldServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The same folder as the client package's Tests/Support (a link): finding the repository and the built
        // `herald`, running it.
        .target(name: "HeraldTestSupport", path: "Tests/Support"),
        .testTarget(name: "HeraldReplayTests", dependencies: ["HeraldReplay", client("HeraldCore"), "HeraldTestSupport"]),
        .testTarget(
            name: "HeraldChatTests",
            dependencies: ["HeraldChat", client("HeraldClient"), client("HeraldCore"), client("HeraldProtocol"), "HeraldNIOTransport", "HeraldTestSupport"]
        ),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: [
                "HeraldServer",
                "HeraldBenchmarks",
                "HeraldRecords",
                "HeraldSQLite",
                "HeraldPostgres",
                client("HeraldClient"),
                client("HeraldPresentation"),
                client("HeraldURLSession"),
                "HeraldNIOTransport",
                "HeraldService",
                "HeraldWebhookSignature",
                client("HeraldCore"),
                "HeraldTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The fuzz targets (`herald-fuzz`, run by scripts/fuzz; docs/testing.md): only when HERALD_FUZZ is set. They link
// libFuzzer (`-sanitize=fuzzer,address`), whose driver is their `main`, and reach internal parsers by `@testable
// import` (a debug build's testability): nothing a normal build must see.
if Context.environment["HERALD_FUZZ"] != nil {
    package.targets.append(
        .executableTarget(
            name: "herald-fuzz",
            dependencies: [
                client("HeraldCore"),
                client("HeraldProtocol"),
                "HeraldServer",
                "HeraldRecords",
                "HeraldSQLite",
                "HeraldPostgres",
                "HeraldWebhookSignature",
                "HeraldReplay",
                "HeraldChat",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Fuzz",
            exclude: ["Corpus"],
            // libFuzzer's runtime and `main`, in this executable only (scripts/fuzz instruments every module).
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
        )
    )
}
