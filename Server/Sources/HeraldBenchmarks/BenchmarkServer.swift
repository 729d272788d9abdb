import HeraldServer
import Logging
import ServiceLifecycle

/// The real Herald application in this process, on a free port, for the length of one benchmark.
enum BenchmarkServer {
    /// Starts a server with `configuration` (its port is set to 0), runs `body` with the port it listens on and its
    /// environment, and stops it gracefully, whether `body` succeeded or not.
    static func run<T: Sendable>(
        _ configuration: ServerConfiguration,
        logger: Logger,
        _ body: @Sendable (_ port: Int, _ environment: ServerEnvironment) async throws -> T
    ) async throws -> T {
        var configuration = configuration
        configuration.port = 0
        let environment = try await ServerEnvironment.make(configuration, logger: logger)
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        let app = buildApplication(environment, logger: logger) { portSink.yield($0) }
        let services = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)

        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await services.run()
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw BenchmarkError("the server did not start") }
            let result: Result<T, any Error>
            do {
                result = .success(try await body(port, environment))
            } catch {
                result = .failure(error)
            }
            await services.triggerGracefulShutdown()
            for try await _ in group {}
            return try result.get()
        }
    }
}

/// The benchmarks' logger.
enum BenchmarkLogger {
    /// Errors only: a benchmark's output is its figures.
    static var quiet: Logger {
        var logger = Logger(label: "herald-bench")
        logger.logLevel = .error
        return logger
    }
}
