import Foundation
import HeraldCore
import Testing

/// Instants written as in the docs.
private func at(_ text: String) -> Date {
    try! Date(text, strategy: Date.ISO8601FormatStyle())
}

private let everyDay = Weekday.allCases

@Suite("Quiet hours are read in the user's time zone, daylight-saving time included")
struct QuietHoursTests {
    func quiet(_ zone: String, _ windows: [QuietWindow], at instant: String) -> Bool {
        NotificationSettings(timeZone: zone, quietHours: windows).isQuiet(at: at(instant))
    }

    @Test("a window across midnight: from its start on its day until its end the next morning")
    func acrossMidnight() {
        let weeknights = [QuietWindow(days: [.mon, .tue, .wed, .thu, .fri], start: "22:00", end: "07:00")]
        // Tuesday 2026-11-24 in Berlin is UTC+1.
        #expect(quiet("Europe/Berlin", weeknights, at: "2026-11-24T21:00:00Z"))        // Tue 22:00
        #expect(!quiet("Europe/Berlin", weeknights, at: "2026-11-24T20:59:00Z"))       // Tue 21:59
        #expect(quiet("Europe/Berlin", weeknights, at: "2026-11-25T05:59:00Z"))        // Wed 06:59
        #expect(!quiet("Europe/Berlin", weeknights, at: "2026-11-25T06:00:00Z"))       // Wed 07:00: the end is open
        // Saturday 00:30 belongs to Friday night; Sunday 00:30 to no night (Saturday is not among the days).
        #expect(quiet("Europe/Berlin", weeknights, at: "2026-11-27T23:30:00Z"))        // Sat 00:30
        #expect(!quiet("Europe/Berlin", weeknights, at: "2026-11-28T23:30:00Z"))       // Sun 00:30
        #expect(!quiet("Europe/Berlin", weeknights, at: "2026-11-28T21:30:00Z"))       // Sat 22:30
        // Monday early: Sunday is not a day of it.
        #expect(!quiet("Europe/Berlin", weeknights, at: "2026-11-30T05:00:00Z"))       // Mon 06:00
    }

    @Test("across the spring change in Berlin: the same UTC hour is 06:30 before and 07:30 after")
    func springForward() {
        let nights = [QuietWindow(days: everyDay, start: "22:00", end: "07:00")]
        #expect(quiet("Europe/Berlin", nights, at: "2026-03-28T05:30:00Z"))            // Sat 06:30 CET
        #expect(!quiet("Europe/Berlin", nights, at: "2026-03-29T05:30:00Z"))           // Sun 07:30 CEST
        // 02:00 to 03:00 local does not exist that night; the hour before and after are read as they are.
        #expect(quiet("Europe/Berlin", nights, at: "2026-03-29T00:59:00Z"))            // 01:59 CET
        #expect(quiet("Europe/Berlin", nights, at: "2026-03-29T01:00:00Z"))            // 03:00 CEST
    }

    @Test("across the autumn change in New York: the repeated hour is quiet both times when the window covers it")
    func fallBack() {
        let late = [QuietWindow(days: [.sat], start: "23:00", end: "01:30")]
        // 2026-11-01 01:00 to 02:00 EDT happens, then 01:00 to 02:00 EST again.
        #expect(quiet("America/New_York", late, at: "2026-11-01T03:30:00Z"))           // Sat 23:30 EDT
        #expect(quiet("America/New_York", late, at: "2026-11-01T05:15:00Z"))           // Sun 01:15 EDT
        #expect(quiet("America/New_York", late, at: "2026-11-01T06:15:00Z"))           // Sun 01:15 EST, again
        #expect(!quiet("America/New_York", late, at: "2026-11-01T06:45:00Z"))          // Sun 01:45 EST
    }

    @Test("zones a half or three quarters of an hour off, and the southern hemisphere's summer")
    func otherZones() {
        let lunch = [QuietWindow(days: everyDay, start: "12:00", end: "13:00")]
        #expect(quiet("Asia/Kolkata", lunch, at: "2026-11-25T06:30:00Z"))              // 12:00 IST
        #expect(!quiet("Asia/Kolkata", lunch, at: "2026-11-25T06:29:00Z"))
        #expect(quiet("Asia/Kathmandu", lunch, at: "2026-11-25T06:15:00Z"))            // 12:00 NPT (+5:45)
        // Sydney is on daylight time (UTC+11) in November, standard time (UTC+10) in June.
        #expect(quiet("Australia/Sydney", lunch, at: "2026-11-25T01:00:00Z"))
        #expect(!quiet("Australia/Sydney", lunch, at: "2026-06-25T01:00:00Z"))
        #expect(quiet("Australia/Sydney", lunch, at: "2026-06-25T02:00:00Z"))
    }

    @Test("a window to 24:00 reaches midnight; no windows or no zone is never quiet")
    func edges() {
        let evening = [QuietWindow(days: [.wed], start: "20:00", end: "24:00")]
        #expect(quiet("UTC", evening, at: "2026-11-25T23:59:00Z"))
        #expect(!quiet("UTC", evening, at: "2026-11-26T00:00:00Z"))
        #expect(!NotificationSettings(timeZone: "UTC").isQuiet(at: at("2026-11-25T23:59:00Z")))
        #expect(!NotificationSettings(quietHours: evening).isQuiet(at: at("2026-11-25T23:59:00Z")))
    }

    @Test("bad settings say what is wrong")
    func problems() {
        func problem(_ zone: String?, _ windows: [QuietWindow]) -> String? {
            NotificationSettings(timeZone: zone, quietHours: windows).problem
        }
        let night = QuietWindow(days: [.mon], start: "22:00", end: "07:00")
        #expect(problem("Europe/Berlin", [night]) == nil)
        #expect(problem(nil, []) == nil)
        #expect(problem("Mars/Olympus_Mons", [])?.contains("not an IANA time zone") == true)
        #expect(problem("../../etc/passwd", [])?.contains("not an IANA time zone") == true)
        #expect(problem("Europe/Berlin\u{0}", [])?.contains("not an IANA time zone") == true)
        #expect(problem(String(repeating: "A", count: 65), [])?.contains("not an IANA time zone") == true)
        #expect(problem(nil, [night]) == "quiet hours need a timeZone")
        #expect(problem("UTC", Array(repeating: night, count: 8)) == "at most 7 quiet windows, not 8")
        #expect(problem("UTC", [QuietWindow(days: [], start: "22:00", end: "07:00")]) == "quietHours[0] has no days")
        #expect(problem("UTC", [QuietWindow(days: [.mon, .mon], start: "22:00", end: "07:00")])
            == "quietHours[0] names a day twice")
        for bad in ["24:00", "7:00", "22:60", "ab:cd", "", "22:00:00", "-1:00"] {
            #expect(problem("UTC", [QuietWindow(days: [.mon], start: bad, end: "07:00")])?.contains(".start") == true, "\(bad)")
        }
        #expect(problem("UTC", [QuietWindow(days: [.mon], start: "22:00", end: "24:01")])?.contains(".end") == true)
        #expect(problem("UTC", [QuietWindow(days: [.mon], start: "22:00", end: "22:00")])?.contains("no length") == true)
    }
}

@Suite("Who hears what: levels, mentions, snooze and quiet hours (docs/behaviour.md §1)")
struct NotificationLevelsTests {
    let sent = at("2026-11-25T12:00:00Z")

    func message(mentions: [String] = [], all: Bool = false) -> Message {
        Message(id: "m", conversationID: "team", senderID: "bob", text: "hi", sentAt: sent, mentions: mentions, mentionsAll: all)
    }

    func told(
        _ message: Message, in kind: Conversation.Kind = .group, level: LevelChoice? = nil,
        settings: NotificationSettings = NotificationSettings()
    ) -> Interruption {
        NotificationPolicy.interruption(for: message, in: kind, to: "alice", level: level, settings: settings)
    }

    @Test("each level, with and without a mention; @all and a direct chat are mentions; nothing wins over them")
    func levels() {
        let plain = message(), named = message(mentions: ["carol", "alice"]), other = message(mentions: ["carol"])
        let everyone = message(all: true)
        for candidate in [plain, named, other, everyone] {
            #expect(told(candidate, level: LevelChoice(level: .all)) == .ring)
            #expect(told(candidate, level: .muted) == .skip(.muted))
        }
        let mentionsOnly = LevelChoice(level: .mentions)
        #expect(told(plain, level: mentionsOnly) == .skip(.unmentioned))
        #expect(told(other, level: mentionsOnly) == .skip(.unmentioned))
        #expect(told(named, level: mentionsOnly) == .ring)
        #expect(told(everyone, level: mentionsOnly) == .ring)
        #expect(told(plain, in: .direct, level: mentionsOnly) == .ring)
        #expect(told(plain, in: .direct, level: .muted) == .skip(.muted))
    }

    @Test("a level holds until its end, then the default level applies; the default is all unless set")
    func until() {
        let muteForAnHour = LevelChoice(level: .nothing, until: sent.addingTimeInterval(3600))
        #expect(told(message(), level: muteForAnHour) == .skip(.muted))
        let ended = LevelChoice(level: .nothing, until: sent)
        #expect(told(message(), level: ended) == .ring)
        #expect(told(message(), level: ended, settings: NotificationSettings(defaultLevel: .mentions)) == .skip(.unmentioned))
        #expect(told(message(), settings: NotificationSettings(defaultLevel: .nothing)) == .skip(.muted))
        #expect(told(message(), level: LevelChoice(level: .all), settings: NotificationSettings(defaultLevel: .nothing)) == .ring)
    }

    @Test("snooze silences everything, mentions and direct chats too, until it ends")
    func snooze() {
        let snoozed = NotificationSettings(snoozeUntil: sent.addingTimeInterval(60))
        #expect(told(message(mentions: ["alice"]), settings: snoozed) == .skip(.snoozed))
        #expect(told(message(), in: .direct, settings: snoozed) == .skip(.snoozed))
        #expect(told(message(), settings: NotificationSettings(snoozeUntil: sent)) == .ring)
    }

    @Test("quiet hours: quietly, a mention rings through only when allowed; banners are not quieted")
    func quietHours() {
        let noon = [QuietWindow(days: Weekday.allCases, start: "12:00", end: "13:00")]
        var settings = NotificationSettings(timeZone: "UTC", quietHours: noon)
        #expect(told(message(), settings: settings) == .quietly)
        #expect(told(message(mentions: ["alice"]), settings: settings) == .quietly)
        settings.mentionsDuringQuietHours = true
        #expect(told(message(), settings: settings) == .quietly)
        #expect(told(message(mentions: ["alice"]), settings: settings) == .ring)
        #expect(told(message(), in: .direct, settings: settings) == .ring)
        let background = DeviceState(appState: .background, settings: settings)
        #expect(NotificationPolicy.delivery(for: message(), in: .group, to: "alice", on: background, alreadySeen: false) == .quietLocal)
        let foreground = DeviceState(appState: .foreground, settings: settings)
        #expect(NotificationPolicy.delivery(for: message(), in: .group, to: "alice", on: foreground, alreadySeen: false) == .banner)
    }

    @Test("mentions in text: names longest first, without regard to case, @all, words end where names do")
    func mentionText() {
        let members = [Person(id: "a1", displayName: "Alice"), Person(id: "a2", displayName: "Alice Johnson"),
                       Person(id: "b", displayName: "Bob")]
        #expect(MentionText.find(in: "@alice johnson and @Bob, hi", members: members) == (["a2", "b"], false))
        #expect(MentionText.find(in: "@Alice! and @all", members: members) == (["a1"], true))
        #expect(MentionText.find(in: "@Bobby @allison mail@Bob.com", members: members).ids == [])
        #expect(MentionText.find(in: "@Bobby @allison", members: members).all == false)
        #expect(MentionText.completions(of: "al", members: members) == ["Alice", "Alice Johnson", "all"])
        #expect(MentionText.completions(of: "B", members: members) == ["Bob"])
    }
}
