// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. APIs used, all available on iOS 17 / macOS 14 and checked against Apple's documentation:
// UNUserNotificationCenter (requestAuthorization(options:), add(_:), setBadgeCount(_:) (iOS 16 / macOS 13),
// removeDeliveredNotifications(withIdentifiers:), deliveredNotifications() (async), delegate,
// setNotificationCategories(_:) (synchronous, replaces the whole set)), UNNotification (request, date),
// UNNotificationContent (userInfo, badge), UNUserNotificationCenterDelegate (NSObjectProtocol, every method optional:
// userNotificationCenter(_:willPresent:withCompletionHandler:) and (_:didReceive:withCompletionHandler:), their
// handlers @escaping @Sendable, iOS 10 / macOS 10.14; userNotificationCenter(_:openSettingsFor:), iOS 12 / macOS
// 10.14), UNNotificationPresentationOptions (.banner, .list: iOS 14 / macOS 11; .sound, .badge),
// UNMutableNotificationContent (title, subtitle, body, threadIdentifier, categoryIdentifier, userInfo, sound,
// interruptionLevel: iOS 15 / macOS 12), UNNotificationSound.default, UNNotificationInterruptionLevel (.active,
// .passive), UNNotificationRequest(identifier:content:trigger:); for the actions (iOS 10 / macOS 10.14):
// UNNotificationCategory(identifier:actions:intentIdentifiers:options:) and its identifier,
// UNTextInputNotificationAction(identifier:title:options:textInputButtonTitle:textInputPlaceholder:),
// UNNotificationAction(identifier:title:options:), UNNotificationResponse (actionIdentifier, notification),
// UNTextInputNotificationResponse.userText; for the permission the server is told: notificationSettings() (the
// async form of getNotificationSettings(completionHandler:)), UNNotificationSettings.authorizationStatus,
// UNAuthorizationStatus (.notDetermined, .denied, .authorized: iOS 10 / macOS 10.14; .provisional: iOS 12 / macOS
// 10.14; .ephemeral: iOS 14 and Mac Catalyst 14, not macOS, so fenced for iOS); Foundation's NSLock and UserDefaults.
#if os(iOS) || os(macOS)
import Foundation
import HeraldClient
import HeraldCore
import HeraldPresentation
import HeraldProtocol
@preconcurrency import UserNotifications

/// The system's notifications for Herald: asks permission, posts the engine's `local` effects (an edit only over a
/// notification still delivered) and carries out its `withdraw`, keeps the badge, routes a tapped notification of
/// Herald's to the conversation it is about, carries out Herald's silent clear and a deleted message's removal, and
/// answers a message notification's Reply and Mark as read in the background (``answering``).
///
/// It is the notification center's delegate, and Herald's notifications are not the only ones an app has: anything
/// that is not Herald's (``HeraldNotificationKind``) goes to the app's own delegate, ``passOn``, for its foreground
/// presentation and its taps and actions (without one, the system's way: banner, list, sound and badge).
///
/// Let the app delegate own it, made in `application(_:didFinishLaunchingWithOptions:)`, and register the
/// notification categories there, once, with the app's own (``registerCategories(_:)``): it is then the center's
/// delegate before any scene exists, so a notification tapped while the app was closed reaches ``opens``, and a clear
/// that launches the app in the background (no scene at all) is carried out. A tap waits in ``opens`` until a
/// signed-in session attaches (``NotificationOpens/attach(_:)``):
///
/// ```swift
/// let system = HeraldSystemNotifications()      // becomes UNUserNotificationCenter.current().delegate
/// system.passOn = appNotificationDelegate        // the app's own notifications, if it has any
/// system.registerCategories(appCategories)       // Herald's category beside the app's, in one registration
/// // after sign-in:
/// system.opens.attach { conversationID in live.open(conversationID); router.open(conversationID) }
/// system.answering = { [session] in await session.api() }  // a HeraldAPI with a current token, nil when signed out
/// live.setPermission(granted: await system.requestAuthorization())
/// ```
@MainActor
public final class HeraldSystemNotifications: NSObject, UNUserNotificationCenterDelegate {
    /// The key under which a notification HeraldUI posts carries its conversation id (beside `conversationId`).
    public nonisolated static let conversationKey = "herald.conversation"

    /// The conversations of tapped notifications, held until a signed-in session opens them.
    public let opens = NotificationOpens()

    /// How a Reply or Mark as read reaches the server: a `HeraldAPI` with a current token (and the app's device id),
    /// or nil when nobody is signed in (a Reply then becomes a ``FailedReply`` notice). Called in the background,
    /// perhaps with no scene: keep the token where it can be read then. Its requests are limited to
    /// `NotificationAnswer.requestTimeout` each and `NotificationAnswer.timeLimit` in all.
    public var answering: (@Sendable () async -> HeraldAPI?)?

    /// Called with an answer that could not be carried out and why (`NotSignedIn`, `DeadlinePassed`, the API's
    /// error), for the app's log: a Reply's text is kept in a ``FailedReply`` notice besides.
    public var answerFailed: (@MainActor (NotificationAnswer, any Error) -> Void)?

    /// The app's own notification center delegate, for every notification that is not Herald's: its
    /// `willPresent`, `didReceive` and `openSettingsFor` are called with them, on the thread the center called, as
    /// if it were the center's delegate itself. Held strongly. Without it (or a method it leaves out) such a
    /// notification is presented as the system would (`ForegroundOptions.systemDefault`) and a tap on it does nothing
    /// here: it never opens a Herald conversation.
    public nonisolated var passOn: (any UNUserNotificationCenterDelegate)? {
        get { appDelegate.value }
        set { appDelegate.value = newValue }
    }

    /// The words of Herald's actions and of a failed Reply's notice.
    public nonisolated let actionTitles: ActionTitles

    private let center: UNUserNotificationCenter
    private nonisolated let appDelegate = AppDelegateBox()

    /// Becomes `center`'s delegate; `actions` gives the words of Herald's actions, in the user's language. Registers
    /// no categories: the app does, once (``registerCategories(_:)``).
    public init(center: UNUserNotificationCenter = .current(), actions: ActionTitles = ActionTitles()) {
        self.center = center
        actionTitles = actions
        super.init()
        center.delegate = self
    }

    /// The words of the actions Herald's message notifications offer, and of a failed Reply's notice.
    public struct ActionTitles: Sendable {
        /// The Reply action's title.
        public var reply: String
        /// The Reply text field's send button.
        public var send: String
        /// The Reply text field's placeholder.
        public var placeholder: String
        /// The Mark as read action's title.
        public var markRead: String
        /// The title of the notice that keeps a Reply that was not sent (its text is the body).
        public var notSent: String

        /// The titles; the defaults are English.
        public init(
            reply: String = "Reply", send: String = "Send", placeholder: String = "Message", markRead: String = "Mark as Read",
            notSent: String = FailedReply.standardTitle
        ) {
            self.reply = reply
            self.send = send
            self.placeholder = placeholder
            self.markRead = markRead
            self.notSent = notSent
        }
    }

    /// Herald's category (`NotificationAnswer.category`: pushes carry it, and so does ``post(_:)``): Reply with a text
    /// field and Mark as read, both answered in the background. For an app that registers its categories itself.
    public var heraldCategory: UNNotificationCategory {
        let reply = UNTextInputNotificationAction(
            identifier: NotificationAnswer.replyAction, title: actionTitles.reply, options: [],
            textInputButtonTitle: actionTitles.send, textInputPlaceholder: actionTitles.placeholder)
        let markRead = UNNotificationAction(identifier: NotificationAnswer.markReadAction, title: actionTitles.markRead, options: [])
        return UNNotificationCategory(
            identifier: NotificationAnswer.category, actions: [reply, markRead], intentIdentifiers: [], options: [])
    }

    /// Registers the app's notification categories and Herald's (``heraldCategory``, replacing an app category of the
    /// same identifier) in one synchronous registration: call it once, at launch, with all of the app's own. Each
    /// registration replaces the whole set, so nothing else may register categories afterwards.
    public func registerCategories(_ appCategories: Set<UNNotificationCategory> = []) {
        let all = NotificationCategories.merging(appCategories, herald: heraldCategory, identifier: { $0.identifier })
        center.setNotificationCategories(Set(all))
    }

    /// Asks for alerts, sounds and badges (the system asks the user once); whether they are allowed. Tell the
    /// engine (`LiveNotifications.setPermission(granted:)`), so it does not post what would never show.
    public func requestAuthorization() async -> Bool {
        (try? await center.requestAuthorization(options: [.alert, .sound, .badge])) ?? false
    }

    /// Whether the system lets the app notify now, as a plain value (nil for a status newer than this build): the
    /// notification settings' `authorizationStatus`, case for case.
    public func authorization() async -> NotificationAuthorization? {
        Self.authorization(await center.notificationSettings().authorizationStatus)
    }

    /// Tells the server whether the system lets the app notify on this device (``authorization()``, as
    /// `DevicePermission(_:)` maps it; `unknown` for a status newer than this build), so its troubleshooter can say
    /// so. Call it after registering the device, and each time the app comes to the foreground: the person may have
    /// changed it in Settings meanwhile.
    ///
    /// - Throws: `HeraldAPIError` `not_found` when the user has no device `deviceID` (register it first).
    public func reportPermission(forDevice deviceID: String, to api: HeraldAPI) async throws {
        let permission = await authorization().map(DevicePermission.init) ?? .unknown
        try await api.reportPermission(permission, forDevice: deviceID)
    }

    private nonisolated static func authorization(_ status: UNAuthorizationStatus) -> NotificationAuthorization? {
        switch status {
        case .notDetermined: return .notDetermined
        case .denied: return .denied
        case .authorized: return .authorized
        case .provisional: return .provisional
        #if os(iOS)
        case .ephemeral: return .ephemeral
        #endif
        @unknown default: return nil
        }
    }

    /// Posts the engine's notification: `LocalNotification.identifier` as the identifier (posting it again replaces
    /// it, so one message never shows twice; a burst's later messages replace its first, the count as the subtitle),
    /// the conversation id as the thread, and in `userInfo` what a tap and the notification actions need, in a push's
    /// keys (`conversationId`, `messageId`, `seq`, `senderId`, `type`). In the user's quiet hours
    /// (`LocalNotification.silent`) it is passive and makes no sound (`SystemNotificationStyle`).
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

    /// The app icon's badge: the user's unread total (0 clears it). Kept as the last reading of the badge
    /// (`BadgeReading`), which a Mark as read answered here lowers (`ReadClearance`); a badge the system refuses
    /// (badges not allowed) is not kept.
    public func setBadge(_ count: Int) async {
        let value = max(0, count)
        guard (try? await center.setBadgeCount(value)) != nil else { return }
        Self.lastBadgeSet = BadgeReading(value: value, date: Date())
    }

    /// Removes the delivered notification with this identifier: its message was deleted (the engine's `withdraw`
    /// effect, or Herald's push for a deletion).
    public func withdraw(_ identifier: String) {
        center.removeDeliveredNotifications(withIdentifiers: [identifier])
    }

    /// Removes these delivered notifications (their conversation was read here).
    public func remove(_ notifications: [LocalNotification]) {
        center.removeDeliveredNotifications(withIdentifiers: notifications.map(\.identifier))
    }

    /// Removes the delivered notifications of a conversation and sets the badge: what Herald's silent push asks for
    /// when the conversation was read on another device (``handle(remoteNotification:)`` reads it). A Reply that was
    /// not sent stays (`ReadClearance.clearRemoves(userInfo:)`).
    public func clear(conversation conversationID: String, badge: Int?) async {
        let delivered = await center.deliveredNotifications()
        let identifiers = delivered.filter {
            $0.request.content.threadIdentifier == conversationID && ReadClearance.clearRemoves(userInfo: $0.request.content.userInfo)
        }.map(\.request.identifier)
        center.removeDeliveredNotifications(withIdentifiers: identifiers)
        if let badge { await setBadge(badge) }
    }

    /// Carries out a remote notification the app received (the app delegate's
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`, which runs even when the push launched
    /// the app in the background, with no scene): Herald's clear removes that conversation's notifications and sets the
    /// badge; a deleted message's removes its notification (the "This message was deleted" in its place too) and sets the
    /// badge. Whether it was one of those (`.newData`) or not (`.noData`).
    public func handle(remoteNotification userInfo: [AnyHashable: Any]) async -> Bool {
        await carryOut(RemoteNotification(userInfo: userInfo))
    }

    private func carryOut(_ remote: RemoteNotification) async -> Bool {
        switch remote {
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

    /// In the foreground, as `ForegroundPresentation` decides: Herald's message goes to the list only (the engine
    /// shows an in-app banner for what matters, never a second one and a sound); a deletion or a clear shows nothing
    /// and is carried out; a Reply that was not sent is a banner; anything else is the app's (``passOn``).
    ///
    /// Completion-handler based and answered at once, on the thread the center called: an `async` delegate method
    /// would return (and so call the handler) from the concurrency pool, which UserNotifications does not expect.
    public nonisolated func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification,
        withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void
    ) {
        switch ForegroundPresentation(userInfo: notification.request.content.userInfo) {
        case .show(let options):
            completionHandler(Self.presentation(options))
        case .hide(let remote):
            completionHandler([])
            Task { @MainActor in _ = await self.carryOut(remote) }
        case .passOn:
            // Nil when there is no app delegate, or it has no `willPresent`: then as the system would.
            if passOn?.userNotificationCenter?(center, willPresent: notification, withCompletionHandler: completionHandler) == nil {
                completionHandler(Self.presentation(.systemDefault))
            }
        }
    }

    /// A response to one of Herald's notifications (`NotificationAnswer` decides, from its data): a tap opens its
    /// conversation through ``opens`` (at once when a session is attached, else when one attaches); a Reply posts the
    /// typed text under an id made from the notification and the text (a retry is stored once), and one that fails
    /// leaves a ``FailedReply`` notice with the text; a Mark as read moves the read marker and clears this device
    /// (`ReadClearance`). Both run in a background task, through ``answering``, within `NotificationAnswer.timeLimit`.
    /// The handler is called once that is done, from the main actor. A response to any other notification goes to
    /// ``passOn`` (nothing is done here, and no Herald conversation opens).
    public nonisolated func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        let notification = response.notification
        let content = notification.request.content
        guard HeraldNotificationKind(userInfo: content.userInfo) != nil else {
            if passOn?.userNotificationCenter?(center, didReceive: response, withCompletionHandler: completionHandler) == nil {
                completionHandler()
            }
            return
        }
        let answer = NotificationAnswer(
            action: response.actionIdentifier, userInfo: content.userInfo,
            text: (response as? UNTextInputNotificationResponse)?.userText)
        let notice = FailedReply(answer, answered: content.userInfo, title: actionTitles.notSent)
        let answered = DeliveredNotification(
            identifier: notification.request.identifier, date: notification.date, badge: content.badge?.intValue,
            userInfo: content.userInfo)
        Task { @MainActor in
            await self.carryOut(answer, notice: notice, answered: answered)
            completionHandler()
        }
    }

    /// The system's settings asked for the app's own notification settings: the app's (``passOn``).
    public nonisolated func userNotificationCenter(_ center: UNUserNotificationCenter, openSettingsFor notification: UNNotification?) {
        passOn?.userNotificationCenter?(center, openSettingsFor: notification)
    }

    /// Opens, sends or marks as read, as `answer` says; a Reply that fails is kept in `notice`.
    private func carryOut(_ answer: NotificationAnswer, notice: FailedReply?, answered: DeliveredNotification) async {
        switch answer {
        case .open(let conversationID):
            opens.tapped(conversationID)
        case .reply(let conversationID, let messageID, let text):
            await BackgroundTask.run {
                do {
                    try await self.request { api in _ = try await api.postReply(in: conversationID, text: text, id: messageID) }
                } catch {
                    self.answerFailed?(answer, error)
                    guard let notice else { return }
                    do {
                        try await self.post(notice)
                    } catch {
                        self.answerFailed?(answer, error)
                    }
                }
            }
        case .markRead(let conversationID, let seq):
            await BackgroundTask.run {
                do {
                    try await self.request { api in try await api.markRead(conversationID, upTo: seq) }
                    await self.clearRead(conversationID, upTo: seq, answered: answered)
                } catch {
                    self.answerFailed?(answer, error)
                }
            }
        case .none:
            break
        }
    }

    /// `call` with a `HeraldAPI` from ``answering`` whose requests time out after `NotificationAnswer.requestTimeout`,
    /// the whole within `NotificationAnswer.timeLimit`.
    private func request(_ call: @escaping @Sendable (HeraldAPI) async throws -> Void) async throws {
        let answering = answering
        try await withDeadline(NotificationAnswer.timeLimit) {
            guard var api = await answering?() else { throw NotSignedIn() }
            api.timeout = NotificationAnswer.requestTimeout
            try await call(api)
        }
    }

    /// Removes this device's notifications of the conversation up to `seq` and lowers the badge (`ReadClearance`).
    private func clearRead(_ conversationID: String, upTo seq: Int64, answered: DeliveredNotification) async {
        let delivered = await center.deliveredNotifications().map { notification in
            DeliveredNotification(
                identifier: notification.request.identifier, date: notification.date,
                badge: notification.request.content.badge?.intValue, userInfo: notification.request.content.userInfo)
        }
        let clearance = ReadClearance(
            conversationID: conversationID, upTo: seq, delivered: delivered + [answered], lastBadgeSet: Self.lastBadgeSet)
        center.removeDeliveredNotifications(withIdentifiers: clearance.identifiers)
        if let badge = clearance.badge { await setBadge(badge) }
        _ = await center.deliveredNotifications()  // waits for the removal (see carryOut(_:) of a remote notification)
    }

    /// Posts the notice of a Reply that was not sent: in its conversation's thread, Herald's category, with a sound.
    private func post(_ notice: FailedReply) async throws {
        let content = UNMutableNotificationContent()
        content.title = notice.title
        content.body = notice.body
        content.threadIdentifier = notice.thread
        content.categoryIdentifier = notice.category
        content.sound = .default
        content.interruptionLevel = .active
        content.userInfo = notice.userInfo
        try await center.add(UNNotificationRequest(identifier: notice.identifier, content: content, trigger: nil))
    }

    /// The system's presentation options for `options`.
    private nonisolated static func presentation(_ options: ForegroundOptions) -> UNNotificationPresentationOptions {
        var presentation: UNNotificationPresentationOptions = []
        if options.contains(.banner) { presentation.insert(.banner) }
        if options.contains(.list) { presentation.insert(.list) }
        if options.contains(.sound) { presentation.insert(.sound) }
        if options.contains(.badge) { presentation.insert(.badge) }
        return presentation
    }

    /// The badge this app set last, kept in its defaults across launches (a Mark as read may come in a new one).
    private static var lastBadgeSet: BadgeReading? {
        get {
            UserDefaults.standard.data(forKey: "herald.lastBadge").flatMap { try? JSONDecoder().decode(BadgeReading.self, from: $0) }
        }
        set {
            UserDefaults.standard.set(newValue.flatMap { try? JSONEncoder().encode($0) }, forKey: "herald.lastBadge")
        }
    }
}

/// A Reply or Mark as read with nobody signed in: ``HeraldSystemNotifications/answering`` gave no API.
public struct NotSignedIn: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable code for logs and tests.
    public static let code = "not_signed_in"

    /// The error.
    public init() {}

    /// What happened, for a person.
    public var description: String { "\(Self.code): nobody is signed in to answer the notification" }
}

/// The app's own delegate, readable from whatever thread the notification center calls on.
private final class AppDelegateBox: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var delegate: (any UNUserNotificationCenterDelegate)?

    var value: (any UNUserNotificationCenterDelegate)? {
        get { lock.withLock { delegate } }
        set { lock.withLock { delegate = newValue } }
    }
}
#endif
