import Foundation
import HeraldCore
import HeraldTransport

/// The stream wired into the notification engine: the one call an app needs to get "show this banner", "post
/// this local notification" and "open this conversation".
///
/// ```swift
/// let client = HeraldClient(configuration: ClientConfiguration(server: url, token: token))
/// let live = LiveNotifications(client: client, userID: "alice")
/// async let running: Void = live.run()          // the connection, the engine, and the wiring between them
/// live.open("alice-bob")                         // the user opened a chat: the engine and the server both know
/// for await effect in live.effects { ... }       // .show, .update, .dismiss, .navigate, .local, ...
/// ```
///
/// Messages of the first catch-up (the history from `resumeAfter`) do not notify; everything after it does,
/// including messages caught up after a reconnect, except those the server says it pushed to this device (their
/// push is the notification). A system notification, and a late message's banner (`Notifier.lateAfter`), wait
/// ``localHold`` for that word: an app woken with frames waiting reads a message and then the server's `pushed` for it. Focus and app state go to both the device's ``Notifier`` and
/// the server (so pushes follow them); a tapped banner's conversation becomes the focus by itself.
///
/// The user's choices of who hears what (levels, snooze, quiet hours: docs/behaviour.md §1) are read from the server
/// each time the stream is live (before any message after it is handled), and follow ``setLevel(_:until:for:)``,
/// ``mute(_:)``, ``unmute(_:)`` and ``setSettings(_:)`` here and the changes of the user's other devices, which the
/// stream reports.
///
/// Several may run it at once (two windows of an iPad app, each with `.heraldBanners(live)`): one connection serves
/// them all, and it keeps running until the last of them stops. When the one whose task carries the connection stops
/// first, another carries it on (the stream reconnects, resuming after the last `seq`; nothing is missed). It may run
/// again after every run ended (a view that went away and came back): the engine goes on where it stopped, with what
/// it knew (the open conversation, the app state, the mutes, the messages seen). Each access to ``effects`` is a
/// subscription of its own, so two windows may each follow it; subscriptions end when the last run ends.
public final class LiveNotifications<C: Clock>: Sendable where C.Duration == Duration {
    /// What the stream does while the app is in the background.
    public enum BackgroundStream: Sendable {
        /// Closed when the app goes to the background (``HeraldClient/pause()``) and opened again when it comes back:
        /// the server pushes at once rather than after its grace period, and a suspended app holds no socket open.
        /// The default, from measurement (docs/push.md, "Apps in the background").
        case close
        /// Kept open: messages come on the stream and are notified locally while the app runs; once the system
        /// suspends it, the server pushes them after its grace period (`HERALD_CONFIRM_WITHIN`).
        case keep
    }

    /// The connection.
    public let client: HeraldClient
    /// What the stream does in the background.
    public let inBackground: BackgroundStream
    private let clock: C

    private struct State {
        /// Where inputs go: the driver of the run under way, or the one the next run starts.
        var driver: NotifierDriver<C>
        /// Whether a run carries the connection now.
        var running = false
        /// Calls of ``run()`` under way: the one carrying the connection and those waiting to carry it on.
        var runs = 0
        /// Wakes the waiting runs when the carrying one ends.
        var waiting: [UUID: AsyncStream<Void>.Continuation] = [:]
        /// The levels the engine has, as the last run left them: what the next run's first reading of the server is
        /// compared with.
        var levels: [String: LevelChoice] = [:]
        var subscribers: [UUID: AsyncStream<NotificationEffect>.Continuation] = [:]
        /// Effects that came while nobody was subscribed, for the first to subscribe (at most ``unclaimedLimit``).
        var unclaimed: [NotificationEffect] = []
    }

    private let state: LockedState<State>
    /// The most effects kept for a subscriber that has not come yet.
    static var unclaimedLimit: Int { 100 }
    /// How long a system notification waits for the server's word that it pushed the message
    /// (``Notifier/localHold``).
    public static var localHold: Duration { .milliseconds(500) }

    /// Wires `client` to a notifier for `userID` running on `clock`; `inBackground` says what the stream does while
    /// the app is in the background.
    public init(
        client: HeraldClient, userID: String, config: BannerConfig = .standard, inBackground: BackgroundStream = .close,
        clock: C
    ) {
        self.client = client
        self.inBackground = inBackground
        self.clock = clock
        let notifier = Notifier(userID: userID, config: config, localHold: Self.localHold)
        state = LockedState(State(driver: NotifierDriver(notifier: notifier, clock: clock)))
    }

    /// What the app must do, in order, from now on: a new subscription each time it is read (iterate each from one
    /// task), which ends when the run under way (or the next one, if none is) ends. The first subscriber also gets
    /// what came while nobody was subscribed.
    public var effects: AsyncStream<NotificationEffect> {
        let (stream, continuation) = AsyncStream<NotificationEffect>.makeStream()
        let id = UUID()
        continuation.onTermination = { [state] _ in
            state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        state.withLock { state in
            for effect in state.unclaimed { continuation.yield(effect) }
            state.unclaimed = []
            state.subscribers[id] = continuation
        }
        return stream
    }

    private var driver: NotifierDriver<C> { state.withLock { $0.driver } }

    /// The user opened a conversation (nil: the list, settings, ...).
    public func open(_ conversationID: String?) {
        client.focus(conversationID)
        driver.send(.open(conversationID: conversationID))
    }

    /// The app came to the foreground or went to the background; with ``BackgroundStream/close`` the stream closes
    /// in the background and opens again in the foreground.
    public func setAppState(_ state: AppState) {
        client.setAppState(state)
        driver.send(.app(state))
        guard inBackground == .close else { return }
        if state == .background { client.pause() } else { client.resume() }
    }

    /// Sets a conversation's level on the server (for every device of the user) and here, for ever or `until` an
    /// instant (nil: the default level again); throws if the server refused.
    public func setLevel(_ level: NotificationLevel?, until: Date? = nil, for conversationID: String) async throws {
        try await client.api.setLevel(level, until: until, conversationID: conversationID)
        driver.send(.level(conversationID: conversationID, level.map { LevelChoice(level: $0, until: until) }))
    }

    /// Replaces the user's notification settings on the server (for every device) and here; throws if the server
    /// refused.
    public func setSettings(_ settings: NotificationSettings) async throws {
        driver.send(.settings(try await client.api.setNotificationSettings(settings)))
    }

    /// Do not disturb until `until` (nil: no longer), on the server and here; throws if the server refused.
    public func snooze(until: Date?) async throws {
        driver.send(.settings(try await client.api.snooze(until: until)))
    }

    /// Mutes a conversation on the server (for every device of the user) and here; throws if the server refused.
    public func mute(_ conversationID: String) async throws {
        try await client.api.setMuted(true, conversationID: conversationID)
        driver.send(.mute(conversationID: conversationID))
    }

    /// Unmutes a conversation on the server and here; throws if the server refused.
    public func unmute(_ conversationID: String) async throws {
        try await client.api.setMuted(false, conversationID: conversationID)
        driver.send(.unmute(conversationID: conversationID))
    }

    /// The system's notification permission changed.
    public func setPermission(granted: Bool) {
        driver.send(.permission(granted: granted))
    }

    /// A gesture on the visible banner.
    public func gesture(_ gesture: BannerGesture) {
        driver.send(.gesture(gesture))
    }

    /// A general-purpose banner, queued with the rest; returns its id.
    @discardableResult
    public func show(_ message: String, tone: BannerTone = .primary, icon: String? = nil, duration: Duration = .seconds(5),
                     onClose: (@Sendable () -> Void)? = nil) -> String {
        driver.show(message, tone: tone, icon: icon, duration: duration, onClose: onClose)
    }

    /// How many calls of ``run()`` are under way.
    var runsUnderWay: Int { state.withLock { $0.runs } }

    /// Runs the connection, the engine and the wiring until the calling task is cancelled (or the server refuses the
    /// token). Several calls at once share one connection, carried by one of them and carried on by another when that
    /// one stops; effects' subscriptions end when the last call returns.
    public func run() async {
        state.withLock { $0.runs += 1 }
        defer {
            let ended = state.withLock { state -> [AsyncStream<NotificationEffect>.Continuation] in
                state.runs -= 1
                guard state.runs == 0 else { return [] }
                defer { state.subscribers = [:] }
                return Array(state.subscribers.values)
            }
            // The subscriptions end with the last run (outside the lock: ending one runs its termination handler).
            for subscriber in ended { subscriber.finish() }
        }
        while !Task.isCancelled {
            let id = UUID()
            let (wake, wakeSink) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let claimed = state.withLock { state -> (driver: NotifierDriver<C>, levels: [String: LevelChoice])? in
                guard !state.running else {
                    state.waiting[id] = wakeSink
                    return nil
                }
                state.running = true
                return (state.driver, state.levels)
            }
            guard let (driver, knownLevels) = claimed else {
                // Another run carries the connection: wait for it to end (or for this task to be cancelled).
                for await _ in wake { break }
                state.withLock { _ = $0.waiting.removeValue(forKey: id) }
                continue
            }
            await carry(driver: driver, knownLevels: knownLevels)
            return
        }
    }

    /// Runs the connection, the engine and the wiring until the calling task is cancelled or the connection ends for
    /// good; then the engine is kept for the next run, and a waiting run is woken to carry on.
    private func carry(driver: NotifierDriver<C>, knownLevels: [String: LevelChoice]) async {
        let events = client.events()
        let notifier = await withTaskGroup(of: Notifier?.self) { group in
            group.addTask {
                await self.client.run()
                return nil
            }
            group.addTask { await driver.run() }
            group.addTask {
                // The first catch-up is history the user is about to see, not news; after that, what arrives
                // (live, or caught up after a reconnect) notifies.
                var caughtUp = false
                var levels = knownLevels
                for await event in events {
                    switch event {
                    case .message(let incoming) where caughtUp: driver.send(.message(incoming))
                    case .state(.live):
                        // Choices made while away count before the next message does: events wait meanwhile.
                        levels = await self.syncChoices(levels, driver: driver)
                        caughtUp = true
                    case .level(let conversationID, let choice):
                        // (A mute's `muted` frame comes with this one.)
                        driver.send(.level(conversationID: conversationID, choice))
                        levels[conversationID] = choice
                    case .notificationSettings(let settings):
                        driver.send(.settings(settings))
                    case .pushed(let conversationID, let messageID, _):
                        driver.send(.pushed(conversationID: conversationID, messageID: messageID))
                    default: break
                    }
                }
                return nil
            }
            group.addTask {
                for await effect in driver.effects {
                    if case .navigate(let conversationID) = effect { self.client.focus(conversationID) }
                    self.deliver(effect)
                }
                return nil
            }
            var last: Notifier?
            for await result in group {
                if let result { last = result }
            }
            return last
        }
        let waiting = state.withLock { state in
            state.running = false
            if let notifier {
                state.driver = NotifierDriver(notifier: notifier, clock: clock)
                state.levels = notifier.device.levels
            }
            return Array(state.waiting.values)
        }
        for run in waiting { run.yield() }
    }

    /// Hands an effect to every subscriber, or keeps it for the first one to come.
    private func deliver(_ effect: NotificationEffect) {
        let subscribers = state.withLock { state -> [AsyncStream<NotificationEffect>.Continuation] in
            if state.subscribers.isEmpty {
                state.unclaimed.append(effect)
                if state.unclaimed.count > Self.unclaimedLimit { state.unclaimed.removeFirst() }
            }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(effect) }
    }
}

extension LiveNotifications {
    /// Reads the levels and settings from the server and tells the engine what changed since `known`; the levels
    /// now (or `known`, if the server could not be asked).
    private func syncChoices(_ known: [String: LevelChoice], driver: NotifierDriver<C>) async -> [String: LevelChoice] {
        if let settings = try? await client.api.notificationSettings() { driver.send(.settings(settings)) }
        guard let current = try? await client.api.conversationLevels() else { return known }
        for (id, choice) in current where known[id] != choice { driver.send(.level(conversationID: id, choice)) }
        for id in known.keys where current[id] == nil { driver.send(.level(conversationID: id, nil)) }
        return current
    }
}

extension LiveNotifications where C == ContinuousClock {
    /// Wires `client` to a notifier for `userID` on the real clock.
    public convenience init(
        client: HeraldClient, userID: String, config: BannerConfig = .standard, inBackground: BackgroundStream = .close
    ) {
        self.init(client: client, userID: userID, config: config, inBackground: inBackground, clock: ContinuousClock())
    }
}
