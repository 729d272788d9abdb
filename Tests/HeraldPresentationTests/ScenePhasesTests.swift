import HeraldCore
import HeraldPresentation
import Testing

/// An iPad app's windows each report their scene phase; the app state they mean together is what reaches the one
/// `LiveNotifications`: the foreground while any window is active.
@Suite("Scene phases of several windows")
struct ScenePhasesTests {
    @Test("two scenes, one active: the foreground; the other going to the background changes nothing; the last going makes it the background")
    func twoScenes() {
        var scenes = ScenePhases<String>()
        #expect(scenes.set(.active, for: "left") == .foreground)
        #expect(scenes.set(.active, for: "right") == nil, "still the foreground: nothing to report")
        #expect(scenes.set(.background, for: "right") == nil, "the left window is still active")
        #expect(scenes.combined == .active)
        #expect(scenes.set(.inactive, for: "left") == nil, "inactive changes nothing (Control Center, an alert)")
        #expect(scenes.set(.background, for: "left") == .background, "no window is active or inactive now")
        #expect(scenes.set(.active, for: "right") == .foreground)
        #expect(scenes.reported == .foreground)
    }

    @Test("a scene that went away is forgotten: what the others are in decides")
    func forgotten() {
        var scenes = ScenePhases<Int>()
        #expect(scenes.set(.background, for: 1) == .background)
        #expect(scenes.set(.active, for: 2) == .foreground)
        #expect(scenes.remove(2) == .background, "the active window closed; the one left is in the background")
        #expect(scenes.remove(2) == nil, "gone already")
        #expect(scenes.remove(1) == nil, "no window left: nothing to say")
        #expect(scenes.isEmpty && scenes.combined == nil)
        // A window that comes back starts afresh.
        #expect(scenes.set(.active, for: 3) == .foreground)
    }

    @Test("one scene behaves as the single scene always did: active the foreground, inactive nothing, background the background")
    func oneScene() {
        var scenes = ScenePhases<String>()
        #expect(scenes.set(.inactive, for: "only") == nil)
        #expect(scenes.set(.active, for: "only") == .foreground)
        #expect(scenes.set(.inactive, for: "only") == nil)
        #expect(scenes.set(.background, for: "only") == .background)
        #expect(scenes.set(.inactive, for: "only") == nil)
        #expect(scenes.set(.active, for: "only") == .foreground)
    }
}
