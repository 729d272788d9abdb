import Foundation
import HeraldTestSupport
import Testing

/// What an iOS app compiles when it adds Herald's client libraries: the package's own description (`swift package
/// dump-package`), followed from `HeraldUI`, `HeraldPresentation` and `HeraldClient` with each dependency's platform
/// condition honoured for iOS, reaches nothing of the server's stack.
@Suite("An app's dependencies", .timeLimit(.minutes(2)))
struct AppDependencyTests {
    /// Packages an app must not compile: SwiftNIO and everything on it, the server's database, token and crypto
    /// libraries.
    static let serverStack: Set<String> = [
        "swift-nio", "swift-nio-ssl", "swift-nio-http2", "swift-nio-extras", "swift-nio-transport-services",
        "async-http-client", "hummingbird", "hummingbird-websocket", "postgres-nio", "jwt-kit", "swift-crypto",
        "swift-service-lifecycle", "swift-prometheus", "swift-metrics",
    ]

    @Test("HeraldUI, HeraldPresentation and HeraldClient reach nothing of NIO, AsyncHTTPClient, Hummingbird, PostgresNIO, JWTKit or swift-crypto on iOS; HeraldPresentation depends on HeraldCore only")
    func iOSDependencies() async throws {
        let manifest = try await Self.manifest()
        for root in ["HeraldUI", "HeraldPresentation", "HeraldClient"] {
            let reached = try Self.reach(root, platform: "ios", in: manifest)
            #expect(reached.packages.isDisjoint(with: Self.serverStack), "\(root) on iOS reaches \(reached.packages.intersection(Self.serverStack).sorted())")
            #expect(!reached.targets.contains("HeraldNIOTransport") && !reached.targets.contains("HeraldServer"),
                    "\(root) on iOS reaches \(reached.targets.sorted())")
        }
        #expect(try Self.reach("HeraldClient", platform: "ios", in: manifest).targets.contains("HeraldURLSession"),
                "on iOS the client goes over URLSession")
        #expect(try Self.reach("HeraldPresentation", platform: "ios", in: manifest).targets == ["HeraldPresentation", "HeraldCore"])

        // The same walk for Linux follows the other condition: the client there is on SwiftNIO, so the test can fail.
        let linux = try Self.reach("HeraldClient", platform: "linux", in: manifest)
        #expect(linux.targets.contains("HeraldNIOTransport") && !linux.targets.contains("HeraldURLSession"))
        #expect(linux.packages.contains("swift-nio"))
    }

    @Test("what is deployed carries no benchmark and no backend SDK: herald reaches neither HeraldBenchmarks nor HeraldService, herald-bench reaches the benchmarks")
    func deployedDependencies() async throws {
        let manifest = try await Self.manifest()
        let herald = try Self.reach("herald", platform: "linux", in: manifest).targets
        #expect(herald.contains("HeraldServer"))
        #expect(herald.isDisjoint(with: ["HeraldBenchmarks", "HeraldService"]), "herald reaches \(herald.sorted())")
        #expect(try Self.reach("herald-bench", platform: "linux", in: manifest).targets.contains("HeraldBenchmarks"))
        // The webhooks' wire (events, signature) is shared through HeraldProtocol, which the backend SDK re-exports.
        #expect(try Self.reach("HeraldService", platform: "linux", in: manifest).targets.contains("HeraldProtocol"))
    }

    /// The targets (of this package) and packages (of the products it uses) reachable from `root` on `platform`.
    static func reach(_ root: String, platform: String, in manifest: [String: Any]) throws -> (targets: Set<String>, packages: Set<String>) {
        let targets = (manifest["targets"] as? [[String: Any]] ?? []).reduce(into: [String: [[String: Any]]]()) { all, target in
            all[target["name"] as? String ?? ""] = target["dependencies"] as? [[String: Any]] ?? []
        }
        var seen: Set<String> = []
        var packages: Set<String> = []
        var queue = [root]
        while let name = queue.popLast() {
            guard seen.insert(name).inserted else { continue }
            guard let dependencies = targets[name] else { throw Unreadable("no target \(name) in the manifest") }
            for dependency in dependencies {
                guard let (kind, fields) = dependency.first, let fields = fields as? [Any] else { continue }
                // Each kind's last field is its condition (null, or the platforms it applies on).
                if let condition = fields.last as? [String: Any], let platforms = condition["platformNames"] as? [String],
                   !platforms.contains(platform) {
                    continue
                }
                switch kind {
                case "byName", "target":
                    if let target = fields.first as? String { queue.append(target) }
                case "product":
                    if let package = fields.dropFirst().first as? String { packages.insert(package.lowercased()) }
                default:
                    throw Unreadable("a dependency of kind \(kind)")
                }
            }
        }
        return (seen, packages)
    }

    /// `swift package dump-package` of this repository, with a scratch folder of its own (the test run holds the
    /// package's own build folder).
    static func manifest() async throws -> [String: Any] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["swift", "package", "--package-path", packageRoot.path, "--scratch-path", scratch.path, "dump-package"],
            timeout: .seconds(90))
        guard result.status == 0, let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw Unreadable("swift package dump-package: \(result.status) \(result.stderr.suffix(500))")
        }
        return json
    }

    struct Unreadable: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
