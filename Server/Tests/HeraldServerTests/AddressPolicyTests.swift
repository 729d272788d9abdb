import AsyncHTTPClient
import Foundation
@testable import HeraldServer
import HeraldTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Where Herald connects on a user's say-so (Web Push endpoints): every host and address form judged by one policy,
/// and the connection made to the address that was judged.
@Suite("The address policy and the guarded connection", .timeLimit(.minutes(1)))
struct AddressPolicyTests {
    let policy = AddressPolicy(allowPrivate: false)

    @Test("public hosts and addresses pass")
    func publicOnes() {
        for host in ["fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", "8.8.8.8",
                     "[2001:4860:4860::8888]", "2606:4700:4700::1111", "push.example.com.", "[::ffff:8.8.8.8]"] {
            #expect(policy.problem(withHost: host) == nil, "\(host)")
        }
    }

    @Test("every IPv4 form that is not public unicast is refused, and so is any spelling but the dotted quad")
    func ipv4Forms() {
        for host in ["127.0.0.1", "127.8.9.10", "0.0.0.0", "10.1.2.3", "100.64.0.1", "169.254.169.254", "172.16.0.1",
                     "172.31.255.255", "192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1",
                     "198.51.100.1", "203.0.113.9", "224.0.0.1", "239.1.1.1", "240.0.0.1", "255.255.255.255",
                     // Numbers that browsers and getaddrinfo read as addresses.
                     "127.1", "2130706433", "0x7f.0.0.1", "0x7f000001", "017700000001", "127.0.0.1."] {
            #expect(policy.problem(withHost: host) != nil, "\(host)")
        }
    }

    @Test("every IPv6 form is parsed: zone ids, embedded IPv4, NAT64, 6to4, Teredo, site-local and the rest are refused")
    func ipv6Forms() {
        for host in ["[::1]", "[::]", "[fe80::1]", "[fe80::1%lo]", "[fe80::1%25lo]", "fe80::1%eth0", "[fd00::1]",
                     "[fc00::1]", "[fec0::1]", "[ff02::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
                     "[::ffff:0:127.0.0.1]", "[::ffff:169.254.169.254]", "[64:ff9b::a9fe:a9fe]", "[64:ff9b::808:808]",
                     "[64:ff9b:1::1]", "[2002:7f00:1::1]", "[2002:0808:0808::1]", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
                     "[2001:db8::1]", "[3fff::1]", "[100::1]", "[5f00::1]", "[::ffff:10.0.0.1]", "[not:an:address]"] {
            #expect(policy.problem(withHost: host) != nil, "\(host)")
        }
    }

    @Test("names that are local by definition are refused as written")
    func localNames() {
        for host in ["localhost", "LOCALHOST.", "a.localhost", "printer.local", "metadata.google.internal", "nas.home.arpa",
                     "intranet", "box.lan", "host.localdomain", "a..b"] {
            #expect(policy.problem(withHost: host) != nil, "\(host)")
        }
        #expect(AddressPolicy(allowPrivate: true).problem(withHost: "127.0.0.1") == nil)
    }

    @Test("a name that resolves to any address not allowed is refused, without connecting anywhere")
    func resolvedAddresses() async throws {
        let listener = try await ConnectionCounter.start()
        defer { listener.stop() }
        for answer in [["127.0.0.1"], ["8.8.8.8", "127.0.0.1"], ["::ffff:127.0.0.1"], ["64:ff9b::7f00:1"], ["fe80::1"], []] {
            let http = try PushHTTP(caFile: nil, policy: policy, resolver: { _ in answer.compactMap(IPAddress.init) })
            let url = try #require(URL(string: "https://rebind.example.com:\(listener.port)/push"))
            await #expect(throws: GuardedHTTP.Refusal.self, "\(answer)") {
                _ = try await http.guarded.send(.POST, url, headers: [], body: Data())
            }
            await http.shutdown()
        }
        #expect(listener.accepted == 0)
    }

    @Test("the connection goes to the address that was judged: a name no resolver knows reaches the fake, by its own name")
    func pinned() async throws {
        let certificate = try await TestCertificate.make()
        defer { certificate.remove() }
        try await FakePushService.run(certificate: certificate) { fake in
            let lookups = NIOLockedValueBox<[String]>([])
            // `push.invalid` cannot resolve (RFC 6761): only the address this resolver gave can have been used.
            let http = try PushHTTP(
                caFile: certificate.certificatePath, policy: AddressPolicy(allowPrivate: true),
                resolver: { host in
                    lookups.withLockedValue { $0.append(host) }
                    return [IPAddress("127.0.0.1")!]
                })
            let url = try #require(URL(string: "https://push.invalid:\(fake.port)/push/pinned"))
            let answer = try await http.guarded.send(.POST, url, headers: [], body: Data("hi".utf8))
            #expect(answer.status.code == 201)
            _ = try await http.guarded.send(.POST, url, headers: [], body: Data("again".utf8))
            #expect(lookups.withLockedValue { $0 } == ["push.invalid", "push.invalid"], "resolved once for each request")
            #expect(http.guarded.openClients == 1, "one client for the one (host, address)")
            let requests = fake.requests(to: "/push/pinned")
            #expect(requests.count == 2)
            #expect(requests.first?.authority == "push.invalid:\(fake.port)", "the request names the host, not the address")
            await http.shutdown()
        }
    }

    @Test("idle clients beyond the capacity are closed, least recently used first; busy ones never")
    func pinnedClientsCapacity() throws {
        var pool = PinnedClients(capacity: 2)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        func key(_ n: Int) -> PinnedClients.Key { .init(host: "h\(n).example.com", address: IPAddress("8.8.8.\(n)")!) }
        let clients = (0..<4).map { _ in AsyncHTTPClient.HTTPClient(eventLoopGroupProvider: .shared(group)) }
        defer { for client in clients { try? client.syncShutdown() } }
        for n in 0..<3 { _ = pool.adopt(clients[n], for: key(n)) }
        #expect(pool.checkIn(key(1)).isEmpty == false, "three open, one idle: the idle one goes")
        #expect(pool.count == 2)
        #expect(pool.checkOut(key(1)) == nil)
        let (kept, surplus) = pool.adopt(clients[3], for: key(0))
        #expect(kept === clients[0] && surplus === clients[3], "one client per key")
        #expect(pool.checkIn(key(0)).isEmpty, "two open: nothing to close")
    }
}

/// A TCP listener on 127.0.0.1 that counts the connections made to it and says nothing.
final class ConnectionCounter: Sendable {
    let port: Int
    private let channel: any Channel
    private let count: NIOLockedValueBox<Int>

    private init(port: Int, channel: any Channel, count: NIOLockedValueBox<Int>) {
        self.port = port
        self.channel = channel
        self.count = count
    }

    var accepted: Int { count.withLockedValue { $0 } }

    static func start() async throws -> ConnectionCounter {
        let count = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                count.withLockedValue { $0 += 1 }
                return child.close()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ConnectionCounter(port: channel.localAddress?.port ?? 0, channel: channel, count: count)
    }

    func stop() {
        channel.close(promise: nil)
    }
}
