// swift-tools-version:6.0
import PackageDescription

// Herald's client package: what an app adds by the repository's URL. It holds the client targets alone and depends
// on swift-log only, so an app resolves nothing of the server (which is a package of its own, in Server/, that
// depends on this one by path). Tools 6.0: the version Xcode 16 reads.

/// Where apps run: there the client goes over URLSession.
let applePlatforms: [Platform] = [.macOS, .iOS, .tvOS, .watchOS, .visionOS, .macCatalyst]

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldProtocol", targets: ["HeraldProtocol"]),
        .library(name: "HeraldTransport", targets: ["HeraldTransport"]),
        .library(name: "HeraldURLSession", targets: ["HeraldURLSession"]),
        .library(name: "HeraldClient", targets: ["HeraldClient"]),
        .library(name: "HeraldPresentation", targets: ["HeraldPresentation"]),
        .library(name: "HeraldUI", targets: ["HeraldUI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // The notification engine: models, content, policy, banner queue. Foundation only, no I/O.
        .target(name: "HeraldCore"),
        // The wire: the stream's frames, the API's message, the webhooks' events; one Codable definition for server,
        // clients and backends. Foundation only.
        .target(name: "HeraldProtocol", dependencies: ["HeraldCore"]),
        // How the Swift clients reach a server, as two protocols (HTTP for the API, a WebSocket for the stream), and
        // the API's JSON, bearer credential and errors on top. Foundation only.
        .target(name: "HeraldTransport", dependencies: ["HeraldProtocol"]),
        // The two over URLSession: what an app on Apple platforms uses (FoundationNetworking on Linux). Linux programs
        // use the server package's HeraldNIOTransport instead.
        .target(name: "HeraldURLSession", dependencies: ["HeraldTransport"]),
        // The Swift client: connect, resume, reconnect, report focus and app state, feed the engine. On Apple
        // platforms over URLSession by default; elsewhere the program names its transport.
        .target(
            name: "HeraldClient",
            dependencies: [
                "HeraldCore",
                "HeraldProtocol",
                "HeraldTransport",
                .target(name: "HeraldURLSession", condition: .when(platforms: applePlatforms)),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What a view layer needs to draw banners and answer notifications, platform-free and tested on Linux: every
        // decision HeraldUI and an app's extension carry out.
        .target(name: "HeraldPresentation", dependencies: ["HeraldCore"]),
        // The SwiftUI overlay and the UserNotifications adapter: Apple platforms only (empty elsewhere), kept thin.
        .target(name: "HeraldUI", dependencies: ["HeraldCore", "HeraldProtocol", "HeraldClient", "HeraldPresentation"]),
        // What the test suites share (this package's and the server's, whose Tests/Support links here): finding the
        // repository and the built `herald`, running processes, a manual clock.
        .target(name: "HeraldTestSupport", path: "Tests/Support"),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "HeraldTestSupport"]),
        // The wire's types read from the JSON the API documents, and HeraldAPI's requests over a transport that
        // records them: what can be checked of the client without a server (the server's tests run it against one).
        .testTarget(name: "HeraldClientTests", dependencies: ["HeraldClient", "HeraldProtocol", "HeraldTransport", "HeraldTestSupport"]),
        .testTarget(
            name: "HeraldPresentationTests",
            dependencies: ["HeraldPresentation", "HeraldClient", "HeraldCore", "HeraldURLSession", "HeraldTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
