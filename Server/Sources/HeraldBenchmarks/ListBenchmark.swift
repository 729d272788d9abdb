import Foundation
import HeraldClient
import HeraldNIOTransport
import HeraldServer
import Logging
import NIOConcurrencyHelpers

/// One user in very many conversations lists them all, several times at once, while another user posts: how long
/// the poster waits for each post, against the same posts with nobody listing. The server runs in this process on
/// a free port, with its database in a temporary file as in production.
public enum ListBenchmark {
    /// The shape of a run.
    public struct Options: Sendable {
        /// Conversations the busy user is in.
        public var conversations = 20_000
        /// Full listings running at once.
        public var listers = 4
        /// Posts measured in each phase.
        public var posts = 300
        /// The page size the listers ask for.
        public var pageSize = 100

        /// The shape: 20,000 conversations, 4 listings at once.
        public init() {}
    }

    /// What one run measured.
    public struct Report: Sendable {
        /// The shape.
        public var options: Options
        /// Post latency with nobody listing: p50, p99, max.
        public var quiet: (p50: Duration, p99: Duration, max: Duration)
        /// Post latency while the listings run.
        public var busy: (p50: Duration, p99: Duration, max: Duration)
        /// Full listings completed while the posts were measured, and the conversations each returned.
        public var listings: Int, listed: Int
        /// The mean time of one full listing.
        public var listingTime: Duration

        /// The report, for a terminal.
        public var text: String {
            func ms(_ duration: Duration) -> String { String(format: "%.2f ms", duration.seconds * 1000) }
            return """
                list: one user in \(options.conversations) conversations listing them \(options.listers) times at once \
                (pages of \(options.pageSize)), while another posts \(options.posts) messages one after another
                  post latency, nobody listing:  p50 \(ms(quiet.p50)), p99 \(ms(quiet.p99)), max \(ms(quiet.max))
                  post latency, while listing:   p50 \(ms(busy.p50)), p99 \(ms(busy.p99)), max \(ms(busy.max))
                  full listings meanwhile: \(listings) of \(listed) conversations each, \(ms(listingTime)) each
                """
        }
    }

    /// Runs the benchmark.
    public static func run(_ options: Options) async throws -> Report {
        var logger = Logger(label: "herald-bench")
        logger.logLevel = .error
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = ServerConfiguration()
        configuration.databasePath = folder.appendingPathComponent("bench.sqlite").path
        configuration.jwtSecret = UUID().uuidString + UUID().uuidString
        configuration.limits.postsPerSecond = 1_000_000
        configuration.limits.postBurst = 1_000_000
        configuration.limits.conversationsPerHour = 1_000_000
        return try await BenchmarkServer.run(configuration, logger: logger) { port, environment in
            try await measure(options, port: port, environment: environment)
        }
    }

    private static func measure(_ options: Options, port: Int, environment: ServerEnvironment) async throws -> Report {
        let store = environment.store
        for index in 0..<options.conversations {
            _ = try await store.createConversation(kind: .group, title: "Busy \(index)", memberIDs: ["busy", "peer-\(index % 50)"])
        }
        let poster = try await store.createConversation(kind: .direct, title: nil, memberIDs: ["poster", "friend"]).record
        let server = URL(string: "http://127.0.0.1:\(port)")!
        let busy = HeraldAPI(configuration: ClientConfiguration(
            server: server, token: try await environment.tokens.token(userID: "busy", name: "Busy"), transport: .nio()))
        let posterAPI = HeraldAPI(configuration: ClientConfiguration(
            server: server, token: try await environment.tokens.token(userID: "poster", name: "Poster"), transport: .nio()))

        func post(_ count: Int, tag: String) async throws -> [Duration] {
            try await Latencies.posts(count, by: posterAPI, to: poster.conversation.id, tag: tag)
        }

        _ = try await post(20, tag: "warm-up")
        let quiet = try await post(options.posts, tag: "quiet")

        let stop = ManagedAtomicFlag()
        return try await withThrowingTaskGroup(of: (listings: Int, listed: Int, time: Duration).self) { group in
            for _ in 0..<options.listers {
                group.addTask {
                    let clock = ContinuousClock()
                    var listings = 0, listed = 0
                    var time = Duration.zero
                    // Each lister lists the whole set again and again until the posts are measured, and at least once.
                    repeat {
                        let start = clock.now
                        var cursor: String?
                        var count = 0
                        repeat {
                            let page = try await busy.conversationPage(after: cursor, limit: options.pageSize)
                            count += page.conversations.count
                            cursor = page.next
                        } while cursor != nil
                        time += start.duration(to: clock.now)
                        listings += 1
                        listed = count
                    } while !stop.isSet
                    return (listings, listed, time)
                }
            }
            let busyLatencies = try await post(options.posts, tag: "busy")
            stop.set()
            var listings = 0, listed = 0
            var time = Duration.zero
            for try await result in group {
                listings += result.listings
                listed = result.listed
                time += result.time
            }
            return Report(
                options: options, quiet: Latencies.summary(quiet), busy: Latencies.summary(busyLatencies), listings: listings,
                listed: listed,
                listingTime: time / Swift.max(1, listings))
        }
    }
}

/// A flag set once, read from many tasks.
private final class ManagedAtomicFlag: Sendable {
    private let value = NIOLockedValueBox(false)
    var isSet: Bool { value.withLockedValue { $0 } }
    func set() { value.withLockedValue { $0 = true } }
}
