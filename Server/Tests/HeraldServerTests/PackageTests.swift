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

    @Test("layers: the records and rules reach no driver; each driver reaches the records and nothing above (the log, push, webhooks, the API); no source above a driver imports a database's modules")
    func layers() async throws {
        let manifest = try await PackageManifest(of: serverPackageRoot)
        let records = try manifest.reach("HeraldRecords", platform: "linux").targets
        #expect(records.isDisjoint(with: ["HeraldSQLite", "HeraldPostgres", "HeraldServer"]), "HeraldRecords reaches \(records.sorted())")
        for driver in ["HeraldSQLite", "HeraldPostgres"] {
            let reached = try manifest.reach(driver, platform: "linux").targets
            #expect(reached.contains("HeraldRecords") && !reached.contains("HeraldServer"), "\(driver) reaches \(reached.sorted())")
        }
        #expect(!(try manifest.reach("HeraldSQLite", platform: "linux").targets.contains("HeraldPostgres")))
        let databases = ["import PostgresNIO", "import _ConnectionPoolModule", "import CSQLite"]
        let sources = serverPackageRoot.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        #expect(files.count > 100)
        for file in files where !["HeraldSQLite", "HeraldPostgres"].contains(file.deletingLastPathComponent().lastPathComponent) {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(!lines.contains { databases.contains($0) }, "\(file.lastPathComponent) imports a database's modules")
        }
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
