import Foundation
import HeraldServer
import Hummingbird
import JWTKit
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// A fake APNs for the benchmarks, on a free loopback port over plain HTTP/1.1 (the real one takes HTTP/2 over TLS;
/// the fake measures Herald's side, not the network's): it answers every push 200, counts them, and (when asked)
/// notes when each message's first push came.
final class LocalAPNs: Sendable {
    /// Pushes taken.
    let received = NIOLockedValueBox(0)
    /// For each message id, when its first push came.
    let arrivals = NIOLockedValueBox<[String: ContinuousClock.Instant]>([:])

    /// Runs `body` with a fake listening and APNs settings that send to it (a fresh key); stops it afterwards.
    /// With `noting`, each push's body is read for its message id (a cost the push benchmark does not want).
    static func run<T: Sendable>(
        noting: Bool = false, logger: Logger,
        _ body: @Sendable (LocalAPNs, APNsProvider.Settings) async throws -> T
    ) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("AuthKey.p8").path
        try ES256PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)

        let fake = LocalAPNs()
        let router = Router()
        router.post("3/device/:token") { request, _ -> HTTPResponse.Status in
            let bytes = try await request.body.collect(upTo: 64 * 1024)
            let now = ContinuousClock.now
            fake.received.withLockedValue { $0 += 1 }
            if noting, let json = try? JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any],
               let message = json["messageId"] as? String {
                fake.arrivals.withLockedValue { arrivals in
                    if arrivals[message] == nil { arrivals[message] = now }
                }
            }
            return .ok
        }
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { portSink.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let services = ServiceGroup(services: [application], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await services.run()
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw BenchmarkError("the fake APNs did not start") }
            let settings = APNsProvider.Settings(
                keyFile: keyFile, keyID: "BENCHKEY01", teamID: "BENCHTEAM1", topic: "bench.herald",
                url: "http://127.0.0.1:\(port)")
            let result: Result<T, any Error>
            do {
                result = .success(try await body(fake, settings))
            } catch {
                result = .failure(error)
            }
            await services.triggerGracefulShutdown()
            for try await _ in group {}
            return try result.get()
        }
    }
}
