import HeraldCore
import Testing

@Suite("When to notify (docs/behaviour.md §1, rules 1 to 6)")
struct NotificationPolicyTests {
    let fromBob = Cast.message("m1", in: Cast.aliceBob, from: Cast.bob).message

    func delivery(
        _ message: Message,
        _ device: DeviceState = DeviceState(),
        seen: Bool = false
    ) -> Delivery {
        NotificationPolicy.delivery(for: message, in: .direct, to: "alice", on: device, alreadySeen: seen)
    }

    @Test("1. the sender's own message: nothing, whatever else holds")
    func own() {
        let own = Cast.message("m1", in: Cast.aliceBob, from: Cast.alice).message
        #expect(delivery(own) == .skip(.own))
        #expect(delivery(own, DeviceState(appState: .background), seen: true) == .skip(.own))
    }

    @Test("2. a message id already seen on this device: nothing")
    func duplicate() {
        #expect(delivery(fromBob, seen: true) == .skip(.duplicate))
    }

    @Test("3. a muted conversation: nothing, in the foreground or the background")
    func muted() {
        #expect(delivery(fromBob, DeviceState(levels: ["alice-bob": .muted])) == .skip(.muted))
        #expect(delivery(fromBob, DeviceState(appState: .background, levels: ["alice-bob": .muted]))
            == .skip(.muted))
    }

    @Test("4. foreground with this conversation open: nothing, it is on screen")
    func active() {
        #expect(delivery(fromBob, DeviceState(openConversationID: "alice-bob")) == .skip(.active))
    }

    @Test("5. foreground on any other screen: an in-app banner")
    func banner() {
        #expect(delivery(fromBob, DeviceState(openConversationID: "alice-charlie")) == .banner)
        #expect(delivery(fromBob, DeviceState(openConversationID: nil)) == .banner)
    }

    @Test("6. background: a system notification; without permission, nothing")
    func background() {
        #expect(delivery(fromBob, DeviceState(appState: .background)) == .local)
        #expect(delivery(fromBob, DeviceState(appState: .background, openConversationID: "alice-bob")) == .local)
        #expect(delivery(fromBob, DeviceState(appState: .background, notificationsPermitted: false))
            == .skip(.permission))
    }

    @Test("permission only matters in the background: banners need none")
    func permissionInForeground() {
        #expect(delivery(fromBob, DeviceState(notificationsPermitted: false)) == .banner)
    }
}
