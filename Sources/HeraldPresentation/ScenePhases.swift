import HeraldCore

/// The scene phases of an app's windows, each by its own id, as the one app state they mean together: an iPad app
/// with two windows has two scenes, each with its phase, and one `LiveNotifications` whose app state is the app's.
///
/// The app is in the foreground while any scene is active; it goes to the background only when none is active or
/// inactive (every scene left is in the background). As for a single scene (``BannerPresentation/appState(for:)``),
/// inactive changes nothing. A scene that went away (its window closed) is forgotten, and what is left decides.
/// Each call returns the app state to report when the one the set means changed, nil otherwise: feed only that to
/// `LiveNotifications.setAppState(_:)`.
public struct ScenePhases<Scene: Hashable & Sendable>: Sendable {
    private var phases: [Scene: ScenePhaseKind] = [:]
    /// The app state last reported, nil before the first.
    public private(set) var reported: AppState?

    /// No scenes yet.
    public init() {}

    /// Whether no scene is known (every window went away).
    public var isEmpty: Bool { phases.isEmpty }

    /// The phase of the scenes together: active if any is, else inactive if any is, else background; nil with none.
    public var combined: ScenePhaseKind? {
        let all = phases.values
        if all.contains(.active) { return .active }
        if all.contains(.inactive) { return .inactive }
        return all.isEmpty ? nil : .background
    }

    /// `scene` is now in `phase` (a new scene is added): the app state to report, if it changed.
    public mutating func set(_ phase: ScenePhaseKind, for scene: Scene) -> AppState? {
        phases[scene] = phase
        return report()
    }

    /// `scene` went away: the app state to report, if what is left changed it.
    public mutating func remove(_ scene: Scene) -> AppState? {
        guard phases.removeValue(forKey: scene) != nil else { return nil }
        return report()
    }

    private mutating func report() -> AppState? {
        guard let phase = combined, let state = BannerPresentation.appState(for: phase), state != reported else { return nil }
        reported = state
        return state
    }
}
