// The Notification Service Extension of the example app: it turns a Herald message push into an iOS communication
// notification, the sender's picture and name beside the message and the group's name above it. iOS 17 (the
// app's floor; the APIs are iOS 15: UNNotificationContent.updating(from:), INSendMessageIntent's initializer of
// iOS 14), UserNotifications and Intents; the decisions (what the push says, which picture may load) are
// HeraldPresentation's `CommunicationNotification`, tested on Linux.
//
// A private push (the server's HERALD_PUSH_CONTENT is `sender` or `none`) is filled in first: the words are fetched
// with the device key the app kept (HeraldAPI.pushedMessage, which reads only what was pushed to this device), and
// decided by HeraldPresentation's `WithheldPush`. UNMutableNotificationContent's title, body and userInfo (iOS 10).
//
// Not part of the app package (an app package has no extension targets): in Xcode, add a Notification Service
// Extension target to the app, put this file and the app's Keychain.swift in it with HeraldPresentation,
// HeraldClient and HeraldURLSession as its dependencies, give the app the Communication Notifications capability,
// give the app and the extension the Keychain Sharing capability with the same group first, and list
// `INSendMessageIntent` under the extension's NSExtension › NSExtensionAttributes › IntentsSupported. Herald sends
// every alert with `mutable-content: 1`, so iOS hands each one to this extension first. On any failure the alert is
// shown as it came.
#if os(iOS) || os(macOS)
import Foundation
import HeraldClient
import HeraldPresentation
import HeraldURLSession
import Intents
import UserNotifications

final class NotificationService: UNNotificationServiceExtension {
    /// The push being worked on: answered once, by the work or by the time limit.
    private var delivery: Delivery?

    override func didReceive(
        _ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void
    ) {
        let delivery = Delivery(original: request.content, handler: contentHandler)
        self.delivery = delivery
        let withheld = WithheldPush(userInfo: request.content.userInfo)
        Task { await delivery.deliver(filling: withheld) }
    }

    /// `content` with the words a private push left out, fetched with the device key; `content` itself when there
    /// is no key or the server refuses (the generic "New message" is shown).
    static func filledIn(_ content: UNNotificationContent, _ withheld: WithheldPush) async -> UNNotificationContent {
        guard let saved = AppKeychain.deviceKey.load(),
              let answer = try? await HeraldAPI.pushedMessage(
                  withheld.messageID, in: withheld.conversationID, deviceKey: saved.key, server: saved.server,
                  http: URLSessionHTTPTransport(), timeout: .seconds(10)),
              let filled = withheld.filled(title: answer.title, body: answer.body, data: answer.data, userInfo: content.userInfo),
              let mutable = content.mutableCopy() as? UNMutableNotificationContent
        else { return content }
        if let title = filled.title { mutable.title = title }
        mutable.body = filled.body
        mutable.userInfo = filled.userInfo
        return mutable
    }

    override func serviceExtensionTimeWillExpire() {
        // About 30 seconds are up: the alert as it came (the picture took too long).
        delivery?.finishWithOriginal()
    }

    /// `content` as a message from `parts`' sender, or `content` itself if iOS will not have it.
    static func communicationNotification(
        _ content: UNNotificationContent, _ parts: CommunicationNotification
    ) async -> UNNotificationContent {
        let sender = INPerson(
            personHandle: INPersonHandle(value: parts.senderID, type: .unknown),
            nameComponents: nil,
            displayName: parts.senderName,
            image: await picture(parts.senderPicture),
            contactIdentifier: nil,
            customIdentifier: parts.senderID)
        let intent = INSendMessageIntent(
            recipients: nil,
            outgoingMessageType: .outgoingMessageText,
            content: content.body,
            speakableGroupName: parts.groupName.map { INSpeakableString(spokenPhrase: $0) },
            conversationIdentifier: parts.conversationID,
            serviceName: nil,
            sender: sender,
            attachments: nil)
        let interaction = INInteraction(intent: intent, response: nil)
        interaction.direction = .incoming
        do {
            try await interaction.donate()
            return try content.updating(from: intent)
        } catch {
            return content
        }
    }

    /// The sender's picture, fetched within five seconds; nil (iOS draws initials) when there is none or it fails.
    private static func picture(_ url: URL?) async -> INImage? {
        guard let url else { return nil }
        var request = URLRequest(url: url)
        request.timeoutInterval = 5
        guard let (data, response) = try? await URLSession.shared.data(for: request),
              (response as? HTTPURLResponse)?.statusCode == 200, !data.isEmpty, data.count <= 2_000_000
        else { return nil }
        return INImage(imageData: data)
    }
}

/// The content handler, called exactly once whichever of the work and the time limit ends first.
private final class Delivery: @unchecked Sendable {
    // Guarded by `lock`: the work's task and the system's call to serviceExtensionTimeWillExpire() race.
    private let lock = NSLock()
    private var handler: ((UNNotificationContent) -> Void)?
    private let original: UNNotificationContent

    init(original: UNNotificationContent, handler: @escaping (UNNotificationContent) -> Void) {
        self.original = original
        self.handler = handler
    }

    /// Fills the push in when it withheld its words, makes it a communication notification when it names its
    /// sender, and hands it over (unless the time limit came first).
    func deliver(filling withheld: WithheldPush?) async {
        var content = original
        if let withheld { content = await NotificationService.filledIn(original, withheld) }
        guard let parts = CommunicationNotification(userInfo: content.userInfo) else {
            finish(with: content)
            return
        }
        finish(with: await NotificationService.communicationNotification(content, parts))
    }

    func finishWithOriginal() {
        finish(with: original)
    }

    private func finish(with content: UNNotificationContent) {
        let handler = lock.withLock { () -> ((UNNotificationContent) -> Void)? in
            defer { self.handler = nil }
            return self.handler
        }
        handler?(content)
    }
}
#endif
