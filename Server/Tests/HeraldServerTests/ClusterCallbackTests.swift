import Foundation
@testable import HeraldRecords
@testable import HeraldServer
import NIOConcurrencyHelpers
import Testing

/// What a node tells its own streams of each push, read from a lock's box at every push: reading it must not wrap the
/// callback again (a closure kept directly in the box gained a thunk a read, and a node alone overflowed its stack
/// after some 60,000 pushes).
@Suite("A node's callbacks", .timeLimit(.minutes(1)))
struct ClusterCallbackTests {
    @Test("a node alone tells its streams of 300,000 pushes, each through the callback it was given")
    func manyPushes() async throws {
        let node = SingleNode(databasePath: ":memory:")
        let told = NIOLockedValueBox(0)
        node.listen(erased: { _ in }, pushed: { _ in told.withLockedValue { $0 += 1 } })
        let notice = PushedNotice(user: "bob", device: "phone", conversation: "c", message: "m", seq: 1)
        for _ in 0..<300_000 { await node.announce(notice) }
        #expect(told.withLockedValue { $0 } == 300_000)
    }
}
