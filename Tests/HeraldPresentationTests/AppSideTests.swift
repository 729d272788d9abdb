import Foundation
@testable import HeraldClient
import HeraldCore
import HeraldPresentation
import HeraldTestSupport
import HeraldURLSession
import Testing

/// The decisions behind HeraldUI's fixes, where tests reach them: VoiceOver hears a repeated text twice and holds
/// the banner while it reads it, another account gets another presenter, a tap before sign-in opens its chat after
/// it, Herald's pushes are read by their payload, and two windows share one `LiveNotifications`.
@Suite("The app side", .timeLimit(.minutes(2)))
@MainActor
struct AppSideTests {
    @Test("two banners in a row with the same words are two announcements (VoiceOver says both); an update with new words is a new one, the same words not")
    func repeatedAnnouncement() {
        var screen = Screen()
        screen.input(message("m1", text: "ok"), at: 0)
        let first = screen.presentation.announcement
        screen.advance(to: 4.5) // m1 timed out and left
        screen.input(message("m2", text: "ok"), at: 5)
        let second = screen.presentation.announcement
        #expect(first?.text == second?.text)
        #expect(first != second, "a new value, so a view's onChange posts it again")
        #expect(second?.serial == 2)
    }

    @Test("while VoiceOver's focus is on the banner its timer waits, with a finger too: it resumes when the last of them lets go")
    func voiceOverHoldsTheBanner() {
        var screen = Screen()
        screen.input(message("m1"), at: 0)
        screen.intent(.accessibilityFocus(true), at: 1)
        #expect(screen.presentation.isHeld)
        screen.advance(to: 10)
        #expect(screen.presentation.current?.phase == .shown, "not dismissed while read")
        // A finger comes and goes while VoiceOver still reads it: still held.
        screen.intent(.touchBegan, at: 10)
        screen.intent(.touchEnded(dy: 0), at: 10.5) // a hold, not a tap
        screen.advance(to: 20)
        #expect(screen.presentation.current?.phase == .shown)
        // Focus leaves: the 3 s that were left run out.
        screen.intent(.accessibilityFocus(false), at: 20)
        #expect(!screen.presentation.isHeld)
        screen.advance(to: 22.9)
        #expect(screen.presentation.current?.phase == .shown)
        screen.advance(to: 23.1)
        #expect(screen.effects.filter { if case .dismiss = $0 { true } else { false } } == [.dismiss(bannerID: "m1", reason: .timeout)])
        // The holds themselves: the engine paused at the first and resumed at the last, nothing else.
        var presentation = BannerPresentation()
        _ = presentation.apply(.show(Banner.general(id: "g", message: "Saved", tone: .success, icon: nil)), at: .zero)
        #expect(presentation.handle(.accessibilityFocus(true), at: at(1)) == [.gesture(.touchDown)])
        #expect(presentation.handle(.touchBegan, at: at(2)) == [])
        #expect(presentation.handle(.touchEnded(dy: 0), at: at(3)) == [])
        #expect(presentation.handle(.accessibilityFocus(false), at: at(4)) == [.gesture(.touchUp)])
    }

    @Test("a view given another account's notifications gets a new presenter; the same account's again keeps its own")
    func accountSwitch() async {
        let alice = BannerPresenter(gestures: { _ in }, appState: { _ in })
        var slot = PresenterSlot(key: "alice", presenter: alice)
        #expect(slot.presenter(for: "alice") { BannerPresenter(gestures: { _ in }, appState: { _ in }) } === alice)
        let bob = slot.presenter(for: "bob") { BannerPresenter(gestures: { _ in }, appState: { _ in }) }
        #expect(bob !== alice)
        #expect(slot.current === bob && slot.key == "bob")

        // Alice's banner on her presenter; the new account's presenter starts empty and draws only Bob's.
        let clock = ManualClock()
        let (aliceEffects, aliceSink) = AsyncStream<NotificationEffect>.makeStream()
        let (bobEffects, bobSink) = AsyncStream<NotificationEffect>.makeStream()
        async let aliceRun: Void = alice.run(effects: aliceEffects, clock: clock)
        async let bobRun: Void = bob.run(effects: bobEffects, clock: clock)
        aliceSink.yield(.show(.general(id: "alice-1", message: "For Alice", tone: .primary, icon: nil)))
        bobSink.yield(.show(.general(id: "bob-1", message: "For Bob", tone: .primary, icon: nil)))
        await eventually("both drawn") { alice.current != nil && bob.current != nil }
        #expect(alice.current?.id == "alice-1")
        #expect(bob.current?.id == "bob-1")
        aliceSink.finish()
        bobSink.finish()
        _ = await (aliceRun, bobRun)
    }

    @Test("a notification tapped before sign-in opens its chat once a session attaches, once; after sign-out taps wait again")
    func openAfterSignIn() {
        let opens = NotificationOpens()
        var opened: [String] = []
        opens.tapped("c1")
        opens.tapped("c2") // the last tap is what the person asked for
        #expect(opens.held == "c2")
        opens.attach { opened.append($0) }
        #expect(opened == ["c2"])
        #expect(opens.held == nil)
        opens.tapped("c3")
        #expect(opened == ["c2", "c3"])
        opens.detach()
        opens.tapped("c4")
        #expect(opened == ["c2", "c3"])
        opens.attach { opened.append($0) }
        #expect(opened == ["c2", "c3", "c4"])
        opens.tapped("")
        #expect(opened.count == 3, "an empty id opens nothing")
    }

    @Test("a push's payload: the clear with its badge beside aps (and in aps, as older servers sent it), a message's ids, anything else nothing")
    func remoteNotifications() throws {
        func payload(_ json: String) throws -> [AnyHashable: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [AnyHashable: Any])
        }
        #expect(RemoteNotification(userInfo: try payload(#"{"aps": {"content-available": 1}, "badge": 3, "conversationId": "c1", "seq": "42", "type": "read"}"#))
                == .clear(conversationID: "c1", badge: 3))
        #expect(RemoteNotification(userInfo: try payload(#"{"aps": {"badge": 0, "content-available": 1}, "conversationId": "c1", "type": "read"}"#))
                == .clear(conversationID: "c1", badge: 0))
        #expect(RemoteNotification(userInfo: try payload(#"{"aps": {"alert": {"title": "t"}}, "conversationId": "c1", "messageId": "m1", "seq": "7", "senderId": "bob", "type": "message"}"#))
                == .message(conversationID: "c1", messageID: "m1", seq: 7, senderID: "bob"))
        #expect(RemoteNotification(userInfo: try payload(#"{"conversationId": 5, "type": "read"}"#)) == .other)
        #expect(RemoteNotification(userInfo: try payload(#"{"conversationId": "c1", "type": "something"}"#)) == .other)
        #expect(RemoteNotification(userInfo: try payload(#"{"aps": {"alert": "hi"}}"#)) == .other)
        #expect(RemoteNotification(userInfo: try payload(#"{"conversationId": "c1", "type": "read", "badge": "3"}"#))
                == .clear(conversationID: "c1", badge: nil), "a badge that is not a number is not one")
        #expect(RemoteNotification(userInfo: try payload(#"{"aps": {"content-available": 1}, "badge": 2, "conversationId": "c1", "messageId": "m1", "notificationId": "herald-7", "type": "message_deleted"}"#))
                == .withdraw(conversationID: "c1", notificationID: "herald-7", badge: 2))
        #expect(RemoteNotification(userInfo: try payload(#"{"conversationId": "c1", "messageId": "m1", "type": "message_deleted"}"#)) == .other,
                "without the notification's identifier there is nothing to remove")
    }

    @Test("an edit of a notification is posted only over one still delivered; anything else always")
    func editsOnlyIfDelivered() {
        var notification = LocalNotification(messageID: "m1", title: "New message from Bob", body: "fixed", thread: "c1", seq: 7)
        #expect(SystemNotificationStyle.posts(notification, delivered: []))
        notification.onlyIfDelivered = true
        notification.silent = true
        #expect(!SystemNotificationStyle.posts(notification, delivered: ["herald-8"]), "swiped away: it stays away")
        #expect(SystemNotificationStyle.posts(notification, delivered: ["herald-7"]))
        #expect(!SystemNotificationStyle(for: notification).playsSound)
    }

    @Test("a message push's sender and group for a communication notification; an event's, the backend's, a clear or a stranger's payload has none")
    func communicationNotification() throws {
        func payload(_ json: String) throws -> [AnyHashable: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [AnyHashable: Any])
        }
        let group = try payload(#"""
            {"aps": {"alert": {"title": "New message in Team", "body": "Bob: hi"}, "category": "HERALD_MESSAGE"},
             "type": "message", "conversationId": "c1", "messageId": "m1", "seq": "7", "senderId": "bob",
             "senderName": "Bob\u0007 Smith\u009b", "senderAvatarURL": "https://example.com/bob.png", "isGroup": "true",
             "conversationTitle": "Team", "mentioned": "true", "category": "HERALD_MESSAGE"}
            """#)
        let parts = try #require(CommunicationNotification(userInfo: group))
        #expect(parts.conversationID == "c1" && parts.senderID == "bob")
        #expect(parts.senderName == "Bob Smith", "control characters are dropped")
        #expect(parts.senderPicture == URL(string: "https://example.com/bob.png"))
        #expect(parts.groupName == "Team" && parts.isGroup && parts.mentioned)

        let direct = try #require(CommunicationNotification(userInfo: try payload(#"""
            {"type": "message", "conversationId": "c2", "senderId": "bob", "senderName": "Bob", "isGroup": "false",
             "conversationTitle": "ignored", "senderAvatarURL": "file:///etc/passwd"}
            """#)))
        #expect(direct.groupName == nil && !direct.isGroup && !direct.mentioned)
        #expect(direct.senderPicture == nil, "only an http or https picture is fetched")

        // An event's push and the backend's carry no sender's name; a clear is no message; types are checked.
        #expect(CommunicationNotification(userInfo: try payload(#"{"type": "message", "conversationId": "c1", "senderId": "ann"}"#)) == nil)
        #expect(CommunicationNotification(userInfo: try payload(#"{"type": "message", "conversationId": "c1", "senderId": "", "senderName": "Admin"}"#)) == nil)
        #expect(CommunicationNotification(userInfo: try payload(#"{"type": "read", "conversationId": "c1", "senderId": "bob", "senderName": "Bob"}"#)) == nil)
        #expect(CommunicationNotification(userInfo: try payload(#"{"type": "message", "conversationId": "c1", "senderId": "bob", "senderName": 5}"#)) == nil)
        #expect(CommunicationNotification(userInfo: try payload(#"{"type": "message", "conversationId": "c1", "senderId": "bob", "senderName": "\u0001"}"#)) == nil)
    }

    @Test("two windows run one LiveNotifications: closing the one that carries the connection leaves the other its banners")
    nonisolated func twoRuns() async throws {
        // No server: the connection keeps trying (unreachable), the engine and its effects run all the same.
        var configuration = ClientConfiguration(server: URL(string: "http://127.0.0.1:9")!, token: "t", transport: .urlSession)
        configuration.initialBackoff = .milliseconds(50)
        let live = LiveNotifications(client: HeraldClient(configuration: configuration), userID: "alice")
        let shown = LockedState<[String]>([])
        let window2Effects = live.effects
        let drawing: @Sendable () async throws -> Void = {
            for await effect in window2Effects {
                if case .show(let banner) = effect { shown.withLock { $0.append(banner.id) } }
            }
        }
        let (opening, open) = AsyncStream<Void>.makeStream()
        let window2: @Sendable () async throws -> Void = {
            for await _ in opening { break }
            await live.run()
        }
        try await withBackground([drawing, window2]) {
            // Window 1 runs first, so it carries the connection and the engine: a banner shows.
            try await withBackground({ await live.run() }) {
                let one = live.show("one", duration: .milliseconds(50))
                try await waitFor("the first banner") { shown.withLock { $0 } == [one] }
                open.yield() // window 2 opens beside it
                try await waitFor("window 2 running") { live.runsUnderWay == 2 }
            }
            // Window 1 closed: window 2 carries on, and its subscription did not end.
            let two = live.show("two", duration: .milliseconds(50))
            try await waitFor("the banner after window 1 closed") { shown.withLock { $0 }.count == 2 && shown.withLock { $0 }.last == two }
        }
    }
}

/// Waits, checking every 10 ms, for at most 10 s (from any isolation).
func waitFor(_ what: String, _ condition: @Sendable () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw Timeout(what: what) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

struct Timeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "never within the limit: \(what)" }
}
