import Foundation
import HeraldTestSupport
import Testing

@Suite("The repository explains itself")
struct SelfContainedDocsTests {
    @Test("the rules code and tests cite are in docs/behaviour.md, never in a document outside the repository")
    func citationsResolve() throws {
        let behaviour = try String(contentsOf: packageRoot.appendingPathComponent("docs/behaviour.md"), encoding: .utf8)
        for heading in ["## 1. Who gets told", "## 2. What a notification says", "## 3. How banners behave", "## 4. What the server holds to"] {
            #expect(behaviour.contains(heading))
        }
        let enumerator = FileManager.default.enumerator(atPath: packageRoot.path)
        var checked = 0
        while let path = enumerator?.nextObject() as? String {
            if path.hasPrefix(".") || path.contains("/.") { continue }
            guard [".swift", ".md", ".yaml", ".js", ".html", ".css"].contains(where: path.hasSuffix) else { continue }
            let text = try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
            checked += 1
            // (Spelled in pieces, so that this file does not cite them itself.)
            for outside in ["SPEC" + " section", "SPEC" + ".md", ".." + "/shared"] {
                #expect(!text.contains(outside), "\(path) cites \(outside)")
            }
        }
        #expect(checked > 50)
    }

    @Test("the tests start no unstructured Task: what a test starts beside its body is a child task that ends with it")
    func testsStartNoUnstructuredTask() throws {
        // The two connection helpers each serve their socket from a task of their own, cancelled when the connection
        // is closed or released; nothing else may.
        let owners: Set<String> = ["HeraldServerTests/RawWebSocket.swift", "HeraldServerTests/TestServer.swift"]
        let unstructured = try Regex(#"(^|[^A-Za-z_.])Task\s*(\{|\(|\.detached)"#)
        let tests = packageRoot.appendingPathComponent("Tests")
        let enumerator = FileManager.default.enumerator(atPath: tests.path)
        var checked = 0
        while let path = enumerator?.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            checked += 1
            let source = try String(contentsOf: tests.appendingPathComponent(path), encoding: .utf8)
            let found = source.split(separator: "\n").filter { line in
                !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") && line.firstMatch(of: unstructured) != nil
            }
            #expect(found.count <= (owners.contains(path) ? 1 : 0), "\(path): \(found)")
        }
        #expect(checked > 40)
    }
}
