import Foundation
import HeraldProtocol
import Testing

/// The troubleshooting answers (issue 59) read from JSON as the API writes it: a test notification's outcome, the
/// notification check, a message's delivery trail; a newer server's check ids, steps and permissions read too.
@Suite("Troubleshooting's wire types")
struct TroubleshootingWireTests {
    static func decode<Value: Decodable>(_ type: Value.Type, _ json: String) throws -> Value {
        try WireJSON.decoder().decode(type, from: Data(json.utf8))
    }

    static func at(_ text: String) throws -> Date {
        try #require(WireJSON.date(text))
    }

    @Test("a test notification's answer: the device, its platform, the outcome, the provider's id or the reason")
    func testNotification() throws {
        let sent = try Self.decode(WireTestNotification.self, """
            {"device":"phone-1","platform":"webpush","outcome":"sent","providerID":"abc-123","reason":null}
            """)
        #expect(sent == WireTestNotification(device: "phone-1", platform: .webpush, outcome: .sent, providerID: "abc-123"))
        let none = try Self.decode(WireTestNotification.self, """
            {"device":"ipad","platform":"apns","outcome":"no_provider","providerID":null,"reason":"set HERALD_APNS_KEY_FILE"}
            """)
        #expect(none.outcome == .noProvider && none.providerID == nil && none.reason == "set HERALD_APNS_KEY_FILE")
        let bare = try Self.decode(WireTestNotification.self, #"{"device":"web","platform":"webpush","outcome":"logged"}"#)
        #expect(bare == WireTestNotification(device: "web", platform: .webpush, outcome: .logged),
                "the server leaves out what has no value")
        let outcomes = try Self.decode([WireTestNotification.Outcome].self,
                                       #"["sent","logged","retry","device_removed","refused","redirected","no_provider"]"#)
        #expect(outcomes == [.sent, .logged, .retry, .deviceRemoved, .refused, .redirected, .noProvider])
        let newer = try Self.decode(WireTestNotification.self, #"{"device":"web","platform":"webpush","outcome":"queued_elsewhere","reason":"later"}"#)
        #expect(newer.outcome == .unknown && newer.reason == "later", "a newer server's outcome does not break the answer")
    }

    @Test("the check: its time, the seven checks in order with state, words and action, each device with its permission, stream and last pushes")
    func notificationCheck() throws {
        let check = try Self.decode(WireNotificationCheck.self, """
            {"checkedAt":"2026-11-28T23:40:00Z",
             "checks":[
              {"id":"devices","state":"ok","title":"Devices","detail":"2 devices can get pushes.","action":null},
              {"id":"permission","state":"problem","title":"Permission","detail":"Notifications are off on phone-1.","action":"Turn them on in Settings."},
              {"id":"level","state":"ok","title":"Level","detail":"Everything.","action":null},
              {"id":"snooze","state":"warning","title":"Snooze","detail":"Snoozed until 08:00.","action":"End the snooze."},
              {"id":"quiet_hours","state":"ok","title":"Quiet hours","detail":"None.","action":null},
              {"id":"pushes","state":"ok","title":"Pushes","detail":"The last went.","action":null},
              {"id":"confirmations","state":"ok","title":"Confirmations","detail":"Fine.","action":null}],
             "devices":[
              {"id":"phone-1","platform":"apns","lastSeen":"2026-11-28T20:00:00.250Z","permission":"denied","connected":false,"confirms":true,
               "lastPushes":[
                {"at":"2026-11-28T23:30:00Z","step":"sent","detail":"apns-id-1","conversation":"c1","message":"m9"},
                {"at":"2026-11-28T23:00:00Z","step":"logged","detail":null,"conversation":"","message":null}]},
              {"id":"browser","platform":"webpush","lastSeen":null,"permission":null,"connected":true,"confirms":null,"lastPushes":[]},
              {"id":"tablet","platform":"fcm","connected":false,"lastPushes":[]}]}
            """)
        #expect(check.checkedAt == (try Self.at("2026-11-28T23:40:00Z")))
        #expect(check.checks.map(\.id) == ["devices", "permission", "level", "snooze", "quiet_hours", "pushes", "confirmations"])
        #expect(check.checks.map(\.state) == [.ok, .problem, .ok, .warning, .ok, .ok, .ok])
        #expect(check.checks[1] == WireNotificationCheck.Check(
            id: "permission", state: .problem, title: "Permission", detail: "Notifications are off on phone-1.",
            action: "Turn them on in Settings."))
        #expect(check.checks[0].action == nil)

        let phone = check.devices[0]
        #expect(phone.id == "phone-1" && phone.platform == .apns && phone.permission == .denied)
        #expect(phone.lastSeen == (try Self.at("2026-11-28T20:00:00.250Z")))
        #expect(!phone.connected && phone.confirms == true)
        #expect(phone.lastPushes == [
            WireNotificationCheck.Push(at: try Self.at("2026-11-28T23:30:00Z"), step: "sent", detail: "apns-id-1", conversation: "c1", message: "m9"),
            WireNotificationCheck.Push(at: try Self.at("2026-11-28T23:00:00Z"), step: "logged", detail: nil, conversation: "", message: nil),
        ])
        let browser = check.devices[1]
        #expect(browser.lastSeen == nil && browser.permission == nil && browser.connected && browser.confirms == nil)
        #expect(browser.lastPushes.isEmpty)
        let tablet = check.devices[2]
        #expect(tablet.lastSeen == nil && tablet.permission == nil && tablet.confirms == nil, "left out reads as null")
    }

    @Test("a newer server's check, permission and step read without breaking the answer: the check and the step as they came, the permission as unknown")
    func newerCheckValues() throws {
        let check = try Self.decode(WireNotificationCheck.self, """
            {"checkedAt":"2026-11-28T23:40:00Z",
             "checks":[{"id":"battery_saver","state":"warning","title":"Battery","detail":"Saver is on.","action":null}],
             "devices":[{"id":"p","platform":"fcm","lastSeen":null,"permission":"blocked_by_admin","connected":false,"confirms":false,
                         "lastPushes":[{"at":"2026-11-28T23:30:00Z","step":"bounced","detail":null,"conversation":"c","message":"m"}]}]}
            """)
        #expect(check.checks[0].id == "battery_saver" && check.checks[0].state == .warning)
        #expect(check.devices[0].permission == .unknown)
        #expect(check.devices[0].confirms == false)
        #expect(check.devices[0].lastPushes[0].step == "bounced")
        let state = try Self.decode(WireNotificationCheck.Check.self, #"{"id":"x","state":"critical","title":"T","detail":"D"}"#)
        #expect(state.state == .warning, "a state this build does not know reads as a warning")
    }

    @Test("a message's trail: the message, the hours kept, each member's summary, read, steps, and each device's confirmed and steps")
    func deliveries() throws {
        let trail = try Self.decode(WireDeliveries.self, """
            {"conversation":"team","message":{"id":"m1","seq":42,"sender":"alice","sentAt":"2026-11-28T23:40:00Z"},
             "trailHours":24,
             "members":[
              {"user":"bob","summary":"pushed","read":false,
               "steps":[{"at":"2026-11-28T23:40:00.010Z","step":"queued","reasons":["quiet_hours","waits_for_member"],"detail":null}],
               "devices":[
                {"id":"bob-phone","platform":"apns","confirmed":false,
                 "steps":[{"at":"2026-11-28T23:40:00.020Z","step":"queued","reasons":["waits_for_device"],"detail":null},
                          {"at":"2026-11-28T23:40:05Z","step":"sent","reasons":[],"detail":"apns-id-7"},
                          {"at":"2026-11-28T23:41:00Z","step":"sent","reasons":["follow_up"],"detail":"apns-id-8"}]},
                {"id":"bob-web","platform":"webpush","confirmed":true,
                 "steps":[{"at":"2026-11-28T23:40:01Z","step":"confirmed","reasons":[],"detail":null}]}]},
              {"user":"charlie","summary":"muted","read":true,
               "steps":[{"at":"2026-11-28T23:40:00Z","step":"skipped","reasons":["muted"],"detail":null}],
               "devices":[{"id":"old-phone","platform":null,"confirmed":false,"steps":[]}]}]}
            """)
        #expect(trail.conversation == "team" && trail.trailHours == 24)
        #expect(trail.message == WireDeliveries.Message(id: "m1", seq: 42, sender: "alice", sentAt: try Self.at("2026-11-28T23:40:00Z")))
        #expect(trail.members.map(\.user) == ["bob", "charlie"])
        let bob = trail.members[0]
        #expect(bob.summary == "pushed" && !bob.read)
        #expect(bob.steps == [WireTrailStep(at: try Self.at("2026-11-28T23:40:00.010Z"), step: "queued", reasons: ["quiet_hours", "waits_for_member"])])
        #expect(bob.devices.map(\.id) == ["bob-phone", "bob-web"])
        #expect(bob.devices[0].platform == .apns && !bob.devices[0].confirmed)
        #expect(bob.devices[0].steps.map(\.step) == ["queued", "sent", "sent"])
        #expect(bob.devices[0].steps[1].detail == "apns-id-7" && bob.devices[0].steps[1].reasons.isEmpty)
        #expect(bob.devices[0].steps[2].reasons == ["follow_up"])
        #expect(bob.devices[1].confirmed && bob.devices[1].steps.map(\.step) == ["confirmed"])
        let charlie = trail.members[1]
        #expect(charlie.summary == "muted" && charlie.read)
        #expect(charlie.steps.first?.step == "skipped" && charlie.steps.first?.reasons == ["muted"])
        #expect(charlie.devices == [WireDeliveries.Device(id: "old-phone", platform: nil, confirmed: false, steps: [])],
                "a device removed since is there without its platform")
    }

    @Test("a permission is written as the contract spells it (not_asked), and each reads back as itself")
    func permissionSpelling() throws {
        let permissions: [DevicePermission] = [.granted, .denied, .provisional, .notAsked, .unknown]
        #expect(WireJSON.string(permissions) == #"["granted","denied","provisional","not_asked","unknown"]"#)
        #expect(try Self.decode([DevicePermission].self, #"["granted","denied","provisional","not_asked","unknown"]"#) == permissions)
        #expect(WireJSON.string(WirePermissionReport(permission: .notAsked)) == #"{"permission":"not_asked"}"#)
    }

    @Test("a device as GET /v1/devices lists it: its permission and last seen, both null when never reported, both absent from an older server")
    func listedDevice() throws {
        let list = try Self.decode(WireDeviceList.self, """
            {"devices":[
              {"id":"a","platform":"apns","token":"t1","permission":"provisional","lastSeen":"2026-11-28T23:00:00Z"},
              {"id":"b","platform":"fcm","token":"t2","permission":null,"lastSeen":null},
              {"id":"c","platform":"expo","token":"t3"}]}
            """)
        #expect(list.devices[0] == WireDevice(id: "a", platform: .apns, token: "t1", permission: .provisional,
                                              lastSeen: try Self.at("2026-11-28T23:00:00Z")))
        #expect(list.devices[1] == WireDevice(id: "b", platform: .fcm, token: "t2"))
        #expect(list.devices[2] == WireDevice(id: "c", platform: .expo, token: "t3"))
    }
}
