// The example app's entry point and its app delegate. APIs used, all available on iOS 17 and checked against Apple's
// documentation: App, WindowGroup, @State with an @Observable class, .task(_:), @UIApplicationDelegateAdaptor,
// UIApplicationDelegate (application(_:didFinishLaunchingWithOptions:),
// application(_:didRegisterForRemoteNotificationsWithDeviceToken:),
// application(_:didFailToRegisterForRemoteNotificationsWithError:),
// application(_:didReceiveRemoteNotification:fetchCompletionHandler:)), UIApplication.LaunchOptionsKey,
// UIBackgroundFetchResult.
#if os(iOS) || os(macOS)
import HeraldClient
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
    @State private var model = ChatAppModel(system: AppNotifications.system)

    var body: some Scene {
        WindowGroup {
            RootView(model: model)
                // The person signed in last time, from the Keychain: a tap that launched the app opens its chat then.
                .task { model.restore() }
                #if os(iOS)
                .onAppear { appDelegate.model = model }
                #endif
        }
    }
}

/// The app's one object for the system's notifications, made on first use: by the app delegate at launch, before
/// any scene exists (also when a push launches the app in the background, when no scene ever does), so that it is
/// the notification center's delegate before anything is delivered.
@MainActor
enum AppNotifications {
    static let system = HeraldSystemNotifications()
}

#if os(iOS)
/// The remote notifications' side: the APNs device token goes to Herald as this device's `apns` device, and
/// Herald's silent push (a conversation read on another device) clears that conversation's notifications here, with
/// or without a scene. Pushes need the Push Notifications capability and, for the clear, Background Modes → Remote
/// notifications.
@MainActor
final class AppDelegate: NSObject, UIApplicationDelegate {
    /// The app's model, once a window is up (the device token comes after a sign-in, in a window).
    weak var model: ChatAppModel?

    func application(
        _ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil
    ) -> Bool {
        // The center's delegate from the start, and Herald's category registered once (this app has none of its
        // own to register beside it); a Reply or Mark as read answered while the app is closed reaches the server as
        // the person the Keychain kept, from this device.
        AppNotifications.system.registerCategories()
        AppNotifications.system.answering = {
            guard let saved = AppKeychain.signIn.load() else { return nil }
            var configuration = ClientConfiguration(server: saved.server, token: saved.token)
            configuration.deviceID = await MainActor.run { ChatAppModel.deviceID }
            return HeraldAPI(configuration: configuration)
        }
        return true
    }

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
        Task {
            let handled = await AppNotifications.system.handle(remoteNotification: userInfo)
            completionHandler(handled ? .newData : .noData)
        }
    }
}
#endif
#endif
