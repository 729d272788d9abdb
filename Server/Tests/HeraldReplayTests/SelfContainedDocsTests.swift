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
        let unstructured = try Self.unstructuredTask()
        var checked = 0
        // Both packages' tests (the server's Tests/Support is a link to the client's, read once).
        for tests in [packageRoot.appendingPathComponent("Tests"), serverPackageRoot.appendingPathComponent("Tests")] {
            let enumerator = FileManager.default.enumerator(atPath: tests.path)
            while let path = enumerator?.nextObject() as? String {
                guard path.hasSuffix(".swift") else { continue }
                checked += 1
                let source = try String(contentsOf: tests.appendingPathComponent(path), encoding: .utf8)
                let found = source.split(separator: "\n").filter { line in
                    !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") && line.firstMatch(of: unstructured) != nil
                }
                #expect(found.count <= (owners.contains(path) ? 1 : 0), "\(path): \(found)")
            }
        }
        #expect(checked > 40)
    }

    /// A line that starts a task of its own: `Task {`, `Task(...)` or `Task.detached` (not `addTask`).
    static func unstructuredTask() throws -> Regex<AnyRegexOutput> {
        try Regex(#"(^|[^A-Za-z_.])Task\s*(\{|\(|\.detached)"#)
    }

    /// The repository's Markdown files (not the dependencies' or the build's).
    static var markdownFiles: [String] {
        let enumerator = FileManager.default.enumerator(atPath: packageRoot.path)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            if path.hasPrefix(".") || path.contains("/.") || path.contains("node_modules") { continue }
            if path.hasSuffix(".md") { found.append(path) }
        }
        return found.sorted()
    }

    /// A heading's anchor as GitHub makes it: lower case, letters, digits, spaces, hyphens and underscores kept,
    /// spaces turned into hyphens.
    static func anchor(of heading: String) -> String {
        String(heading.lowercased().unicodeScalars.filter {
            CharacterSet.alphanumerics.contains($0) || $0 == " " || $0 == "-" || $0 == "_"
        }.map { $0 == " " ? "-" : Character($0) })
    }

    @Test("every link between the documents names a file that exists, and every #anchor a heading in it")
    func linksResolve() throws {
        let link = try Regex(#"\]\(([^)\s]+)\)"#)
        var checked = 0
        for path in Self.markdownFiles {
            let folder = (path as NSString).deletingLastPathComponent
            let text = try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
            for match in text.matches(of: link) {
                let target = String(text[match.range].dropFirst(2).dropLast())
                if target.hasPrefix("http:") || target.hasPrefix("https:") || target.hasPrefix("mailto:") { continue }
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = parts[0].isEmpty ? path : ((folder as NSString).appendingPathComponent(String(parts[0])) as NSString).standardizingPath
                let url = packageRoot.appendingPathComponent(file)
                #expect(FileManager.default.fileExists(atPath: url.path), "\(path) links to \(target), which is not there")
                guard parts.count == 2, file.hasSuffix(".md"), let linked = try? String(contentsOf: url, encoding: .utf8) else { continue }
                let anchors = linked.split(separator: "\n").filter { $0.hasPrefix("#") }.map {
                    Self.anchor(of: String($0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)))
                }
                #expect(anchors.contains(String(parts[1])), "\(path) links to \(target): no such heading")
            }
        }
        #expect(checked > 100)
    }

    @Test("the README is a front door (under 25 KB), and no source file is over 600 lines")
    func theHouse() throws {
        let readme = try Data(contentsOf: packageRoot.appendingPathComponent("README.md"))
        #expect(readme.count < 25_000, "README.md is \(readme.count) bytes: guides and figures belong in docs/")
        var checked = 0
        for folder in ["Sources", "Tests", "clients", "Examples", "Server/Sources", "Server/Tests", "Server/Plugins"] {
            let enumerator = FileManager.default.enumerator(atPath: packageRoot.appendingPathComponent(folder).path)
            while let path = enumerator?.nextObject() as? String {
                if path.contains("node_modules") || path.contains("__pycache__") { continue }
                guard [".swift", ".js", ".mjs", ".py", ".ts", ".css", ".html"].contains(where: path.hasSuffix) else { continue }
                let text = try String(contentsOf: packageRoot.appendingPathComponent(folder).appendingPathComponent(path), encoding: .utf8)
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
                checked += 1
                #expect(lines <= 600, "\(folder)/\(path) has \(lines) lines: split it by concern")
            }
        }
        #expect(checked > 150)
    }

    @Test("the server's long-lived work runs in its service group: at most three unstructured tasks in HeraldServer, each with a comment saying why")
    func fewUnstructuredTasks() throws {
        let folder = serverPackageRoot.appendingPathComponent("Sources/HeraldServer")
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        let unstructured = try Self.unstructuredTask()
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            let lines = try String(contentsOf: folder.appendingPathComponent(path), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//"), line.firstMatch(of: unstructured) != nil else { continue }
                found.append("\(path):\(index + 1)")
                // The comment that says why is in the few lines above it.
                let above = lines[max(0, index - 8)..<index].map { $0.trimmingCharacters(in: .whitespaces) }
                #expect(above.contains { $0.hasPrefix("//") && $0.contains("unstructured") },
                        "\(path):\(index + 1) starts a task with no comment saying why it is unstructured")
            }
        }
        #expect(found.count <= 3, "unstructured tasks in HeraldServer: \(found)")
        #expect(!found.isEmpty, "the scan found the ones there are")
    }
}
