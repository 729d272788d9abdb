import Foundation
import HeraldTestSupport
import Testing

/// What an app gets when it adds Herald by the repository's URL: the client package at the root, whose manifest holds
/// the client targets alone and depends on swift-log only. The server is a package of its own (Server/).
@Suite("An app's dependencies", .timeLimit(.minutes(4)))
struct AppDependencyTests {
    /// Packages an app must not compile: SwiftNIO and everything on it, the server's database, token and crypto
    /// libraries.
    static let serverStack: Set<String> = [
        "swift-nio", "swift-nio-ssl", "swift-nio-http2", "swift-nio-extras", "swift-nio-transport-services",
        "async-http-client", "hummingbird", "hummingbird-websocket", "postgres-nio", "jwt-kit", "swift-crypto",
        "swift-service-lifecycle", "swift-prometheus", "swift-metrics",
    ]

    /// The client targets an app may use, each a product.
    static let clientTargets: Set<String> = [
        "HeraldCore", "HeraldProtocol", "HeraldTransport", "HeraldURLSession", "HeraldClient", "HeraldPresentation", "HeraldUI",
    ]

    @Test("the manifest an app adds: tools 6.0 (what Xcode 16 reads), the seven client products, swift-log its one dependency")
    func manifest() async throws {
        let manifest = try await PackageManifest(of: packageRoot)
        #expect(manifest.dependencies == ["swift-log"])
        #expect(Set(manifest.products) == Self.clientTargets)
        let toolsVersion = try await swiftPackage(["tools-version"], in: packageRoot)
        #expect(toolsVersion.trimmingCharacters(in: .whitespacesAndNewlines) == "6.0.0")
    }

    @Test("on iOS, HeraldUI, HeraldPresentation and HeraldClient reach none of NIO, AsyncHTTPClient, Hummingbird, PostgresNIO, JWTKit or swift-crypto; the client goes over URLSession; HeraldPresentation depends on HeraldCore only")
    func iOSDependencies() async throws {
        let manifest = try await PackageManifest(of: packageRoot)
        for root in ["HeraldUI", "HeraldPresentation", "HeraldClient"] {
            let reached = try manifest.reach(root, platform: "ios")
            #expect(reached.packages.isDisjoint(with: Self.serverStack), "\(root) on iOS reaches \(reached.packages.intersection(Self.serverStack).sorted())")
            #expect(reached.packages.isSubset(of: ["swift-log"]), "\(root) on iOS reaches \(reached.packages.sorted())")
            #expect(reached.targets.isSubset(of: Self.clientTargets), "\(root) on iOS reaches \(reached.targets.sorted())")
        }
        #expect(try manifest.reach("HeraldClient", platform: "ios").targets.contains("HeraldURLSession"), "on iOS the client goes over URLSession")
        #expect(try manifest.reach("HeraldPresentation", platform: "ios").targets == ["HeraldPresentation", "HeraldCore"])
        // The same walk for Linux follows the other condition: there the program names its transport.
        #expect(!(try manifest.reach("HeraldClient", platform: "linux").targets.contains("HeraldURLSession")))
    }

    @Test("a scratch app package that depends on Herald by path resolves Herald and swift-log, nothing else")
    func scratchApp() async throws {
        let folder = try makeTemporaryFolder("herald-app")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Sources/App"), withIntermediateDirectories: true)
        try """
        // swift-tools-version:6.0
        import PackageDescription

        let package = Package(
            name: "App",
            platforms: [.iOS(.v17), .macOS(.v14)],
            dependencies: [.package(name: "Herald", path: "\(packageRoot.path)")],
            targets: [
                .target(name: "App", dependencies: [
                    .product(name: "HeraldUI", package: "Herald"), .product(name: "HeraldClient", package: "Herald"),
                ]),
            ]
        )
        """.write(to: folder.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try "import HeraldClient\n".write(to: folder.appendingPathComponent("Sources/App/App.swift"), atomically: true, encoding: .utf8)

        let printed = try await swiftPackage(["show-dependencies", "--format", "json"], in: folder)
        let tree = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any])
        var names: [String] = []
        var queue = tree["dependencies"] as? [[String: Any]] ?? []
        while let package = queue.popLast() {
            names.append((package["name"] as? String ?? "?").lowercased())
            queue += package["dependencies"] as? [[String: Any]] ?? []
        }
        #expect(names.sorted() == ["herald", "swift-log"], "resolved: \(names.sorted())")
    }
}
