import Foundation
import HeraldBenchmarks
import HeraldTestSupport
import Testing

/// The budget `scripts/bench-instructions` holds Herald to: the committed file reads, a bad one is refused with its
/// line, and a run more than 5% over either figure is named; callgrind's totals are read from its file.
@Suite("The instruction budget")
struct InstructionBudgetTests {
    @Test("the committed budget reads; a line that is not `delivery <n>` or `post <n>`, a repeat or a missing figure is refused")
    func parsing() throws {
        let committed = try String(
            contentsOf: packageRoot.appendingPathComponent("scripts/bench-instructions.budget"), encoding: .utf8)
        let budget = try InstructionBudget(parsing: committed)
        #expect(budget.delivery > 0 && budget.post > budget.delivery)
        #expect(try InstructionBudget(parsing: "# why\ndelivery 1,000  # a reason\npost 10_000\n") == InstructionBudget(delivery: 1000, post: 10000))
        for bad in ["delivery 1000", "delivery 1000\npost 0", "delivery 1000\npost 2\npost 3", "delivery x\npost 2", "deliveries 1\npost 2"] {
            #expect(throws: (any Error).self, "\(bad)") { try InstructionBudget(parsing: bad) }
        }
    }

    @Test("a run more than 5% over a figure is named with how much; 5% over or less holds")
    func overruns() {
        let budget = InstructionBudget(delivery: 1000, post: 10_000)
        var options = InstructionsBenchmark.Options()
        options.posts = 10
        let within = InstructionsBenchmark.Report(target: "herald", options: options, deliveries: 100, instructions: 105_000)
        #expect(budget.overruns(within).isEmpty, "exactly 5% over holds")
        let over = InstructionsBenchmark.Report(target: "herald", options: options, deliveries: 100, instructions: 106_000)
        let found = budget.overruns(over)
        #expect(found.count == 2)
        #expect(found.first == "a delivery costs 1060 instructions, 6.0% over its budget of 1000")
    }

    @Test("callgrind's totals line is its instructions")
    func totals() {
        #expect(InstructionsBenchmark.totals(in: "events: Ir\nsummary: 5\nfn=main\n3 5\ntotals: 12345\n") == 12345)
        #expect(InstructionsBenchmark.totals(in: "events: Ir\n") == nil)
    }
}
