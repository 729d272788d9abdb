import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// A trace to run through both engines: a `docs/replay.md` example, a documented trace file, or a fixture.
struct ConformanceTrace: CustomTestStringConvertible, Sendable {
    let name: String
    let text: String

    var testDescription: String { name }

    static let all: [ConformanceTrace] = {
        let examples = DocumentedExample.all.map { ConformanceTrace(name: "docs/replay.md: \($0.title)", text: $0.trace) }
        let files = ["docs/traces", "Tests/Fixtures/traces"].flatMap { folder -> [ConformanceTrace] in
            let url = packageRoot.appendingPathComponent(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            return names.filter { $0.hasSuffix(".jsonl") }.sorted().compactMap { name in
                guard let text = try? String(contentsOf: url.appendingPathComponent(name), encoding: .utf8) else { return nil }
                return ConformanceTrace(name: "\(folder)/\(name)", text: text)
            }
        }
        return examples + files
    }()
}

/// The JavaScript engine (`clients/js/src/engine.js`, the page's and the package's) is a port of `HeraldCore`; this holds them to
/// one behaviour. Every trace runs through `herald replay` and through the JS engine under node
/// (`Tests/Web/replay.mjs`), and the two timelines must be the same, line for line, value for value.
@Suite("The web engine and HeraldCore give identical timelines")
struct WebEngineConformanceTests {
    @Test("there are traces to compare: the documented examples, the demo trace and the fixtures")
    func tracesFound() {
        #expect(ConformanceTrace.all.count >= DocumentedExample.all.count + 5)
    }

    @Test("herald replay and the JS engine agree", arguments: ConformanceTrace.all)
    func agree(_ trace: ConformanceTrace) async throws {
        let swift = try await runHerald(["replay"], input: trace.text)
        #expect(swift.status == 0, "herald replay failed: \(swift.stderr)")
        let script = packageRoot.appendingPathComponent("Tests/Web/replay.mjs").path
        let javascript = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["node", script], input: trace.text, timeout: .seconds(30))
        #expect(javascript.status == 0, "the JS engine failed (is node installed? scripts/test installs it): \(javascript.stderr)")

        let swiftLines = try Self.lines(swift.stdout)
        let javascriptLines = try Self.lines(javascript.stdout)
        #expect(!swiftLines.isEmpty, "a trace with an empty timeline compares nothing")
        #expect(swiftLines.count == javascriptLines.count, "\(swiftLines.count) lines from herald replay, \(javascriptLines.count) from the JS engine")
        for (index, (expected, actual)) in zip(swiftLines, javascriptLines).enumerated() where expected != actual {
            Issue.record("line \(index + 1) differs:\n  herald replay: \(expected)\n  JS engine:     \(actual)")
            break
        }
    }

    @Test("a banner's announcement for screen readers is the same words in both")
    func announcement() async throws {
        let banners = [
            Banner(id: "m1", conversationID: "team", title: "Charlie Davis", subtitle: "in Team Chat",
                   body: "Hey, are you there?", tone: .message),
            Banner(id: "m2", conversationID: "c", title: "Bob", body: "📷 Image", tone: .message),
            Banner.general(id: "g1", message: "Connection lost", tone: .warning),
        ]
        let json = banners.map { banner -> [String: String?] in
            ["title": banner.title, "subtitle": banner.subtitle, "body": banner.body]
        }
        let input = String(decoding: try JSONEncoder().encode(json), as: UTF8.self)
        let module = packageRoot.appendingPathComponent("clients/js/src/engine.js").path
        let script = """
            const { announcement } = await import(process.argv[1]);
            for (const banner of JSON.parse(process.argv[2])) {
              console.log(announcement({ subtitle: null, body: null, ...banner }));
            }
            """
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["node", "--input-type=module", "-e", script, module, input],
            timeout: .seconds(30))
        #expect(result.status == 0, "node: \(result.stderr)")
        let expected = banners.map(ContentFormatter.standard.announcement(for:))
        #expect(result.stdout.split(separator: "\n").map(String.init) == expected)
        #expect(expected[0] == "Charlie Davis in Team Chat: Hey, are you there?")
    }

    @Test("mentions found in text and names offered after @ are the same in both")
    func mentions() async throws {
        let members = [Person(id: "a1", displayName: "Alice"), Person(id: "a2", displayName: "Alice Johnson"),
                       Person(id: "b", displayName: "Bob"), Person(id: "z", displayName: "Zoë Ünal"), Person(id: "n", displayName: "")]
        let texts = ["@alice johnson and @Bob, hi", "@Alice! and @all", "@Bobby @allison mail@Bob.com", "(@zoë ünal) @ALL.",
                     "@", "no mention", "@Bob@Alice", "@Alice Johnsonville @Alice"]
        let prefixes = ["al", "B", "", "zo", "x", "ALL"]
        let cases: [String: Any] = [
            "members": members.map { ["id": $0.id, "name": $0.displayName] }, "texts": texts, "prefixes": prefixes,
        ]
        let input = String(decoding: try JSONSerialization.data(withJSONObject: cases), as: UTF8.self)
        let module = packageRoot.appendingPathComponent("clients/js/src/engine.js").path
        let script = """
            const { findMentions, mentionCompletions } = await import(process.argv[1]);
            const { members, texts, prefixes } = JSON.parse(process.argv[2]);
            for (const text of texts) console.log(JSON.stringify(findMentions(text, members)));
            for (const prefix of prefixes) console.log(JSON.stringify(mentionCompletions(prefix, members)));
            """
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["node", "--input-type=module", "-e", script, module, input],
            timeout: .seconds(30))
        #expect(result.status == 0, "node: \(result.stderr)")
        struct Found: Decodable, Equatable { var ids: [String]; var all: Bool }
        let lines = result.stdout.split(separator: "\n").map { Data($0.utf8) }
        #expect(lines.count == texts.count + prefixes.count)
        for (index, text) in texts.enumerated() where index < lines.count {
            let swift = MentionText.find(in: text, members: members)
            #expect(try JSONDecoder().decode(Found.self, from: lines[index]) == Found(ids: swift.ids, all: swift.all), "\(text)")
        }
        for (index, prefix) in prefixes.enumerated() where texts.count + index < lines.count {
            #expect(try JSONDecoder().decode([String].self, from: lines[texts.count + index])
                == MentionText.completions(of: prefix, members: members), "\(prefix)")
        }
    }

    /// Each line parsed and written again with sorted keys, so that only values are compared (not number spelling
    /// or escapes, which differ between encoders and mean the same).
    private static func lines(_ output: String) throws -> [String] {
        try output.split(separator: "\n").map { line in
            let value = try JSONSerialization.jsonObject(with: Data(line.utf8))
            let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])
            return String(decoding: data, as: UTF8.self)
        }
    }
}
