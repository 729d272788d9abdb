import Foundation
import HeraldCore
import HeraldPresentation
import Testing

@Suite("System notifications: quiet hours make them passive and soundless")
struct SystemNotificationStyleTests {
    @Test("a notification rings and is active; one in quiet hours is passive, without sound")
    func style() {
        let ringing = LocalNotification(messageID: "m1", title: "New message from Bob", body: "Hi", thread: "alice-bob")
        #expect(SystemNotificationStyle(for: ringing) == SystemNotificationStyle(playsSound: true, interruption: .active))
        var quiet = ringing
        quiet.silent = true
        #expect(SystemNotificationStyle(for: quiet) == SystemNotificationStyle(playsSound: false, interruption: .passive))
    }

    @Test("the engine marks a background notification silent in quiet hours, and the style follows")
    func fromTheEngine() {
        let noon = [QuietWindow(days: Weekday.allCases, start: "12:00", end: "13:00")]
        let settings = NotificationSettings(timeZone: "UTC", quietHours: noon)
        var notifier = Notifier(userID: "alice", device: DeviceState(appState: .background, settings: settings))
        let sent = try! Date("2026-11-25T12:30:00Z", strategy: Date.ISO8601FormatStyle())
        let incoming = IncomingMessage(
            message: Message(id: "m1", conversationID: "team", senderID: "bob", text: "Hi", sentAt: sent),
            conversation: Conversation(id: "team", kind: .group, title: "Team"), sender: Person(id: "bob", displayName: "Bob"))
        guard case .local(let notification) = notifier.handle(.message(incoming), at: .zero).first?.effect else {
            Issue.record("no local notification")
            return
        }
        #expect(SystemNotificationStyle(for: notification).interruption == .passive)
    }

    @Test("a burst's later message, from the engine: passive, soundless, under the first's identifier, the count as its subtitle")
    func burst() {
        var notifier = Notifier(userID: "alice", device: DeviceState(appState: .background))
        let conversation = Conversation(id: "team", kind: .group, title: "Team")
        var posted: [LocalNotification] = []
        for index in 1...3 {
            let incoming = IncomingMessage(
                message: Message(id: "m\(index)", conversationID: "team", senderID: "bob", text: "Hi \(index)", sentAt: Date(), seq: Int64(index)),
                conversation: conversation, sender: Person(id: "bob", displayName: "Bob"))
            for case .local(let notification) in notifier.handle(.message(incoming), at: .seconds(index)).map(\.effect) {
                posted.append(notification)
            }
        }
        #expect(posted.map(\.identifier) == ["herald-1", "herald-1", "herald-1"])
        #expect(SystemNotificationStyle(for: posted[0]) == SystemNotificationStyle(playsSound: true, interruption: .active))
        #expect(SystemNotificationStyle(for: posted[2]) == SystemNotificationStyle(
            playsSound: false, interruption: .passive, subtitle: "3 new messages"))
    }
}
