// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. APIs used, all available on iOS 17 / macOS 14 and checked against Apple's documentation:
// UNUserNotificationCenter (requestAuthorization(options:), add(_:), setBadgeCount(_:) (iOS 16 / macOS 13),
// removeDeliveredNotifications(withIdentifiers:), deliveredNotifications() (async), delegate),
// UNNotification.request.content.threadIdentifier, UNUserNotificationCenterDelegate
// (userNotificationCenter(_:willPresent:withCompletionHandler:) and (_:didReceive:withCompletionHandler:), their
// handlers @Sendable), UNMutableNotificationContent (title, body, threadIdentifier, userInfo, sound,
// interruptionLevel: iOS 15 / macOS 12), UNNotificationInterruptionLevel (.active, .passive),
// UNNotificationRequest(identifier:content:trigger:); for the actions (iOS 10 / macOS 10.14, the async
// notificationCategories() iOS 15 / macOS 12): UNNotificationCategory(identifier:actions:intentIdentifiers:options:),
// UNTextInputNotificationAction(identifier:title:options:textInputButtonTitle:textInputPlaceholder:),
// UNNotificationAction(identifier:title:options:), setNotificationCategories(_:), notificationCategories(),
// UNMutableNotificationContent.categoryIdentifier, UNNotificationResponse.actionIdentifier,
// UNTextInputNotificationResponse.userText.
#if os(iOS) || os(macOS)
import Foundation
import HeraldClient
import HeraldCore
import HeraldPresentation
@preconcurrency import UserNotifications

/// The system's notifications for Herald: asks permission, posts the engine's `local` effects (an edit only over a
/// notification still delivered) and carries out its `withdraw`, keeps the badge, routes a tapped notification to the
/// conversation it is about, carries out Herald's silent clear and a deleted message's removal, and answers a
/// message notification's Reply and Mark as read in the background (``answering``).
///
/// Let the app delegate own it, made in `application(_:didFinishLaunchingWithOptions:)`: it is then the center's
/// delegate before any scene exists, so a notification tapped while the app was closed reaches ``opens``, and a clear
/// that launches the app in the background (no scene at all) is carried out. A tap waits in ``opens`` until a signed-in
/// session attaches (``NotificationOpens/attach(_:)``):
///
/// ```swift
/// let system = HeraldSystemNotifications()      // becomes UNUserNotificationCenter.current().delegate
/// // after sign-in:
/// system.opens.attach { conversationID in live.open(conversationID); router.open(conversationID) }
/// system.answering = { [session] in await session.api() }  // a HeraldAPI with a current token, nil when signed out
/// live.setPermission(granted: await system.requestAuthorization())
/// ```
@MainActor
public final class HeraldSystemNotifications: NSObject, UNUserNotificationCenterDelegate {
    /// The key under which a notification carries its conversation id.
    public nonisolated static let conversationKey = "herald.conversation"

    /// The conversations of tapped notifications, held until a signed-in session opens them.
    public let opens = NotificationOpens()

    /// How a Reply or Mark as read reaches the server: a `HeraldAPI` with a current token (and the app's device id, so
    /// the server clears the user's other devices, not this one), or nil when nobody is signed in (the action is
    /// then dropped). Called in the background, perhaps with no scene: keep the token where it can be read then.
    public var answering: (@Sendable () async -> HeraldAPI?)?

    private let center: UNUserNotificationCenter

    /// Becomes `center`'s delegate and adds Herald's message category, with a Reply and a Mark as read action, to the
    /// app's own categories (`actions` gives their words, in the user's language).
    public init(center: UNUserNotificationCenter = .current(), actions: ActionTitles = ActionTitles()) {
        self.center = center
        super.init()
        center.delegate = self
        Task { await self.registerCategory(actions) }
    }

    /// The words of the actions Herald's message notifications offer.
    public struct ActionTitles: Sendable {
        /// The Reply action's title.
        public var reply: String
        /// The Reply text field's send button.
        public var send: String
        /// The Reply text field's placeholder.
        public var placeholder: String
        /// The Mark as read action's title.
        public var markRead: String

        /// The titles; the defaults are English.
        public init(reply: String = "Reply", send: String = "Send", placeholder: String = "Message", markRead: String = "Mark as Read") {
            self.reply = reply
            self.send = send
            self.placeholder = placeholder
            self.markRead = markRead
        }
    }

    /// Adds Herald's category (`NotificationAnswer.category`: pushes carry it, and so does ``post(_:)``) to the
    /// categories the app registered, replacing an earlier one of Herald's.
    private func registerCategory(_ titles: ActionTitles) async {
        let reply = UNTextInputNotificationAction(
            identifier: NotificationAnswer.replyAction, title: titles.reply, options: [],
            textInputButtonTitle: titles.send, textInputPlaceholder: titles.placeholder)
        let markRead = UNNotificationAction(identifier: NotificationAnswer.markReadAction, title: titles.markRead, options: [])
        let category = UNNotificationCategory(
            identifier: NotificationAnswer.category, actions: [reply, markRead], intentIdentifiers: [], options: [])
        let others = await center.notificationCategories().filter { $0.identifier != NotificationAnswer.category }
        center.setNotificationCategories(others.union([category]))
    }

    /// Asks for alerts, sounds and badges (the system asks the user once); whether they are allowed. Tell the
    /// engine (`LiveNotifications.setPermission(granted:)`), so it does not post what would never show.
    public func requestAuthorization() async -> Bool {
        (try? await center.requestAuthorization(options: [.alert, .sound, .badge])) ?? false
    }

    /// Posts the engine's notification: `LocalNotification.identifier` as the identifier (posting it again replaces
    /// it, so one message never shows twice; a burst's later messages replace its first, the count as the subtitle), the conversation id as the thread, and in `userInfo` what a tap and the
    /// notification actions need, in a push's keys (`conversationId`, `messageId`, `seq`, `senderId`, `type`). In the
    /// user's quiet hours (`LocalNotification.silent`) it is passive and makes no sound (`SystemNotificationStyle`).
    ///
    /// An edit of a notification posted before (`LocalNotification.onlyIfDelivered`) replaces it only while it is
    /// delivered; once the person swiped it away or it was cleared, nothing is posted.
    public func post(_ notification: LocalNotification) async {
        if notification.onlyIfDelivered {
            let delivered = await center.deliveredNotifications().map(\.request.identifier)
            guard SystemNotificationStyle.posts(notification, delivered: Set(delivered)) else { return }
        }
        let style = SystemNotificationStyle(for: notification)
        let content = UNMutableNotificationContent()
        content.title = notification.title
        content.body = notification.body
        if let subtitle = style.subtitle { content.subtitle = subtitle }
        content.threadIdentifier = notification.thread
        content.categoryIdentifier = NotificationAnswer.category
        content.sound = style.playsSound ? .default : nil
        content.interruptionLevel = style.interruption == .passive ? .passive : .active
        var userInfo: [String: Any] = [
            Self.conversationKey: notification.thread, "conversationId": notification.thread,
            "messageId": notification.messageID, "type": "message",
        ]
        if let seq = notification.seq { userInfo["seq"] = String(seq) }
        if let senderID = notification.senderID { userInfo["senderId"] = senderID }
        content.userInfo = userInfo
        let request = UNNotificationRequest(identifier: notification.identifier, content: content, trigger: nil)
        try? await center.add(request)
    }

    /// The app icon's badge: the user's unread total (0 clears it).
    public func setBadge(_ count: Int) async {
        try? await center.setBadgeCount(max(0, count))
    }

    /// Removes the delivered notification with this identifier: its message was deleted (the engine's `withdraw`
    /// effect, or Herald's background push for a deletion).
    public func withdraw(_ identifier: String) {
        center.removeDeliveredNotifications(withIdentifiers: [identifier])
    }

    /// Removes these delivered notifications (their conversation was read here).
    public func remove(_ notifications: [LocalNotification]) {
        center.removeDeliveredNotifications(withIdentifiers: notifications.map(\.identifier))
    }

    /// Removes every delivered notification of a conversation and sets the badge: what Herald's silent push asks for
    /// when the conversation was read on another device (``handle(remoteNotification:)`` reads it).
    public func clear(conversation conversationID: String, badge: Int?) async {
        let delivered = await center.deliveredNotifications()
        let identifiers = delivered.filter { $0.request.content.threadIdentifier == conversationID }.map(\.request.identifier)
        center.removeDeliveredNotifications(withIdentifiers: identifiers)
        if let badge { await setBadge(badge) }
    }

    /// Carries out a remote notification the app received (the app delegate's
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`, which runs even when the push launched the
    /// app in the background, with no scene): Herald's clear removes that conversation's notifications and sets the
    /// badge; a deleted message's removes its notification and sets the badge. Whether it was one of Herald's
    /// background pushes (`.newData`) or not (`.noData`).
    public func handle(remoteNotification userInfo: [AnyHashable: Any]) async -> Bool {
        switch RemoteNotification(userInfo: userInfo) {
        case .clear(let conversationID, let badge):
            await clear(conversation: conversationID, badge: badge)
            return true
        case .withdraw(_, let notificationID, let badge):
            withdraw(notificationID)
            if let badge { await setBadge(badge) }
            // The removal is carried out in the background with no completion; reading the delivered notifications
            // after it waits for it, before the system may suspend the app again.
            _ = await center.deliveredNotifications()
            return true
        case .edited, .message, .other:
            return false
        }
    }

    /// In the foreground the engine shows an in-app banner for what matters, so a system notification (a push that
    /// arrived meanwhile) goes to the list only, never as a second banner or sound.
    ///
    /// Completion-handler based and answered at once, on the thread the center called: an `async` delegate method
    /// would return (and so call the handler) from the concurrency pool, which UserNotifications does not expect.
    public nonisolated func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification,
        withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void
    ) {
        completionHandler([.list, .badge])
    }

    /// A tapped notification opens its conversation: through ``opens``, at once when a session is attached, else
    /// when one attaches. A Reply posts the typed text under an id made from the notification and the text (a retry
    /// is stored once), a Mark as read moves the read marker to the message (`NotificationAnswer` decides, from the
    /// notification's data), both through ``answering``. The handler is called once that is done, from the main actor.
    public nonisolated func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        let content = response.notification.request.content
        let conversation = (content.userInfo[Self.conversationKey] as? String) ?? content.threadIdentifier
        let answer = NotificationAnswer(
            action: response.actionIdentifier, userInfo: content.userInfo,
            text: (response as? UNTextInputNotificationResponse)?.userText)
        let tapped = response.actionIdentifier == NotificationAnswer.tapAction
        Task { @MainActor in
            if tapped {
                self.opens.tapped(conversation)
            } else {
                await self.carryOut(answer)
            }
            completionHandler()
        }
    }

    /// Sends a Reply or a Mark as read; one that fails is dropped (the notification stays, and the app shows the
    /// conversation as it is when opened).
    private func carryOut(_ answer: NotificationAnswer) async {
        guard let answering, let api = await answering() else { return }
        switch answer {
        case .reply(let conversationID, let messageID, let text):
            _ = try? await api.postMessage(in: conversationID, text: text, id: messageID)
        case .markRead(let conversationID, let seq):
            try? await api.markRead(conversationID, upTo: seq)
        case .open, .none:
            break
        }
    }
}
#endif
