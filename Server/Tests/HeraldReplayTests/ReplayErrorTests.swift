import Foundation
import HeraldReplay
import HeraldTestSupport
import Testing

@Suite("A malformed trace is an error that names its line; nothing is silently ignored")
struct ReplayErrorTests {
    static let configure = #"{"at": 0, "event": "configure", "me": "alice"}"#
    static let message = #"{"at": 1, "event": "message", "id": "m1", "conversation": {"id": "c", "kind": "direct"}, "sender": {"id": "bob", "name": "Bob"}}"#

    func error(_ lines: [String]) -> ReplayError? {
        do {
            _ = try Replay.timeline(forTrace: lines.joined(separator: "\n"))
            return nil
        } catch let error as ReplayError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test("each kind of mistake, with its line and message", arguments: [
        ([configure, "{not json"], 2, "not valid JSON"),
        ([configure, "[1, 2]"], 2, "must be a JSON object, not an array"),
        ([configure, #"{"at": 1, "event": "explode"}"#], 2, "unknown event `explode`"),
        ([configure, #"{"event": "tap"}"#], 2, "missing `at`"),
        ([configure, #"{"at": "soon", "event": "tap"}"#], 2, "`at` must be a number, not a string"),
        ([configure, #"{"at": -1, "event": "tap"}"#], 2, "`at` must not be negative"),
        // Found by fuzzing: seconds past what a Duration to the microsecond holds trapped.
        ([configure, #"{"at": 1e300, "event": "tap"}"#], 2, "`at` must be at most 1000000000 seconds"),
        ([#"{"at": 0, "event": "configure", "me": "alice", "burstWindow": 1e19}"#], 1, "`burstWindow` must be at most 1000000000 seconds"),
        ([configure, #"{"at": 1, "event": "show", "id": "g", "message": "Hi", "tone": "neutral", "duration": 9.3e12}"#], 2,
         "`duration` must be at most 1000000000 seconds"),
        ([configure, #"{"at": 2, "event": "tap"}"#, #"{"at": 1, "event": "tap"}"#], 3, "`at` goes back in time (1.0 after 2.0)"),
        ([configure, #"{"at": 1, "event": "tap", "dy": -60}"#], 2, "`tap` has no field `dy`"),
        ([#"{"at": 0, "event": "configure", "me": "alice", "capacty": 2}"#], 1, "`configure` has no field `capacty`"),
        ([#"{"at": 0, "event": "configure", "me": "alice", "capacity": 2.5}"#], 1, "`capacity` must be a whole number from 0 to 1000000"),
        ([#"{"at": 0, "event": "configure", "me": "alice", "duration": 0}"#], 1, "`duration` must be more than zero seconds"),
        ([#"{"at": 0, "event": "configure", "me": "alice", "coalesce": "yes"}"#], 1, "`coalesce` must be true or false, not a string"),
        ([#"{"at": 0, "event": "configure"}"#], 1, "missing `me`"),
        ([#"{"at": 0, "event": "tap"}"#], 1, "the trace must begin with `configure` (who is `me`?)"),
        ([configure, configure], 2, "`configure` must come once, before every other event"),
        ([""], 1, "the trace is empty: it needs `configure`"),
        ([configure, #"{"at": 1, "event": "end"}"#, #"{"at": 2, "event": "tap"}"#], 3, "nothing may follow `end`"),
        ([configure, #"{"at": 1, "event": "app", "state": "minimised"}"#], 2, "`state` must be one of `foreground`, `background`, not `minimised`"),
        ([configure, #"{"at": 1, "event": "permission"}"#], 2, "missing `granted`"),
        ([configure, #"{"at": 1, "event": "open"}"#], 2, "missing `conversation`"),
        ([configure, #"{"at": 1, "event": "mute", "conversation": null}"#], 2, "`conversation` must be a string, not null"),
        ([configure, #"{"at": 1, "event": "touch", "phase": "hold"}"#], 2, "`phase` must be one of `down`, `up`, not `hold`"),
        ([configure, #"{"at": 1, "event": "swipe", "dy": "up"}"#], 2, "`dy` must be a number, not a string"),
        ([configure, #"{"at": 1, "event": "show", "id": "g", "message": "Hi", "tone": "message"}"#], 2,
         "`tone` must be one of `primary`, `success`, `warning`, `danger`, `neutral`, not `message`"),
        ([configure, #"{"at": 1, "event": "message", "id": "m1", "conversation": {"id": "c", "kind": "channel"}, "sender": {"id": "b", "name": "B"}}"#], 2,
         "`conversation.kind` must be one of `direct`, `group`, not `channel`"),
        ([configure, #"{"at": 1, "event": "message", "id": "m1", "conversation": {"id": "c", "kind": "direct"}, "sender": {"id": "b"}}"#], 2,
         "missing `sender.name`"),
        ([configure, #"{"at": 1, "event": "message", "id": "m1", "conversation": "c", "sender": {"id": "b", "name": "B"}}"#], 2,
         "`conversation` must be an object, not a string"),
        ([configure, #"{"at": 1, "event": "message", "id": 7, "conversation": {"id": "c", "kind": "direct"}, "sender": {"id": "b", "name": "B"}}"#], 2,
         "`id` must be a string, not a number"),
        ([configure, #"{"at": 1, "event": "message", "id": "m1", "conversation": {"id": "c", "kind": "direct", "members": []}, "sender": {"id": "b", "name": "B"}}"#], 2,
         "`message` has no field `conversation.members`"),
    ])
    func mistakes(lines: [String], line: Int, message: String) {
        let failure = error(lines)
        #expect(failure == ReplayError(line: line, message: message))
    }

    @Test("line numbers count blank lines")
    func blankLines() {
        #expect(error([Self.configure, "", "  ", "{"])?.line == 4)
    }

    @Test("a valid trace with blank lines runs")
    func validWithBlanks() throws {
        let timeline = try Replay.timeline(forTrace: [Self.configure, "", Self.message, ""].joined(separator: "\n"))
        #expect(timeline.count == 2)
    }

    @Test("the binary prints the error on standard error, nothing on standard output, and exits 65")
    func binaryExit() async throws {
        let result = try await runHerald(["replay"], input: Self.configure + "\n" + #"{"at":1,"event":"tap","dy":-60}"# + "\n")
        #expect(result.status == 65)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "herald replay: stdin: line 2: `tap` has no field `dy`\n")
    }

    @Test("a trace file that cannot be read is a usage error")
    func missingFile() async throws {
        let result = try await runHerald(["replay", "/nonexistent/trace.jsonl"], input: "")
        #expect(result.status != 0)
        #expect(result.stderr.contains("cannot read /nonexistent/trace.jsonl"))
    }
}
