// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. APIs used, all available on iOS 17 / macOS 14 and checked against Apple's documentation:
// UNUserNotificationCenter (requestAuthorization(options:), add(_:), setBadgeCount(_:) (iOS 16 / macOS 13),
// removeDeliveredNotifications(withIdentifiers:), deliveredNotifications() (async), delegate),
// UNNotification.request.content.threadIdentifier, UNUserNotificationCenterDelegate
// (userNotificationCenter(_:willPresent:withCompletionHandler:) and (_:didReceive:withCompletionHandler:), their
// handlers @Sendable), UNMutableNotificationContent (title, body, threadIdentifier, userInfo, sound,
// interruptionLevel: iOS 15 / macOS 12), UNNotificationInterruptionLevel (.active, .passive),
// UNNotificationRequest(identifier:content:trigger:).
#if os(iOS) || os(macOS)
import Foundation
import HeraldCore
import HeraldPresentation
@preconcurrency import UserNotifications

/// The system's notifications for Herald: asks permission, posts the engine's `local` effects, keeps the badge,
/// routes a tapped notification to the conversation it is about, and carries out Herald's silent clear.
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
/// live.setPermission(granted: await system.requestAuthorization())
/// ```
@MainActor
public final class HeraldSystemNotifications: NSObject, UNUserNotificationCenterDelegate {
    /// The key under which a notification carries its conversation id.
    public nonisolated static let conversationKey = "herald.conversation"

    /// The conversations of tapped notifications, held until a signed-in session opens them.
    public let opens = NotificationOpens()

    private let center: UNUserNotificationCenter

    /// Becomes `center`'s delegate.
    public init(center: UNUserNotificationCenter = .current()) {
        self.center = center
        super.init()
        center.delegate = self
    }

    /// Asks for alerts, sounds and badges (the system asks the user once); whether they are allowed. Tell the
    /// engine (`LiveNotifications.setPermission(granted:)`), so it does not post what would never show.
    public func requestAuthorization() async -> Bool {
        (try? await center.requestAuthorization(options: [.alert, .sound, .badge])) ?? false
    }

    /// Posts the engine's notification: `LocalNotification.identifier` as the identifier (posting it again replaces
    /// it, so one message never shows twice), the conversation id as the thread, and in `userInfo` what a tap and the
    /// notification actions need, in a push's keys (`conversationId`, `messageId`, `seq`, `senderId`, `type`). In the
    /// user's quiet hours (`LocalNotification.silent`) it is passive and makes no sound (`SystemNotificationStyle`).
    public func post(_ notification: LocalNotification) async {
        let style = SystemNotificationStyle(for: notification)
        let content = UNMutableNotificationContent()
        content.title = notification.title
        content.body = notification.body
        content.threadIdentifier = notification.thread
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
    /// badge. Whether it was one of Herald's clears (`.newData`) or not (`.noData`).
    public func handle(remoteNotification userInfo: [AnyHashable: Any]) async -> Bool {
        guard case .clear(let conversationID, let badge) = RemoteNotification(userInfo: userInfo) else { return false }
        await clear(conversation: conversationID, badge: badge)
        return true
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
    /// when one attaches; the handler is called once that is handed on, from the main actor.
    public nonisolated func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        let content = response.notification.request.content
        let conversation = (content.userInfo[Self.conversationKey] as? String) ?? content.threadIdentifier
        Task { @MainActor in
            self.opens.tapped(conversation)
            completionHandler()
        }
    }
}
#endif
