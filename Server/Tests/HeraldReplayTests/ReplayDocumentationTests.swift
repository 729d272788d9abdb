import Foundation
import HeraldReplay
import HeraldTestSupport
import Testing

/// The worked examples of `docs/replay.md`: each trace with the timeline it must print.
struct DocumentedExample: CustomTestStringConvertible, Sendable {
    let title: String
    let trace: String
    let timeline: [String]

    var testDescription: String { title }

    static let all: [DocumentedExample] = {
        let url = packageRoot.appendingPathComponent("docs/replay.md")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        var examples: [DocumentedExample] = []
        var title = ""
        var block: String?
        var blocks: [String: String] = [:]
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("### ") { title = String(line.dropFirst(4)) }
            if let kind = block {
                if line == "```" {
                    block = nil
                    if kind == "replay-timeline", let trace = blocks["replay-trace"], let timeline = blocks[kind] {
                        examples.append(DocumentedExample(
                            title: title, trace: trace, timeline: timeline.split(separator: "\n").map(String.init)))
                        blocks = [:]
                    }
                } else {
                    blocks[kind, default: ""] += line + "\n"
                }
            } else if line.hasPrefix("```json replay-") {
                block = String(line.dropFirst("```json ".count))
            }
        }
        return examples
    }()
}

@Suite("docs/replay.md: every example prints exactly its documented timeline")
struct ReplayDocumentationTests {
    @Test("the page has its eleven examples")
    func examplesFound() {
        #expect(DocumentedExample.all.count == 11)
    }

    @Test("through the library", arguments: DocumentedExample.all)
    func library(_ example: DocumentedExample) throws {
        #expect(try Replay.timeline(forTrace: example.trace) == example.timeline)
    }

    @Test("through the herald binary, trace on standard input", arguments: DocumentedExample.all)
    func binary(_ example: DocumentedExample) async throws {
        let result = try await runHerald(["replay"], input: example.trace)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.split(separator: "\n").map(String.init) == example.timeline)
    }
}

@Suite("The README's run command")
struct ReadmeCommandTests {
    @Test("the demo trace it names runs and shows three banners in turn")
    func demoTrace() async throws {
        let trace = try String(contentsOf: packageRoot.appendingPathComponent("docs/traces/demo.jsonl"), encoding: .utf8)
        let result = try await runHerald(["replay", packageRoot.appendingPathComponent("docs/traces/demo.jsonl").path], input: "")
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.split(separator: "\n").map(String.init) == (try Replay.timeline(forTrace: trace)))
        #expect(result.stdout.components(separatedBy: #""type":"show""#).count - 1 == 3)
    }
}
