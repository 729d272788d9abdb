// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. APIs used, all available on iOS 17 / macOS 14 and checked against Apple's documentation:
// UNUserNotificationCenter (requestAuthorization(options:), add(_:), setBadgeCount(_:),
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
/// and routes a tapped notification to the conversation it is about.
///
/// Set it as the center's delegate early (in the app's `init`), so a notification tapped while the app was closed
/// reaches ``onOpen``:
///
/// ```swift
/// let system = HeraldSystemNotifications()      // becomes UNUserNotificationCenter.current().delegate
/// system.onOpen = { conversationID in router.open(conversationID) }
/// let granted = await system.requestAuthorization()
/// live.setPermission(granted: granted)
/// ```
@MainActor
public final class HeraldSystemNotifications: NSObject, UNUserNotificationCenterDelegate {
    /// The key under which a notification carries its conversation id.
    public nonisolated static let conversationKey = "herald.conversation"

    /// Called with the conversation of a notification the user tapped.
    public var onOpen: @MainActor (String) -> Void = { _ in }

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
    /// it, so one message never shows twice), the conversation id as the thread, and the conversation for ``onOpen``.
    /// In the user's quiet hours (`LocalNotification.silent`) it is passive and makes no sound
    /// (`SystemNotificationStyle`).
    public func post(_ notification: LocalNotification) async {
        let style = SystemNotificationStyle(for: notification)
        let content = UNMutableNotificationContent()
        content.title = notification.title
        content.body = notification.body
        content.threadIdentifier = notification.thread
        content.sound = style.playsSound ? .default : nil
        content.interruptionLevel = style.interruption == .passive ? .passive : .active
        content.userInfo = [Self.conversationKey: notification.thread]
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
    /// when the conversation was read on another device (its `type` is `read`; it carries `conversationId` and
    /// `badge`). Call it from the app delegate's `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`.
    public func clear(conversation conversationID: String, badge: Int?) async {
        let delivered = await center.deliveredNotifications()
        let identifiers = delivered.filter { $0.request.content.threadIdentifier == conversationID }.map(\.request.identifier)
        center.removeDeliveredNotifications(withIdentifiers: identifiers)
        if let badge { await setBadge(badge) }
    }

    /// What a remote notification's payload asks, if it is Herald's clear: the conversation read elsewhere, and the
    /// badge now.
    public nonisolated static func clearRequest(in userInfo: [AnyHashable: Any]) -> (conversationID: String, badge: Int?)? {
        guard userInfo["type"] as? String == "read", let conversationID = userInfo["conversationId"] as? String else {
            return nil
        }
        let aps = userInfo["aps"] as? [String: Any]
        return (conversationID, aps?["badge"] as? Int)
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

    /// A tapped notification opens its conversation (the engine's `navigate`, done by the app's ``onOpen`` on the
    /// main actor); the handler is called once that is done, from the main actor.
    public nonisolated func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        let content = response.notification.request.content
        let conversation = (content.userInfo[Self.conversationKey] as? String) ?? content.threadIdentifier
        Task { @MainActor in
            if !conversation.isEmpty { self.onOpen(conversation) }
            completionHandler()
        }
    }
}
#endif
