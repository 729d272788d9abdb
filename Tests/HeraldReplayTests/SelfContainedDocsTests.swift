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
}
