// The example app's entry point. iOS 17 APIs: App, WindowGroup, @State with an @Observable class.
#if canImport(SwiftUI)
import SwiftUI

/// Herald Chat: sign in as a demo person of `herald serve --demo`, chat, and see Herald's banners.
@main
struct HeraldChatApp: App {
    @State private var model = ChatAppModel()

    var body: some Scene {
        WindowGroup {
            RootView(model: model)
        }
    }
}
#endif
