import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// One version everywhere it is written, and the licence everywhere it is named.
@Suite("Version and licence", .childProcesses)
struct VersionTests {
    private func json(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: packageRoot.appendingPathComponent(path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(path) is a JSON object")
    }

    @Test("the server, herald --version, the npm package, the Expo example and the changelog's newest entry say the same version")
    func oneVersion() async throws {
        let version = HeraldVersion.current
        #expect(version.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+/) != nil, "\(version) is major.minor.patch")
        let printed = try await runHerald(["--version"])
        #expect(printed.status == 0)
        #expect(printed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "herald \(version)")
        #expect(try json("clients/js/package.json")["version"] as? String == version)
        #expect(try json("Examples/expo/package.json")["version"] as? String == version)
        #expect((try json("Examples/expo/app.json")["expo"] as? [String: Any])?["version"] as? String == version)
        let changelog = try String(contentsOf: packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let newest = changelog.firstMatch(of: /\n## \[([^\]]+)\]/)?.output.1
        #expect(newest.map(String.init) == version, "CHANGELOG.md's newest entry is \(newest ?? "missing")")
    }

    @Test("the licence is Apache-2.0: LICENSE, the npm package (not private), the README")
    func licence() throws {
        let licence = try String(contentsOf: packageRoot.appendingPathComponent("LICENSE"), encoding: .utf8)
        #expect(licence.hasPrefix("                                 Apache License\n                           Version 2.0, January 2004"))
        let package = try json("clients/js/package.json")
        #expect(package["license"] as? String == "Apache-2.0")
        #expect(package["private"] == nil, "the npm package can be published")
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("[Apache-2.0](LICENSE)"))
    }
}
