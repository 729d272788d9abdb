import Foundation

/// Runs `body` while `background` runs beside it as a child task: when `body` ends, by returning or by throwing,
/// `background` is cancelled and awaited, so nothing a test starts outlives it. An error `background` threw before it
/// was cancelled is thrown after `body`'s result, as the test's failure.
public func withBackground<T: Sendable>(
    _ background: @escaping @Sendable () async throws -> Void, _ body: () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            do {
                try await background()
            } catch where Task.isCancelled {
                // However it ended once told to end, it ended because it was told to.
            }
        }
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        group.cancelAll()
        do {
            try await group.waitForAll()
        } catch is CancellationError {
            // It ended because it was told to.
        } catch {
            if case .success = result { throw error }
        }
        return try result.get()
    }
}

/// ``withBackground(_:_:)`` with several tasks beside `body`.
public func withBackground<T: Sendable>(
    _ tasks: [@Sendable () async throws -> Void], _ body: () async throws -> T
) async throws -> T {
    guard let first = tasks.first else { return try await body() }
    return try await withBackground(first) { try await withBackground(Array(tasks.dropFirst()), body) }
}

/// A TCP port on loopback that was free a moment ago (bound and released), for a server a test must start again on
/// the same port, or a client made before its server.
public func freePort() throws -> Int {
    #if os(Linux)
    let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let socket = Foundation.socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard socket >= 0 else { throw ProcessFailure("socket failed: errno \(errno)") }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
        }
    }
    guard bound else { throw ProcessFailure("no free port: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
