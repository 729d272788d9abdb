import HeraldClient

/// What the benchmarks that measure one poster's wait share.
enum Latencies {
    /// The median, the 99th percentile and the longest of `latencies` (zeros when there are none).
    static func summary(_ latencies: [Duration]) -> (p50: Duration, p99: Duration, max: Duration) {
        let sorted = latencies.sorted()
        guard !sorted.isEmpty else { return (.zero, .zero, .zero) }
        func at(_ fraction: Double) -> Duration { sorted[Swift.min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
        return (at(0.5), at(0.99), sorted[sorted.count - 1])
    }

    /// Posts `count` messages to `conversation` one after another (ids `tag-0`, `tag-1`, …); how long each waited
    /// for its answer.
    static func posts(_ count: Int, by api: HeraldAPI, to conversation: String, tag: String) async throws -> [Duration] {
        let clock = ContinuousClock()
        var latencies: [Duration] = []
        for index in 0..<count {
            let start = clock.now
            _ = try await api.postMessage(in: conversation, text: "\(tag) \(index)", id: "\(tag)-\(index)")
            latencies.append(start.duration(to: clock.now))
        }
        return latencies
    }
}
