import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords

/// Who an entry reached and where they are connected, on every node: what the push decisions and the unread
/// reminders both ask of a round of the log.
struct Reach: Sendable {
    /// What one member's connections (on every node) say: whether one is in the foreground, and which devices are
    /// connected (those that said which device they are).
    struct Streams: Hashable, Sendable {
        var foreground = false
        var devices: Set<String> = []
    }

    let store: any ConversationStore
    let memberships: Memberships
    let hub: Hub
    /// The other nodes' connections (none for a node alone).
    let cluster: any ClusterPresence

    /// The members a message reached (members at its `seq`), but its sender.
    func recipients(of entry: IncomingMessage) async throws -> Set<String> {
        guard let seq = entry.message.seq else { return [] }
        let view = try await memberships.view(of: entry.conversation.id) {
            try await store.memberView(of: entry.conversation.id)
        }
        var reached = Set(view?.recipients(of: seq) ?? [])
        reached.remove(entry.message.senderID)
        return reached
    }

    /// The streams of each of `users`, on this node and the others (one trip to the database with several nodes).
    func streams(of users: Set<String>) async throws -> [String: Streams] {
        guard !users.isEmpty else { return [:] }
        let elsewhere = try await cluster.othersPresence(of: users)
        var streams: [String: Streams] = [:]
        for user in users {
            streams[user] = Streams(
                foreground: hub.hasForegroundConnection(userID: user) || elsewhere[user]?.foreground == true,
                devices: hub.connectedDevices(of: user).union(elsewhere[user]?.devices ?? []))
        }
        return streams
    }
}
