import Foundation

/// Runs a ``Notifier`` on a real clock for an app: inputs go in with ``send(_:)``, effects come out of ``effects``.
///
/// Call ``run()`` once, from a task the app owns (a SwiftUI `.task`, a service's `run`); it returns when that task
/// is cancelled or ``finish()`` is called. Timers are child tasks of `run()` that sleep on the injected clock, so a
/// test clock drives it exactly.
///
/// ```swift
/// let driver = NotifierDriver(notifier: Notifier(userID: "alice"), clock: ContinuousClock())
/// async let running: Void = driver.run()
/// driver.send(.message(incoming))
/// for await effect in driver.effects { ... }
/// ```
public final class NotifierDriver<C: Clock>: Sendable where C.Duration == Duration {
    /// The effects, in the order they happened. Consume it from one task.
    public let effects: AsyncStream<NotificationEffect>

    private enum Command: Sendable {
        case input(NotifierInput)
        case general(Banner, onClose: (@Sendable () -> Void)?)
        case tick
    }

    private let initial: Notifier
    private let clock: C
    private let commands: AsyncStream<Command>
    private let commandSink: AsyncStream<Command>.Continuation
    private let effectSink: AsyncStream<NotificationEffect>.Continuation

    /// Creates a driver for `notifier` on `clock`.
    public init(notifier: Notifier, clock: C) {
        initial = notifier
        self.clock = clock
        (commands, commandSink) = AsyncStream.makeStream()
        (effects, effectSink) = AsyncStream.makeStream()
    }

    /// Hands `input` to the notifier; effects follow on ``effects``. Safe from any task or thread.
    public func send(_ input: NotifierInput) {
        commandSink.yield(.input(input))
    }

    /// Queues a general-purpose banner ("Saved", "Upload failed") and returns its id.
    ///
    /// - Parameter onClose: called once when the banner goes, whether dismissed or dropped from the queue.
    @discardableResult
    public func show(
        _ message: String,
        tone: BannerTone = .primary,
        icon: String? = nil,
        duration: Duration = .seconds(5),
        onClose: (@Sendable () -> Void)? = nil
    ) -> String {
        let banner = Banner.general(id: UUID().uuidString, message: message, tone: tone, icon: icon, duration: duration)
        commandSink.yield(.general(banner, onClose: onClose))
        return banner.id
    }

    /// Stops ``run()`` once what was sent before has been handled, and ends ``effects``.
    public func finish() {
        commandSink.finish()
    }

    /// Runs the notifier until the calling task is cancelled or ``finish()`` is called; the notifier as it then is
    /// (a new driver started from it goes on where this one stopped).
    @discardableResult
    public func run() async -> Notifier {
        var notifier = initial
        var onClose: [String: @Sendable () -> Void] = [:]
        var armed: Duration?
        let origin = clock.now
        await withDiscardingTaskGroup { group in
            for await command in commands {
                let now = origin.duration(to: clock.now)
                let effects: [TimedEffect] = switch command {
                case .input(let input):
                    notifier.handle(input, at: now)
                case .general(let banner, let callback):
                    {
                        if let callback { onClose[banner.id] = callback }
                        return notifier.handle(.show(banner), at: now)
                    }()
                case .tick:
                    notifier.advance(to: now)
                }
                for timed in effects {
                    // The banner's callback first: whoever sees it go sees its callback done.
                    switch timed.effect {
                    case .dismiss(let id, _), .drop(let id, _):
                        onClose.removeValue(forKey: id)?()
                    default:
                        break
                    }
                    effectSink.yield(timed.effect)
                }
                if let deadline = notifier.nextDeadline, deadline != armed {
                    armed = deadline
                    group.addTask { [clock, commandSink] in
                        // A sleeper whose deadline was replaced wakes to a tick that finds nothing due.
                        try? await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil)
                        commandSink.yield(.tick)
                    }
                }
            }
            group.cancelAll()
        }
        effectSink.finish()
        return notifier
    }
}
