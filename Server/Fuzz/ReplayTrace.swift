import Foundation
import HeraldReplay

/// `herald replay`: a trace parsed and, when it parses, run through the engine.
enum ReplayTraceTarget {
    static func run(_ data: Data) {
        _ = try? Replay.timeline(forTrace: String(decoding: data, as: UTF8.self))
    }
}
