// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. APIs used, all available on iOS 17 and checked against Apple's documentation: UIApplication.shared
// (main actor), UIApplication.beginBackgroundTask(expirationHandler:) (iOS 4; nonisolated, its handler
// `(@MainActor @Sendable () -> Void)?`, called on the main thread shortly before the background time runs out),
// UIApplication.endBackgroundTask(_:) (iOS 4; nonisolated, safe off the main thread), UIBackgroundTaskIdentifier
// (.invalid). macOS has no background tasks to ask for: the work simply runs.
#if os(iOS) || os(macOS)
#if os(iOS)
import UIKit
#endif

/// Work the app must finish even if it goes to the background meanwhile (a notification's Reply or Mark as read,
/// answered while the app was suspended or about to be): on iOS it runs inside a UIKit background task, which asks
/// the system for time to finish. Should that time run out first, the work is cancelled (so it fails, and says so)
/// and the task ended, as UIKit requires.
@MainActor
enum BackgroundTask {
    /// Runs `work` to its end inside a background task.
    static func run(_ work: @escaping @MainActor @Sendable () async -> Void) async {
        #if os(iOS)
        let running = Task { @MainActor in await work() }
        let task = BackgroundTaskHandle()
        task.begin { running.cancel() }
        await withTaskCancellationHandler {
            await running.value
        } onCancel: {
            running.cancel()
        }
        task.end()
        #else
        await work()
        #endif
    }
}

#if os(iOS)
/// One UIKit background task, ended exactly once: by the work's end, or by the system's expiration handler.
@MainActor
private final class BackgroundTaskHandle {
    private var identifier: UIBackgroundTaskIdentifier = .invalid

    /// Begins the task; `expire` runs on the main actor if its time runs out first, before the task is ended.
    func begin(expire: @escaping @MainActor @Sendable () -> Void) {
        identifier = UIApplication.shared.beginBackgroundTask(expirationHandler: { [weak self] in
            expire()
            self?.end()
        })
    }

    /// Ends the task, once.
    func end() {
        guard identifier != .invalid else { return }
        UIApplication.shared.endBackgroundTask(identifier)
        identifier = .invalid
    }
}
#endif
#endif
