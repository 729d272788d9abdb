import Foundation
import HeraldCore

/// Runs a ``Trace`` through a ``Notifier`` in virtual time and writes the timeline.
public enum Replay {
    /// The effects of `trace`, in time order.
    ///
    /// Each step fires what is due up to its instant, then is handled. An `end` step stops there; without one,
    /// every remaining deadline fires after the last step.
    public static func run(_ trace: Trace) -> [TimedEffect] {
        var notifier = Notifier(
            userID: trace.userID, config: trace.config, localHold: trace.localHold, burstWindow: trace.burstWindow)
        var timeline: [TimedEffect] = []
        for step in trace.steps {
            switch step.action {
            case .input(let input):
                timeline += notifier.handle(input, at: step.at)
            case .end:
                timeline += notifier.advance(to: step.at)
                return timeline
            }
        }
        while let deadline = notifier.nextDeadline {
            timeline += notifier.advance(to: deadline)
        }
        return timeline
    }

    /// Parses `text` as a trace, runs it, and returns the timeline as JSON Lines (each line without its newline).
    ///
    /// - Throws: ``ReplayError`` for the first malformed line; nothing is run then.
    public static func timeline(forTrace text: String) throws -> [String] {
        let trace = try Trace(parsing: text)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try run(trace).map { timed in
            String(decoding: try encoder.encode(TimelineLine(timed)), as: UTF8.self)
        }
    }
}
