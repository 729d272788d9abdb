import HeraldTestSupport
import Testing

/// The benchmarks (`herald-bench`) still run against the server as it is now, in a tiny shape (all but `flood`, whose flood alone
/// takes minutes on a debug build): it ends by itself, exits 0 and prints
/// its figures. Nothing about the figures is checked (a benchmark, not a timed test); this catches a benchmark that
/// a change to the server broke (as the rule that only people who signed in can be added once did).
@Suite("The benchmarks run", .timeLimit(.minutes(3)))
struct BenchmarkSmokeTests {
    static let shapes: [(arguments: [String], prints: String)] = [
        (["post", "--connections", "4", "--seconds", "1"], "posts"),
        (["stream", "--clients", "20", "--rate", "50", "--seconds", "1"], "deliver"),
        (["push", "--members", "5", "--devices", "1", "--messages", "2"], "push"),
        (["list", "--conversations", "300", "--listers", "1", "--posts", "10"], "list"),
        (["away", "--messages", "1", "--grace", "2"], "stream kept, app suspended"),
    ]

    @Test("post, stream, push, list and away, each in a small shape", arguments: 0..<shapes.count)
    func runs(_ index: Int) async throws {
        let (arguments, prints) = Self.shapes[index]
        let result = try await runHeraldBench(arguments, timeout: .seconds(150))
        #expect(result.reason == .exit && result.status == 0, "\(arguments.joined(separator: " ")): \(result.stderr.suffix(2000))")
        #expect(result.stdout.lowercased().contains(prints), "\(result.stdout.prefix(2000))")
    }
}
