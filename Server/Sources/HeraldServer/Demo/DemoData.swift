import HeraldCore
import HeraldRecords

/// The demo: Alice, Bob and Charlie, a direct chat between each pair, a "Team Chat" group, a few messages, and a
/// phone for each (APNs, FCM, Expo), whose pushes the demo logs instead of sending: post as Alice in the page while
/// Bob has no page open, and the server's log shows the push Bob's phone would get.
public enum DemoData {
    /// The demo users.
    public static let people = [
        Person(id: "alice", displayName: "Alice Johnson"),
        Person(id: "bob", displayName: "Bob"),
        Person(id: "charlie", displayName: "Charlie Davis"),
    ]

    /// The demo people's phones.
    public static let phones = [
        DeviceRegistration(id: "alice-phone", userID: "alice", platform: .apns, token: String(repeating: "a1", count: 32)),
        DeviceRegistration(id: "bob-phone", userID: "bob", platform: .fcm, token: "demo-bob-phone:fcm"),
        DeviceRegistration(id: "charlie-phone", userID: "charlie", platform: .expo, token: "ExponentPushToken[demo-charlie]"),
    ]

    /// Creates the demo data, or finds it if it is already there (running `--demo` twice adds nothing).
    public static func seed(_ environment: ServerEnvironment) async throws {
        let store = environment.store
        for person in people {
            try await store.upsertUser(person)
        }
        for device in phones {
            try await store.registerDevice(device, limit: environment.configuration.limits.devicesPerUser)
        }
        let (alice, bob, charlie) = (people[0], people[1], people[2])
        let aliceBob = try await store.createConversation(kind: .direct, title: nil, memberIDs: ["alice", "bob"]).record
        let aliceCharlie = try await store.createConversation(kind: .direct, title: nil, memberIDs: ["alice", "charlie"]).record
        _ = try await store.createConversation(kind: .direct, title: nil, memberIDs: ["bob", "charlie"])
        let team: ConversationRecord
        if let existing = try await store.conversations(of: "alice", after: nil, limit: 100, filter: .all).summaries.first(where: {
            $0.record.conversation.kind == .group && $0.record.conversation.title == "Team Chat"
        }) {
            team = existing.record
        } else {
            team = try await store.createConversation(
                kind: .group, title: "Team Chat", memberIDs: ["alice", "bob", "charlie"]).record
        }
        let messenger = environment.messenger
        let script: [(String, ConversationRecord, Person, String)] = [
            ("demo-1", team, alice, "Morning all! Standup at 10?"),
            ("demo-2", team, charlie, "Works for me"),
            ("demo-3", aliceBob, bob, "Did you see the new designs?"),
            ("demo-4", aliceBob, alice, "Yes! The second one reads much better."),
            ("demo-5", aliceCharlie, charlie, "Lunch later?"),
        ]
        for (id, record, sender, text) in script {
            _ = try await messenger.post(
                to: record.conversation.id, clientID: id, text: text, imageURL: nil,
                by: Identity(userID: sender.id, name: sender.displayName, picture: nil))
        }
    }
}
