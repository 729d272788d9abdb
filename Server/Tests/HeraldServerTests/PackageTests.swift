import Foundation
import HeraldTestSupport
import Testing

/// The server package: what is deployed and what it builds on.
@Suite("The server package", .timeLimit(.minutes(3)))
struct PackageTests {
    @Test("what is deployed carries no benchmark and no backend SDK: herald reaches neither HeraldBenchmarks nor HeraldService, herald-bench reaches the benchmarks")
    func deployedDependencies() async throws {
        let manifest = try await PackageManifest(of: serverPackageRoot)
        let herald = try manifest.reach("herald", platform: "linux").targets
        #expect(herald.contains("HeraldServer"))
        #expect(herald.isDisjoint(with: ["HeraldBenchmarks", "HeraldService"]), "herald reaches \(herald.sorted())")
        #expect(try manifest.reach("herald-bench", platform: "linux").targets.contains("HeraldBenchmarks"))
        // The webhooks' signature is the server's and the backend SDK's, not the client package's (it needs
        // swift-crypto on Linux).
        #expect(try manifest.reach("HeraldService", platform: "linux").targets.contains("HeraldWebhookSignature"))
        #expect(try manifest.reach("HeraldServer", platform: "linux").targets.contains("HeraldWebhookSignature"))
    }

    @Test("the server package builds on the client package by path, the repository's root")
    func clientByPath() async throws {
        let manifest = try await PackageManifest(of: serverPackageRoot)
        let local = (manifest.json["dependencies"] as? [[String: Any]] ?? []).compactMap { ($0["fileSystem"] as? [[String: Any]])?.first }
        #expect(local.count == 1)
        let path = try #require(local.first?["path"] as? String)
        #expect(URL(fileURLWithPath: path).standardized.path == packageRoot.standardized.path)
    }
}
