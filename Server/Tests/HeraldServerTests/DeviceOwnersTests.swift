import Foundation
import HeraldCore
import HeraldProtocol
@testable import HeraldRecords
@testable import HeraldSQLite
import HeraldTestSupport
import Logging
import Testing

/// The SQLite store's set of users with a device (what the push decider narrows a round to) against the devices
/// table itself.
@Suite("Who has a device, in the SQLite store's memory", .timeLimit(.minutes(2)))
struct DeviceOwnersTests {
    @Test("after each registration, token moved, removal, refusal and erasure the set is who has a device; read again at open")
    func keptWithTheDevices() async throws {
        var logger = Logger(label: "device-owners-test")
        logger.logLevel = .critical
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-owners-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("herald.sqlite").path
        let users = (0..<6).map { "u\($0)" }

        let store = try await SQLiteStore.open(path: path, logger: logger)
        let truth = try await withBackground({ try await store.database.run() }) { () -> Set<String> in
            for id in users + ["sender"] { try await store.upsertUser(Person(id: id, displayName: id)) }
            let group = try await store.createConversation(kind: .group, title: "All", memberIDs: users + ["sender"]).record.conversation
            let posted = try await store.post(MessageDraft(
                id: "m1", conversation: group, sender: Person(id: "sender", displayName: "sender"), text: "hi", imageURL: nil))
            guard case .stored(let message) = posted, let seq = message.seq else { throw StoreError.closing }

            var random = SplitMix(seed: 0xD0D5)
            var erased = Set<String>()
            var outcomes: [String: Int] = [:]
            for step in 0..<400 {
                let user = users[Int(random.next() % UInt64(users.count))]
                let device = "d\(random.next() % 3)"
                switch random.next() % 9 {
                case 0...4:
                    // Six tokens over six users' devices: a token often moves from one user to another.
                    let token = "t\(random.next() % 6)"
                    do {
                        try await store.registerDevice(
                            DeviceRegistration(id: device, userID: user, platform: .fcm, token: token), limit: 2)
                        outcomes["registered", default: 0] += 1
                    } catch StoreError.deviceLimit {
                        outcomes["over the limit", default: 0] += 1
                    } catch where erased.contains(user) {
                        outcomes["refused: erased", default: 0] += 1
                    }
                case 5...7:
                    if try await store.removeDevice(id: device, userID: user) { outcomes["removed", default: 0] += 1 }
                default:
                    // Now and then someone is erased (never the last two).
                    if step % 3 == 0, erased.count < users.count - 2, !erased.contains(user) {
                        _ = try await store.eraseUser(user)
                        erased.insert(user)
                        outcomes["erased", default: 0] += 1
                    }
                }
                let owners = try await Self.owners(in: store)
                #expect(store.deviceOwners.all == owners, "step \(step)")
                let targets = try await store.pushTargets(conversationID: group.id, seq: seq, among: Set(users))
                #expect(Set(targets.map(\.device.userID)) == owners, "step \(step): a push for everyone with a device")
            }
            // Every kind of change happened, and the last state has owners and users without a device.
            for outcome in ["registered", "over the limit", "refused: erased", "removed", "erased"] {
                #expect(outcomes[outcome, default: 0] > 0, "\(outcome): \(outcomes)")
            }
            let owners = try await Self.owners(in: store)
            #expect(!owners.isEmpty && owners.count < users.count, "\(owners)")
            return owners
        }

        let reopened = try await SQLiteStore.open(path: path, logger: logger)
        try await withBackground({ try await reopened.database.run() }) {
            #expect(reopened.deviceOwners.all == truth)
        }
    }

    /// Who has a device, as the devices table says.
    private static func owners(in store: SQLiteStore) async throws -> Set<String> {
        try await store.database.perform { connection in
            Set(try connection.query("SELECT DISTINCT user_id FROM devices").compactMap { $0.column("user_id")?.string })
        }
    }
}
