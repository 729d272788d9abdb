import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// HTTP to URLs that users gave (a browser's Web Push endpoint): each request's host is resolved once, every address
/// it has is judged by the ``AddressPolicy``, and the connection is made to the first of them, not to whatever a second
/// lookup would say. TLS still checks the certificate for the URL's host name (it is sent as SNI), and redirects are
/// never followed.
///
/// The pinning is async-http-client's `dnsOverride` (the host is connected to at the judged address, its certificate
/// checked for its name), which is a client's setting: a client is kept for each (host, address) pair in use, at most
/// ``capacity`` idle ones, the least recently used closed first.
final class GuardedHTTP: Sendable {
    /// Looks a host name up: its addresses, in the order to try them.
    typealias Resolver = @Sendable (String) async throws -> [IPAddress]

    /// Why a request was not sent: the URL's host or one of its addresses is not allowed, or it has none.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// How many idle clients are kept.
    static let capacity = 32

    let policy: AddressPolicy
    private let configuration: HTTPClient.Configuration
    private let timeout: TimeAmount
    private let resolve: Resolver
    private let clients = NIOLockedValueBox(PinnedClients(capacity: GuardedHTTP.capacity))

    init(policy: AddressPolicy, configuration: HTTPClient.Configuration, timeout: TimeAmount, resolver: @escaping Resolver) {
        self.policy = policy
        var configuration = configuration
        configuration.redirectConfiguration = .disallow
        self.configuration = configuration
        self.timeout = timeout
        resolve = resolver
    }

    /// The address to connect to for `url`'s host: the literal itself, or the first address the name resolves to,
    /// once every address it resolves to was judged.
    ///
    /// - Throws: ``Refusal`` when the host or an address is not allowed, or the name does not resolve.
    func address(for url: URL) async throws -> (host: String, address: IPAddress) {
        guard let host = url.host, !host.isEmpty else { throw Refusal(description: "the URL has no host") }
        if let problem = policy.problem(withHost: host) { throw Refusal(description: "the host \(problem)") }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let literal = IPAddress(bare) { return (host, literal) }
        let addresses: [IPAddress]
        do {
            addresses = try await resolve(bare)
        } catch {
            throw Refusal(description: "\(bare) could not be resolved")
        }
        guard let first = addresses.first else { throw Refusal(description: "\(bare) could not be resolved") }
        for address in addresses {
            if let problem = policy.problem(with: address) {
                throw Refusal(description: "\(bare) resolves to an address that is not allowed: it \(problem)")
            }
        }
        return (bare, first)
    }

    /// Sends a request to `url` at an address the policy allows, and reads its answer.
    ///
    /// - Throws: ``Refusal`` before connecting anywhere when the policy refuses; the client's errors otherwise.
    func send(_ method: HTTPMethod, _ url: URL, headers: [(String, String)], body: Data) async throws -> PushHTTP.Answer {
        let (host, address) = try await address(for: url)
        let key = PinnedClients.Key(host: host, address: address)
        let client = clients.withLockedValue { $0.checkOut(key) } ?? adopt(key)
        defer {
            let retired = clients.withLockedValue { $0.checkIn(key) }
            for client in retired { client.shutdown { _ in } }
        }
        return try await PushHTTP.execute(
            on: client, method, url.absoluteString, headers: headers, body: body, timeout: timeout)
    }

    /// A new client for `key`, taken into the pool (or the one another request put there meanwhile).
    private func adopt(_ key: PinnedClients.Key) -> HTTPClient {
        var configuration = configuration
        // A literal needs no override: it is connected to as it is.
        if IPAddress(key.host) == nil { configuration.dnsOverride = [key.host: key.address.description] }
        let fresh = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let (client, surplus) = clients.withLockedValue { $0.adopt(fresh, for: key) }
        if let surplus { surplus.shutdown { _ in } }
        return client
    }

    /// How many clients are open (for tests).
    var openClients: Int { clients.withLockedValue { $0.count } }

    /// Closes every client.
    func shutdown() async {
        for client in clients.withLockedValue({ $0.removeAll() }) {
            try? await client.shutdown()
        }
    }

    /// The system's resolver (`getaddrinfo` on a thread of NIO's pool), with only the address families this machine
    /// has configured (`AI_ADDRCONFIG`), in the order it gives.
    static let systemResolver: Resolver = { host in
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            #else
            hints.ai_socktype = SOCK_STREAM
            #endif
            hints.ai_flags = AI_ADDRCONFIG
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
            defer { freeaddrinfo(first) }
            var addresses: [IPAddress] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let info = cursor {
                if let socket = info.pointee.ai_addr {
                    switch Int32(socket.pointee.sa_family) {
                    case AF_INET:
                        socket.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                            var raw = v4.pointee.sin_addr
                            addresses.append(IPAddress(bytes: withUnsafeBytes(of: &raw) { Array($0) }))
                        }
                    case AF_INET6:
                        socket.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                            var raw = v6.pointee.sin6_addr
                            addresses.append(IPAddress(bytes: withUnsafeBytes(of: &raw) { Array($0) }))
                        }
                    default:
                        break
                    }
                }
                cursor = info.pointee.ai_next
            }
            var seen: Set<IPAddress> = []
            return addresses.filter { seen.insert($0).inserted }
        }
    }
}

/// The clients of a ``GuardedHTTP``, one per (host, address) in use: which are busy, which are idle and in what
/// order they were last used. A value with no I/O; the caller shuts down what it hands back.
struct PinnedClients {
    struct Key: Hashable {
        var host: String
        var address: IPAddress
    }

    private struct Entry {
        var client: HTTPClient
        var users: Int
        var lastUsed: UInt64
    }

    let capacity: Int
    private var entries: [Key: Entry] = [:]
    private var clock: UInt64 = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { entries.count }

    /// The client for `key`, marked busy, if there is one.
    mutating func checkOut(_ key: Key) -> HTTPClient? {
        guard var entry = entries[key] else { return nil }
        clock += 1
        entry.users += 1
        entry.lastUsed = clock
        entries[key] = entry
        return entry.client
    }

    /// Takes `client` for `key`, busy; if another came first, that one is used and `client` handed back as surplus.
    mutating func adopt(_ client: HTTPClient, for key: Key) -> (client: HTTPClient, surplus: HTTPClient?) {
        if let existing = checkOut(key) { return (existing, client) }
        clock += 1
        entries[key] = Entry(client: client, users: 1, lastUsed: clock)
        return (client, nil)
    }

    /// Marks one use of `key` over; hands back the idle clients to close while more than ``capacity`` are open.
    mutating func checkIn(_ key: Key) -> [HTTPClient] {
        entries[key]?.users -= 1
        guard entries.count > capacity else { return [] }
        let idle = entries.filter { $0.value.users == 0 }.sorted { $0.value.lastUsed < $1.value.lastUsed }
        var retired: [HTTPClient] = []
        for (key, entry) in idle.prefix(entries.count - capacity) {
            entries.removeValue(forKey: key)
            retired.append(entry.client)
        }
        return retired
    }

    /// Every client, all removed.
    mutating func removeAll() -> [HTTPClient] {
        defer { entries = [:] }
        return entries.values.map(\.client)
    }
}
