// The example app's entry point and its app delegate. APIs used, all available on iOS 17 and checked against Apple's
// documentation: App, WindowGroup, @State with an @Observable class, @UIApplicationDelegateAdaptor,
// UIApplicationDelegate (application(_:didRegisterForRemoteNotificationsWithDeviceToken:),
// application(_:didFailToRegisterForRemoteNotificationsWithError:),
// application(_:didReceiveRemoteNotification:fetchCompletionHandler:)), UIApplication.registerForRemoteNotifications(),
// UIBackgroundFetchResult.
#if os(iOS) || os(macOS)
import HeraldUI
import SwiftUI
#if os(iOS)
import UIKit
#endif

/// Herald Chat: sign in as a demo person of `herald serve --demo`, chat, and see Herald's banners.
@main
struct HeraldChatApp: App {
    #if os(iOS)
    @UIApplicationDelegateAdaptor(AppDelegate.self) private var appDelegate
    #endif
    @State private var model = ChatAppModel()

    var body: some Scene {
        WindowGroup {
            RootView(model: model)
                #if os(iOS)
                .onAppear { appDelegate.model = model }
                #endif
        }
    }
}

#if os(iOS)
/// The remote notifications' side: the APNs device token goes to Herald as this device's `apns` device, and
/// Herald's silent push (a conversation read on another device) clears that conversation's notifications here.
/// Pushes need the Push Notifications capability and, for the clear, Background Modes → Remote notifications.
@MainActor
final class AppDelegate: NSObject, UIApplicationDelegate {
    /// The app's model, once the first window is up.
    var model: ChatAppModel?

    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        let token = deviceToken.map { String(format: "%02x", $0) }.joined()
        Task { await model?.register(apnsToken: token) }
    }

    func application(_ application: UIApplication, didFailToRegisterForRemoteNotificationsWithError error: any Error) {
        // A simulator without push support, or no entitlement: the app works without pushes.
    }

    func application(
        _ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void
    ) {
        guard let clear = HeraldSystemNotifications.clearRequest(in: userInfo), let model else {
            completionHandler(.noData)
            return
        }
        Task {
            await model.systemNotifications.clear(conversation: clear.conversationID, badge: clear.badge)
            completionHandler(.newData)
        }
    }
}
#endif
#endif
