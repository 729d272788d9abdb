import ArgumentParser
import Foundation
import HeraldReplay

/// `herald replay [FILE]`: runs a trace through the notification engine in virtual time.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Run a trace (JSON Lines) through policy and banner engine in virtual time; print the timeline.",
        discussion: "The trace and timeline formats are in docs/replay.md."
    )

    @Argument(help: "The trace file; standard input when omitted.")
    var file: String?

    func run() throws {
        let text: String
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("cannot read \(file)")
            }
            text = String(decoding: data, as: UTF8.self)
        } else {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        do {
            let lines = try Replay.timeline(forTrace: text)
            guard Console.out(lines.map { $0 + "\n" }.joined()) else {
                Console.error("herald replay: the timeline could not be written to standard output\n")
                throw ExitCode.failure
            }
        } catch let error as ReplayError {
            Console.error("herald replay: \(file ?? "stdin"): \(error)\n")
            throw ExitCode(65)
        }
    }
}
