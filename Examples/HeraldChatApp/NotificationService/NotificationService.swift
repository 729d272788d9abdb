// The Notification Service Extension of the example app: it turns a Herald message push into an iOS communication
// notification, the sender's picture and name beside the message and, for a group, the group's name above it. iOS 17
// (the app's floor; the APIs are iOS 15: UNNotificationContent.updating(from:), INPerson's initializer with isMe and
// suggestionType, INIntent.donationMetadata with INSendMessageIntentDonationMetadata (recipientCount,
// mentionsCurrentUser); INSendMessageIntent's initializer with attachments, iOS 14; INInteraction(intent:response:),
// its direction and donate() (async), INPersonHandle(value:type:), INSpeakableString(spokenPhrase:),
// INImage(imageData:), iOS 10), UserNotifications and Intents. The decisions are HeraldPresentation's, tested on
// Linux: what the extension does with a push (`ServiceExtensionWork`: a deletion's "This message was deleted" and anything
// but a message is shown as it came), what the push says (`CommunicationNotification`), and what the intent names
// (`CommunicationIntent`: a group's recipients, more than one, and its text without the sender's name in front).
//
// A private push is filled in first. An encrypted one (the server's HERALD_PUSH_CONTENT is `encrypted`) is decrypted
// with the push key pair the app kept (HeraldPresentation's `EncryptedPush` and `PushKeyPair`: CryptoKit, iOS 13);
// when it does not open (no pair, a replaced one), or the push only withheld its words (`sender` or `none`), they
// are fetched with the device key the app kept (HeraldAPI.pushedMessage, which reads only what was pushed to this
// device), and decided by `WithheldPush`. UNMutableNotificationContent's title, subtitle, body, badge (NSNumber?)
// and userInfo (iOS 10). The recipient (this member) is the one the app kept beside the device key: a push does not
// say whom it is for.
//
// The extension target of Examples/HeraldChatApp/project.yml, with the app's Keychain.swift and HeraldPresentation,
// HeraldClient and HeraldURLSession as its dependencies; the project gives the app the Communication Notifications
// capability and INSendMessageIntent in its NSUserActivityTypes, both targets the shared keychain group (named in
// their Info.plists under `HeraldKeychainGroup`), and the app its own group first. Herald sends every alert with
// `mutable-content: 1`, so iOS hands each one to this extension first. On any failure the alert is shown as it came.
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
        switch ServiceExtensionWork(userInfo: request.content.userInfo) {
        case .asItCame:
            // A deletion's "This message was deleted" (under the message's collapse id, in its place), or anything not a
            // message: never made into a message's communication notification.
            delivery.finishWithOriginal()
        case .message(let withheld, let encrypted):
            Task { await delivery.deliver(decrypting: encrypted, filling: withheld) }
        }
    }

    /// `content` with the words of an encrypted push, decrypted with the key pair the app kept; nil when there is no
    /// pair or the push does not open with it (`EncryptedPush.Failure`): then the words are fetched instead.
    static func decrypted(_ content: UNNotificationContent, _ encrypted: EncryptedPush) -> UNNotificationContent? {
        guard let keys = AppKeychain.pushKeys.load().flatMap({ PushKeyPair(rawRepresentation: $0.raw) }),
              let opened = try? encrypted.open(userInfo: content.userInfo, with: keys),
              let mutable = content.mutableCopy() as? UNMutableNotificationContent
        else { return nil }
        if let title = opened.title { mutable.title = title }
        if let body = opened.body { mutable.body = body }
        if let subtitle = opened.subtitle { mutable.subtitle = subtitle }
        if let badge = opened.badge { mutable.badge = NSNumber(value: badge) }
        mutable.userInfo = opened.userInfo
        return mutable
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

    /// `content` as a message from `parts`' sender, or `content` itself if iOS will not have it. Every field of the
    /// intent is `CommunicationIntent`'s: a group's recipients are this member and the group's other members (more
    /// than one, so iOS shows it as a group's and a Reply goes to the group), and the text, which becomes the
    /// notification's body, loses the `<sender>: ` the plain alert needed.
    static func communicationNotification(
        _ content: UNNotificationContent, _ parts: CommunicationNotification
    ) async -> UNNotificationContent {
        let me = AppKeychain.deviceKey.load().flatMap { saved in
            saved.userID.map { CommunicationParticipant(id: $0, displayName: saved.name, isMe: true) }
        }
        let decided = parts.intent(body: content.body, me: me)
        let intent = INSendMessageIntent(
            recipients: decided.recipients.isEmpty ? nil : decided.recipients.map { person($0, image: nil) },
            outgoingMessageType: .outgoingMessageText,
            content: decided.text,
            speakableGroupName: decided.groupName.map { INSpeakableString(spokenPhrase: $0) },
            conversationIdentifier: decided.conversationID,
            serviceName: nil,
            sender: person(decided.sender, image: await picture(parts.senderPicture)),
            attachments: nil)
        let metadata = INSendMessageIntentDonationMetadata()
        metadata.recipientCount = decided.recipientCount
        metadata.mentionsCurrentUser = decided.mentionsMe
        intent.donationMetadata = metadata
        let interaction = INInteraction(intent: intent, response: nil)
        interaction.direction = .incoming
        guard let mutable = content.mutableCopy() as? UNMutableNotificationContent else { return content }
        mutable.body = decided.text
        // The donation and the update fail each on its own: a donation refused still leaves the update to try.
        try? await interaction.donate()
        return (try? mutable.updating(from: intent)) ?? content
    }

    /// The `INPerson` of a participant: its id as the handle and the custom identifier (none for an unknown id).
    private static func person(_ participant: CommunicationParticipant, image: INImage?) -> INPerson {
        INPerson(
            personHandle: INPersonHandle(value: participant.id.isEmpty ? nil : participant.id, type: .unknown),
            nameComponents: nil,
            displayName: participant.displayName,
            image: image,
            contactIdentifier: nil,
            customIdentifier: participant.id.isEmpty ? nil : participant.id,
            isMe: participant.isMe,
            suggestionType: .none)
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

    /// A message's push: decrypts it when it came encrypted, else (or when that fails) fills it in when it withheld
    /// its words, makes it a communication notification when it names its sender, and hands it over (unless the time
    /// limit came first).
    func deliver(decrypting encrypted: EncryptedPush?, filling withheld: WithheldPush?) async {
        var content = original
        if let encrypted, let decrypted = NotificationService.decrypted(original, encrypted) {
            content = decrypted
        } else if let withheld {
            content = await NotificationService.filledIn(original, withheld)
        }
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
