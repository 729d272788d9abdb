import Foundation
import HeraldCore
import HeraldProtocol
import HeraldServer
import HeraldTestSupport
import Testing

/// The app's backend, played by a Python program with no Herald code (Tests/Backend/backend.py), against the real
/// server: what members' streams, banners and phones get is what the user API would have given them.
@Suite("The app's backend in Python", .timeLimit(.minutes(3)))
struct ServiceBackendTests {
    static let backend = packageRoot.appendingPathComponent("Tests/Backend/backend.py")

    /// Runs the backend's `phase` against `port`; its output lines.
    static func runBackend(_ phase: String, port: Int) async throws -> [String] {
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", backend.path, phase, "http://127.0.0.1:\(port)", ServiceTests.key])
        guard result.status == 0 else {
            throw TestFailure("backend.py \(phase) failed (\(result.status)): \(result.stderr)\(result.stdout)")
        }
        return result.stdout.split(separator: "\n").map(String.init)
    }

    @Test("users made before they sign in, a chat with the app's id, a post on a member's behalf, a silent and a plain system message, a member added: streams, banners and pushes",
          arguments: StoreKind.available)
    func backendDrivesHerald(kind: StoreKind) async throws {
        let keys = try ServiceKeys([ServiceTests.key])
        try await kind.withServerDatabase { database in
            try await PushHarness.run(configure: { configuration in
                configuration.serviceKeys = keys
                configuration.postgresURL = database["HERALD_POSTGRES_URL"] ?? nil
            }) { harness in
                try await backendDrivesHerald(harness)
            }
        }
    }

    private func backendDrivesHerald(_ harness: PushHarness) async throws {
        let server = harness.server
        _ = try await Self.runBackend("users", port: server.port)
        // The backend made them: they can be found by name before they ever signed in.
        #expect(try await server.environment.store.user(id: "carol")?.displayName == "Carol")

        // Alice has the app open on her list; Bob, Carol and Dave are away, each with a phone.
        let tokens = server.environment.tokens
        var people: [String: String] = [:]
        for id in ["alice", "bob", "carol", "dave"] {
            people[id] = try await tokens.token(userID: id, name: id.capitalized, picture: "https://example.com/\(id).png")
        }
        let phones = ["bob": PushHarness.apnsToken(0xB0B), "carol": PushHarness.apnsToken(0xCA201), "dave": PushHarness.apnsToken(0xDA7E)]
        for (id, phone) in phones {
            try await harness.register(people[id]!, device: "\(id)-phone", platform: "apns", pushToken: phone)
        }
        let socket = try await server.stream(people["alice"]!)
        var reader = FrameReader(socket)
        _ = try await reader.untilReady()

        let stored = try await Self.runBackend("chat", port: server.port)
        #expect(stored.count == 4, "\(stored)")

        // Alice's stream: each entry once, in order, as a member's post would be; her banners follow the policy.
        var entries: [(message: Message, sender: String?)] = []
        while entries.count < 4 {
            guard let text = await reader.nextText() else { throw TestFailure("Alice's stream ended") }
            let frame = try WireJSON.decoder().decode(StreamFrame.self, from: Data(text.utf8))
            if frame.type == "message", let message = frame.message {
                entries.append((message.message, frame.sender?.name))
            }
        }
        #expect(entries.map(\.message.id).prefix(3) == ["bob-1", "note-1", "note-2"])
        #expect(entries[0].message.senderID == "bob" && entries[0].sender == "Bob")
        #expect(entries[1].message.isSystem && entries[1].message.silent)
        #expect(entries[2].message.isSystem && !entries[2].message.silent)
        #expect(entries[3].message.event?.kind == .memberAdded && entries[3].message.isSystem)
        let seqs = entries.compactMap(\.message.seq)
        #expect(seqs == seqs.sorted() && Set(seqs).count == 4)
        let onHerList = DeviceState(appState: .foreground)
        let deliveries = entries.map {
            NotificationPolicy.delivery(for: $0.message, in: .group, to: "alice", on: onHerList, alreadySeen: false)
        }
        #expect(deliveries == [.banner, .skip(.silent), .banner, .skip(.quiet)])
        let shipped = IncomingMessage(
            message: entries[2].message, conversation: Conversation(id: "order-42", kind: .group, title: "Order 42"),
            sender: Person(id: "", displayName: ""))
        let banner = ContentFormatter.standard.banner(for: shipped, viewer: "alice")
        #expect(banner.title == "Admin" && banner.subtitle == "in Order 42" && banner.body == "Your order has shipped")

        // Phones: Carol hears of Bob's message and the system message; Bob of the system message only (his own is
        // not pushed to him); Dave that he was added. Nobody of the silent one.
        try await harness.eventually("Dave's push that he was added") { !harness.apns(phones["dave"]!).isEmpty }
        try await harness.eventually("Carol's two pushes") { harness.apns(phones["carol"]!).count >= 2 }
        try await harness.eventually("Bob's push") { !harness.apns(phones["bob"]!).isEmpty }
        func pushed(_ id: String) -> [String] { harness.apns(phones[id]!).compactMap(\.messageID) }
        // Two pushes to one phone may be sent side by side: they arrive in either order.
        #expect(pushed("carol").sorted() == ["bob-1", "note-2"])
        #expect(pushed("bob") == ["note-2"])
        #expect(pushed("dave").count == 1)
        let carols = harness.apns(phones["carol"]!).compactMap(\.json)
        let alerts = carols.compactMap { ($0["aps"] as? [String: Any])?["alert"] as? [String: Any] }
        // The backend's message is worded apart from any person's: the group's title, the text alone.
        #expect(alerts.map { "\($0["title"] as? String ?? ""): \($0["body"] as? String ?? "")" }.sorted()
                == ["New message in Order 42: Bob: Is my order on its way?", "Order 42: Your order has shipped"])
        let daves = harness.apns(phones["dave"]!).compactMap(\.json)
        let davesAlert = (daves.first?["aps"] as? [String: Any])?["alert"] as? [String: Any]
        #expect(davesAlert?["body"] as? String == "Admin added you to Order 42")
    }
}

/// A stream frame, as a client decodes it.
private struct StreamFrame: Decodable {
    struct Sender: Decodable {
        var id: String
        var name: String
    }

    var type: String
    var message: WireMessage?
    var sender: Sender?
}
