import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Runs `application` until SIGTERM or SIGINT, then stops it gracefully: it stops accepting, and what is in flight
/// finishes; what is left after `grace` is cancelled (and if cancelling takes more than 5 s, the process ends). A stop
/// that had to cut what was left says so in the log (a warning), as it is not what a graceful stop should need.
public func runUntilSignalled(_ application: some Service, grace: Duration, logger: Logger) async throws {
    let watch = GracefulStopWatch()
    // Listed after the application, the watch is the first told of the stop (a group stops its services in reverse).
    var configuration = ServiceGroupConfiguration(
        services: [application, watch], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    configuration.maximumGracefulShutdownDuration = grace
    configuration.maximumCancellationDuration = .seconds(5)
    try await ServiceGroup(configuration: configuration).run()
    if let began = watch.began, began.duration(to: .now) > grace {
        logger.warning("the graceful stop took longer than HERALD_SHUTDOWN_TIMEOUT (\(grace)): what was still running was cut")
    }
}

/// How long each last use of the database by a stopping service may take (the feed's and the decider's places, the
/// last confirmations and outcomes, the node's presence): with the database gone, the services, which stop one after
/// another, still end well within a grace period of 10 s.
let lastWriteLimit: Duration = .seconds(2)

/// Notes when the graceful stop began.
private final class GracefulStopWatch: Service {
    private let instant = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    var began: ContinuousClock.Instant? { instant.withLockedValue { $0 } }

    func run() async throws {
        try? await gracefulShutdown()
        instant.withLockedValue { $0 = .now }
    }
}
