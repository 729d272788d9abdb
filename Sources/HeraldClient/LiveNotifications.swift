import HeraldCore

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
/// including messages caught up after a reconnect. Focus and app state go to both the device's ``Notifier`` and
/// the server (so pushes follow them); a tapped banner's conversation becomes the focus by itself.
///
/// Muted conversations never notify (the engine skips them with reason `muted`): the muted set is read from the
/// server each time the stream is live (before any message after it is handled), and follows ``mute(_:)`` and
/// ``unmute(_:)`` here and the mutes and unmutes of the user's other devices, which the stream reports.
public final class LiveNotifications<C: Clock>: Sendable where C.Duration == Duration {
    /// The connection.
    public let client: HeraldClient
    /// What the app must do, in order. Consume it from one task.
    public let effects: AsyncStream<NotificationEffect>
    private let effectSink: AsyncStream<NotificationEffect>.Continuation
    private let driver: NotifierDriver<C>

    /// Wires `client` to a notifier for `userID` running on `clock`.
    public init(client: HeraldClient, userID: String, config: BannerConfig = .standard, clock: C) {
        self.client = client
        driver = NotifierDriver(notifier: Notifier(userID: userID, config: config), clock: clock)
        (effects, effectSink) = AsyncStream.makeStream()
    }

    /// The user opened a conversation (nil: the list, settings, ...).
    public func open(_ conversationID: String?) {
        client.focus(conversationID)
        driver.send(.open(conversationID: conversationID))
    }

    /// The app came to the foreground or went to the background.
    public func setAppState(_ state: AppState) {
        client.setAppState(state)
        driver.send(.app(state))
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

    /// Runs the connection, the engine and the wiring until the calling task is cancelled.
    public func run() async {
        let events = client.events()
        await withDiscardingTaskGroup { group in
            group.addTask { await self.client.run() }
            group.addTask { await self.driver.run() }
            group.addTask {
                // The first catch-up is history the user is about to see, not news; after that, what arrives
                // (live, or caught up after a reconnect) notifies.
                var caughtUp = false
                var muted: Set<String> = []
                for await event in events {
                    switch event {
                    case .message(let incoming) where caughtUp: self.driver.send(.message(incoming))
                    case .state(.live):
                        // Mutes made while away count before the next message does: events wait meanwhile.
                        muted = await self.syncMuted(muted)
                        caughtUp = true
                    case .muted(let conversationID, let isMuted):
                        self.driver.send(isMuted ? .mute(conversationID: conversationID) : .unmute(conversationID: conversationID))
                        if isMuted { muted.insert(conversationID) } else { muted.remove(conversationID) }
                    default: break
                    }
                }
            }
            group.addTask {
                for await effect in self.driver.effects {
                    if case .navigate(let conversationID) = effect { self.client.focus(conversationID) }
                    self.effectSink.yield(effect)
                }
                self.effectSink.finish()
            }
        }
    }
}

extension LiveNotifications {
    /// Reads the muted set from the server and tells the engine what changed since `known`; the new set (or
    /// `known`, if the server could not be asked).
    private func syncMuted(_ known: Set<String>) async -> Set<String> {
        guard let current = try? await client.api.mutedConversationIDs() else { return known }
        for id in current.subtracting(known) { driver.send(.mute(conversationID: id)) }
        for id in known.subtracting(current) { driver.send(.unmute(conversationID: id)) }
        return current
    }
}

extension LiveNotifications where C == ContinuousClock {
    /// Wires `client` to a notifier for `userID` on the real clock.
    public convenience init(client: HeraldClient, userID: String, config: BannerConfig = .standard) {
        self.init(client: client, userID: userID, config: config, clock: ContinuousClock())
    }
}
