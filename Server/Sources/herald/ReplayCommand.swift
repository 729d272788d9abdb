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
            FileHandle.standardOutput.write(Data(lines.map { $0 + "\n" }.joined().utf8))
        } catch let error as ReplayError {
            FileHandle.standardError.write(Data("herald replay: \(file ?? "stdin"): \(error)\n".utf8))
            throw ExitCode(65)
        }
    }
}
