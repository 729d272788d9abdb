import Foundation
import HeraldRecords
import Logging
import ServiceLifecycle

/// `HERALD_RETENTION`: messages and events older than ``keep`` are deleted from the database, for apps whose own
/// store is the record and Herald only relays (docs/integrate.md, "Retention").
///
/// Every tick (a tenth of the retention, between 100 ms and a minute) it deletes, in batches of
/// ``batch``, what is older, never an entry the push decider or the webhook feed (when they run) has not got to.
/// The highest seq it deleted is the horizon: a client catching up from before it gets what is kept, and a `ready`
/// that names the horizon.
struct Retention: Service {
    let store: any EntryStore
    /// How long entries are kept.
    let keep: Duration
    /// Whether the push decider runs (its place bounds what goes).
    let pushing: Bool
    /// Whether the webhook feed runs (its place bounds what goes).
    let webhooks: Bool
    let logger: Logger

    /// The most entries one transaction deletes.
    static let batch = 5_000

    func run() async throws {
        let tick = Duration.milliseconds(Int64(min(60, max(0.1, keep.seconds / 10)) * 1000))
        let readers = (pushing ? ["push"] : []) + (webhooks ? ["webhook"] : [])
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    var total = 0
                    while !Task.isCancelled {
                        let (deleted, _) = try await store.expireEntries(
                            before: Date().addingTimeInterval(-keep.seconds), limit: Self.batch, waitingFor: readers)
                        total += deleted
                        if deleted < Self.batch { break }
                    }
                    if total > 0 { logger.info("retention: entries deleted", metadata: ["count": "\(total)"]) }
                } catch {
                    if !Task.isCancelled { logger.warning("retention: entries not deleted", metadata: ["error": "\(error)"]) }
                }
                try? await Task.sleep(for: tick)
            }
        }
    }
}
