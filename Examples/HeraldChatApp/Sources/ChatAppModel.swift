// The example app's state: signing in (and again at launch, from the Keychain), the conversation list, the open chat,
// sending, the device's push token and push keys. APIs used, all available on iOS 17 and checked against Apple's
// documentation: Observation, URLSession.data(for:), Task, UserDefaults, UIApplication.registerForRemoteNotifications();
// the push key pair is HeraldPresentation's `PushKeyPair` (CryptoKit, iOS 13), kept by Keychain.swift.
#if os(iOS) || os(macOS)
import Foundation
import HeraldClient
import HeraldCore
import HeraldPresentation
import HeraldProtocol
import HeraldUI
import Observation
#if os(iOS)
import UIKit
#endif

/// Everything the example app knows: the server, who is signed in, the chats and the open one's messages.
@MainActor
@Observable
final class ChatAppModel {
    /// Where `herald serve --demo` runs (a simulator reaches the Mac's loopback).
    var server = "http://127.0.0.1:8080"
    /// The signed-in person and their connection, once signed in.
    private(set) var session: Session?
    /// The chats, newest activity first.
    private(set) var conversations: [WireConversationSummary] = []
    /// The open chat's messages, oldest first.
    private(set) var messages: [WireMessage] = []
    /// The open chat; ``open(_:)`` changes it.
    private(set) var openConversationID: String?
    /// What went wrong last, for the sign-in screen.
    private(set) var problem: String?

    /// A signed-in person: their id and name, the client and the live notifications.
    struct Session {
        let userID: String
        let name: String
        let client: HeraldClient
        let live: LiveNotifications<ContinuousClock>
    }

    /// The system's notifications, owned by the app (its delegate made them at launch).
    let systemNotifications: HeraldSystemNotifications

    init(system: HeraldSystemNotifications) {
        systemNotifications = system
    }

    /// Opens a chat (nil: back to the list); the engine and the server both learn it.
    func open(_ conversationID: String?) {
        openConversationID = conversationID
        session?.live.open(conversationID)
    }

    /// Signs in as a demo person: the demo server mints the token (`POST /v1/demo/tokens`).
    func signIn(as userID: String) async {
        problem = nil
        guard let base = URL(string: server) else {
            problem = "Not a URL: \(server)"
            return
        }
        do {
            var request = URLRequest(url: base.appending(path: "v1/demo/tokens"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONEncoder().encode(["user": userID])
            let (data, response) = try await URLSession.shared.data(for: request)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                problem = "The server did not give a demo token (is it running with --demo?)"
                return
            }
            struct Minted: Decodable {
                struct User: Decodable { let id: String; let name: String }
                let token: String
                let user: User
            }
            let minted = try JSONDecoder().decode(Minted.self, from: data)
            let saved = SavedSignIn(server: base, token: minted.token, userID: minted.user.id, name: minted.user.name)
            AppKeychain.signIn.save(saved)
            start(saved)
            await refresh()
        } catch {
            problem = "Cannot reach \(server): \(error.localizedDescription)"
        }
    }

    /// Signs in again as the person the Keychain kept, if any and nobody is signed in.
    func restore() {
        guard session == nil, let saved = AppKeychain.signIn.load() else { return }
        server = saved.server.absoluteString
        start(saved)
        Task { await refresh() }
    }

    /// The session of a signed-in person: the client, the live notifications, the notification permission, and the
    /// conversations of notifications tapped meanwhile (opened now, once).
    private func start(_ saved: SavedSignIn) {
        var configuration = ClientConfiguration(server: saved.server, token: saved.token)
        // The stream names this device, so the server sends it no push for what the app shows itself.
        configuration.deviceID = Self.deviceID
        let client = HeraldClient(configuration: configuration)
        let live = LiveNotifications(client: client, userID: saved.userID)
        session = Session(userID: saved.userID, name: saved.name, client: client, live: live)
        systemNotifications.opens.attach { [weak self] conversationID in self?.open(conversationID) }
        Task {
            let granted = await systemNotifications.requestAuthorization()
            live.setPermission(granted: granted)
            #if os(iOS)
            // The token comes to the app delegate, which hands it to ``register(apnsToken:)``.
            if granted { UIApplication.shared.registerForRemoteNotifications() }
            #endif
        }
    }

    /// This installation's device id: made once, kept in the app's defaults.
    static var deviceID: String {
        let key = "herald.deviceID"
        if let id = UserDefaults.standard.string(forKey: key) { return id }
        let id = UUID().uuidString.lowercased()
        UserDefaults.standard.set(id, forKey: key)
        return id
    }

    /// Registers this device's APNs token with Herald, so the signed-in person gets pushes here when away, with the
    /// public half of its push key pair, so a server that encrypts pushes (`HERALD_PUSH_CONTENT=encrypted`) encrypts
    /// them to this device.
    func register(apnsToken token: String) async {
        guard let session else { return }
        // The pair is kept where the extension reads it before its public half is registered (a push encrypted to it
        // may come at once); one that cannot be kept is not registered, and the server withholds the words instead.
        let keys = PushKeyKeeping.pair(
            load: { AppKeychain.pushKeys.load()?.raw }, save: { AppKeychain.pushKeys.save(SavedPushKeys(raw: $0)) })
        guard let registered = try? await session.client.api.registerDevice(
            Self.deviceID, platform: .apns, token: token, keys: keys.map { WirePushKeys($0) })
        else { return }
        // For the extension: a private push (the server's HERALD_PUSH_CONTENT) is filled in with it, and a
        // communication notification names this person as its recipient.
        AppKeychain.deviceKey.save(SavedDeviceKey(
            server: session.client.api.configuration.server, key: registered.deviceKey, userID: session.userID,
            name: session.name))
    }

    /// Follows the stream's events: new messages refresh the list and the open chat.
    func follow() async {
        guard let session else { return }
        for await event in session.client.events() {
            switch event {
            case .message(let incoming):
                if incoming.message.conversationID == openConversationID { await loadMessages() }
                await refresh()
            case .state(.live), .acknowledged, .level, .notificationSettings:
                // (A level or the settings change which chats count towards the badge.)
                await refresh()
            default:
                break
            }
        }
    }

    /// Reads the chats (with unread counts) and sets the app's badge to their total.
    func refresh() async {
        guard let session else { return }
        conversations = (try? await session.client.api.conversations()) ?? conversations
        await systemNotifications.setBadge(conversations.filter { !$0.muted }.reduce(0) { $0 + $1.unreadCount })
    }

    /// Reads the open chat's latest messages and marks them read.
    func loadMessages() async {
        guard let session, let openConversationID else { return }
        messages = (try? await session.client.api.messages(in: openConversationID)) ?? []
        if let last = messages.last?.seq {
            try? await session.client.api.markRead(openConversationID, upTo: last)
        }
    }

    /// Sends `text` to the open chat; the client retries it across reconnects until it is stored.
    func send(_ text: String) {
        guard let session, let openConversationID, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return }
        session.client.send(text, to: openConversationID)
    }

    /// The name to show for a chat: a group's title, or the other person's name.
    func name(of summary: WireConversationSummary) -> String {
        let conversation = summary.conversation
        if conversation.kind == .group { return ContentFormatter.standard.groupTitle(of: conversation.conversation) }
        let other = conversation.people.first { $0.id != session?.userID }
        return other?.name ?? conversation.members.first { $0 != session?.userID } ?? "Chat"
    }

    /// Signs out: this device gets no more pushes for the person, and the stream stops with the view that ran it.
    func signOut() {
        if let session {
            Task { try? await session.client.api.removeDevice(Self.deviceID) }
        }
        systemNotifications.opens.detach()
        AppKeychain.signIn.delete()
        AppKeychain.deviceKey.delete()
        AppKeychain.pushKeys.delete()
        session = nil
        conversations = []
        messages = []
        open(nil)
    }
}
#endif
