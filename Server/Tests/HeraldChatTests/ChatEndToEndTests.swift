import Foundation
import HeraldClient
import HeraldCore
import HeraldProtocol
@testable import HeraldChat
import HeraldTestSupport
import Testing
import HeraldNIOTransport

/// Runs a command (found on the `PATH`) to its end and returns its standard output.
@discardableResult
func shell(_ arguments: [String]) async throws -> String {
    try await spawn(arguments).stdout
}

/// `herald chat` in a tmux session of its own tmux server (never the user's): keys in, screen out.
struct TmuxChat {
    /// The server's socket, in the test's own folder.
    let socket: String
    let session = "chat"

    /// A tmux command line for this server, without the user's configuration.
    private func tmux(_ arguments: [String]) -> [String] {
        ["tmux", "-S", socket, "-f", "/dev/null"] + arguments
    }

    /// Starts the server with `command` in its one pane, and waits (up to 10 s) until the session is there.
    func start(_ command: String) async throws {
        try await shell(tmux(["new-session", "-d", "-s", session, "-x", "100", "-y", "30", command]))
        let deadline = ContinuousClock.now + .seconds(10)
        var asked = ContinuousClock.now
        while try await spawn(tmux(["has-session", "-t", session])).status != 0 {
            guard ContinuousClock.now < deadline else { throw ProcessFailure("tmux did not start a session for: \(command)") }
            // A request that reached a tmux server on its way out is lost with it: ask again now and then.
            if asked.duration(to: .now) > .seconds(2) {
                asked = .now
                try await shell(tmux(["new-session", "-d", "-s", session, "-x", "100", "-y", "30", command]))
            }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    func keys(_ keys: String...) async throws {
        try await shell(tmux(["send-keys", "-t", session] + keys))
    }

    /// The lines on the screen now, with their styles (ANSI escapes).
    func styledScreen() async -> [String] {
        (try? await shell(tmux(["capture-pane", "-e", "-p", "-t", session])))?.components(separatedBy: "\n") ?? []
    }

    /// The lines on the screen now.
    func screen() async -> [String] {
        (try? await shell(tmux(["capture-pane", "-p", "-t", session])))?.components(separatedBy: "\n") ?? []
    }

    /// Waits up to `timeout` for `condition` on the screen; the screen when it held, or nil.
    func wait(_ timeout: Duration = .seconds(10), for condition: ([String]) -> Bool) async throws -> [String]? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            let lines = await screen()
            if condition(lines) { return lines }
            try await Task.sleep(for: .milliseconds(25))
        }
        return nil
    }

    /// Moves down the list (at most 6 chats) until the title bar names `title`.
    func open(_ title: String) async throws {
        for _ in 0..<6 where try await wait(.milliseconds(300), for: { $0.first?.contains("· \(title) ·") == true }) == nil {
            try await keys("Down")
        }
    }

    /// Whether `text` comes on the screen within 3 s; when it does not, records an issue with the screen.
    func shows(_ text: String) async throws -> Bool {
        if try await wait(.seconds(3), for: { $0.contains { $0.contains(text) } }) != nil { return true }
        Issue.record("not on the screen: \(text)\n\((await screen()).joined(separator: "\n"))")
        return false
    }

    /// Types `line` and Enter, as a user at the pane's shell would.
    func type(_ line: String) async throws {
        try await keys("-l", line)
        try await keys("Enter")
    }

    /// A tmux format (`#{...}`) for the pane: its modes, its size, its process.
    func format(_ format: String) async throws -> String {
        try await shell(tmux(["display-message", "-p", "-t", session, format])).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes the window `columns` × `rows`, as a user dragging its corner would.
    func resize(columns: Int, rows: Int) async throws {
        try await shell(tmux(["resize-window", "-t", session, "-x", "\(columns)", "-y", "\(rows)"]))
    }

    /// Ends the server and its session.
    /// Ends the tmux server, and waits (up to 5 s) until its socket is gone, so that a `start` after it makes a new
    /// server rather than reaching the one that is still exiting.
    /// Then waits (up to 20 s) until the pane's `herald chat`, told by the hang-up, has exited: a test must not end
    /// with it still running. One that does not exit is named, and killed.
    func stop() async {
        let pane = Int32((try? await format("#{pane_pid}")) ?? "")
        _ = try? await shell(tmux(["kill-server"]))
        let deadline = ContinuousClock.now + .seconds(5)
        while FileManager.default.fileExists(atPath: socket), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        guard let pane, pane > 0 else { return }
        let exited = ContinuousClock.now + .seconds(20)
        while Self.running(pane) {
            guard ContinuousClock.now < exited else {
                Issue.record("herald chat (pid \(pane)) did not exit within 20 s of its terminal's hang-up; killed")
                kill(pane, SIGKILL)
                return
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Whether the process `pid` is still running (a zombie waiting to be reaped is not).
    private static func running(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        // The state follows the command's closing parenthesis: "pid (comm) S ...".
        guard let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first != "Z"
    }
}

/// Users of the demo server acting through the HTTP API, as other people's apps would.
struct Poster {
    let port: Int
    let database: String

    func token(_ user: String, name: String) async throws -> String {
        try await runHerald(["token", user, "--name", name, "--database", database]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func api(_ token: String) -> HeraldAPI {
        HeraldAPI(configuration: ClientConfiguration(server: URL(string: "http://127.0.0.1:\(port)")!, token: token, transport: .nio()))
    }

    /// The id of `token`'s user's direct chat with `other`.
    func directChat(_ token: String, with other: String) async throws -> String {
        let chat = try await api(token).conversations().first { $0.conversation.kind == .direct && $0.conversation.members.contains(other) }
        guard let chat else { throw ProcessFailure("no direct chat with \(other)") }
        return chat.conversation.id
    }

    /// The unread count of `token`'s user in `conversation`, as the server has it.
    func unread(_ token: String, in conversation: String) async throws -> Int? {
        try await api(token).conversations().first { $0.conversation.id == conversation }?.unreadCount
    }

    func post(_ token: String, to conversation: String, _ text: String) async throws {
        try await api(token).postMessage(in: conversation, text: text)
    }
}

/// What one end-to-end test works with: a demo server on its own database, and a tmux session.
struct DemoTerminal {
    let folder: URL
    let database: String
    let server: ServerProcess
    let tmux: TmuxChat

    /// `herald chat` as Alice against this server.
    var aliceChat: String {
        "\(heraldExecutable.path) chat --server http://127.0.0.1:\(server.port) --as alice --database \(database)"
    }

    /// Runs `body` with a fresh demo server and tmux session; both end with it, before the folder that holds their
    /// files is removed.
    static func run(_ body: (DemoTerminal) async throws -> Void) async throws {
        let folder = try makeTemporaryFolder("herald-chat")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("herald.sqlite").path
        let server = try await ServerProcess(database: database, demo: true)
        let tmux = TmuxChat(socket: folder.appendingPathComponent("tmux").path)
        var failure: (any Error)?
        do {
            try await body(DemoTerminal(folder: folder, database: database, server: server, tmux: tmux))
        } catch {
            failure = error
        }
        await tmux.stop()
        await server.expectCleanStop("the server stops gracefully with a chat connected")
        if let failure { throw failure }
    }
}

@Suite("herald chat in a real terminal (tmux), against a live demo server", .timeLimit(.minutes(3)), .childProcesses)
struct ChatEndToEndTests {
    @Test("a message from Charlie shows a banner at the top within 1 s; the open key switches; the open chat gets none; an ignored banner goes after 4 s")
    func banners() async throws {
        try await DemoTerminal.run(banners)
    }

    private func banners(_ demo: DemoTerminal) async throws {
        let tmux = demo.tmux
        let poster = Poster(port: demo.server.port, database: demo.database)
        let dana = try await poster.token("dana", name: "Dana Scully")
        _ = try await poster.api(dana).createConversation(kind: .direct, members: ["alice"])
        try await tmux.start(demo.aliceChat)
        let (charlie, bob) = try await (poster.token("charlie", name: "Charlie Davis"), poster.token("bob", name: "Bob"))
        let withAlice = try await poster.directChat(charlie, with: "alice")
        let bobWithAlice = try await poster.directChat(bob, with: "alice")

        #expect(try await tmux.wait { $0.first?.contains("· live") == true } != nil, "connected")
        #expect(try await tmux.wait(.seconds(2)) { $0.contains { $0.contains("Dana Scully") } } != nil,
                "a chat with no messages yet is in the list, by the other person's name")
        // (The demo's history raises no banner: if it did, those banners would hold the top for 4 s each, and
        // Charlie's below could not show within 1 s.)
        for _ in 0..<4 where try await tmux.wait(.milliseconds(300), for: { $0.first?.contains("· Bob ·") == true }) == nil {
            try await tmux.keys("Down")
        }
        #expect((await tmux.screen()).first?.contains("Herald · alice · Bob · live") == true, "Alice has her chat with Bob open")

        let posted = ContinuousClock.now
        try await poster.post(charlie, to: withAlice, "Hey, are you there?")
        let shown = try await tmux.wait(.seconds(1)) { lines in
            lines.prefix(4).contains { $0.contains("[CD] Charlie Davis") } && lines.prefix(4).contains { $0.contains("Hey, are you there?") }
        }
        #expect(shown != nil, "the banner is at the top within 1 s (\(posted.duration(to: .now)))")

        try await tmux.keys("C-o")
        #expect(try await tmux.wait(.seconds(2)) { $0.first?.contains("· Charlie Davis · live") == true } != nil,
                "the open key switched to Charlie's chat")
        #expect(try await tmux.wait(.seconds(2)) { !$0.prefix(4).contains { $0.contains("╭") } } != nil)
        let alice = try await poster.token("alice", name: "Alice Johnson")
        var unread: Int? = nil
        for _ in 0..<40 where unread != 0 {
            try await Task.sleep(for: .milliseconds(25))
            unread = try await poster.unread(alice, in: withAlice)
        }
        #expect(unread == 0, "opening the chat read it, on the server too, for her other sessions and devices")

        try await poster.post(charlie, to: withAlice, "Now you are looking")
        #expect(try await tmux.wait(.seconds(2)) { $0.contains { $0.contains("Charlie Davis: Now you are looking") } } != nil)

        // The next banner shows at once: a banner for the open chat would be holding the top for 4 s. It goes by
        // itself after about 4 s.
        let posted2 = ContinuousClock.now
        try await poster.post(bob, to: bobWithAlice, "Ignored banner")
        let appeared = try await tmux.wait(.seconds(2)) { $0.prefix(4).contains { $0.contains("│ Ignored banner") } }
        #expect(appeared != nil, "a message in the open chat showed no banner ahead of this one")
        #expect(!(appeared ?? []).prefix(4).joined().contains("Now you are looking"))
        let gone = try await tmux.wait(.seconds(8)) { !$0.prefix(4).contains { $0.contains("│ Ignored banner") } }
        let lifetime = posted2.duration(to: .now)
        #expect(gone != nil, "gone by itself")
        #expect(lifetime > .milliseconds(3_500) && lifetime < .seconds(6), "dismissed about 4 s after it appeared (\(lifetime) after it was posted)")

        try await tmux.keys("-l", "\u{1B}[O")
        #expect(try await tmux.wait(.seconds(2)) { $0.first?.contains("away") == true } != nil, "the terminal lost focus")
        try await poster.post(bob, to: bobWithAlice, "Are you still there?")
        #expect(try await tmux.wait(.seconds(2)) { $0.contains { $0.contains("notified: New message from Bob") } } != nil,
                "with the terminal unfocused, a message becomes a desktop notification, not a banner")
        #expect(!(await tmux.screen()).prefix(4).contains { $0.contains("╭") })
        #expect((await tmux.screen()).first?.contains("away") == true, "the title bar says the chat counts as away")

        try await tmux.keys("C-c")
    }

    @Test("/add, /rename, /remove and /leave change the open group; each change is a quiet line; a refusal says why")
    func groupCommands() async throws {
        try await DemoTerminal.run(groupCommands)
    }

    private func groupCommands(_ demo: DemoTerminal) async throws {
        let tmux = demo.tmux
        let poster = Poster(port: demo.server.port, database: demo.database)
        let (alice, bob) = try await (poster.token("alice", name: "Alice Johnson"), poster.token("bob", name: "Bob"))
        // Dana signs in once: only people the server knows can be added.
        _ = try await poster.api(try await poster.token("dana", name: "Dana Scully")).conversations()
        let plans = try await poster.api(alice).createConversation(kind: .group, title: "Plans", members: ["bob"])
        try await tmux.start(demo.aliceChat)
        #expect(try await tmux.wait { $0.first?.contains("· live") == true } != nil, "connected")
        try await tmux.open("Plans")
        #expect((await tmux.screen()).first?.contains("· Plans ·") == true, "Alice has the group open")
        func shows(_ text: String) async throws -> Bool { try await tmux.shows(text) }

        try await tmux.type("/add dana")
        #expect(try await shows("· You added Dana Scully"))
        try await tmux.type("/rename Launch crew")
        #expect(try await shows("· You renamed the group to \u{201C}Launch crew\u{201D}"))
        #expect(try await tmux.wait(.seconds(3)) { $0.first?.contains("· Launch crew ·") == true } != nil, "the title bar follows")
        try await tmux.type("/remove zed")
        #expect(try await shows("not done: member_not_found"))
        try await tmux.type("/kick bob")
        #expect(try await shows("commands: /add ID"))
        try await tmux.type("/remove dana")
        #expect(try await shows("· You removed Dana Scully"))
        let members = try await poster.api(bob).conversation(plans.id).conversation.members
        #expect(members == ["alice", "bob"], "the server has the same")
        try await tmux.type("/leave")
        #expect(try await shows("· You left"))
        try await tmux.type("still here?")
        #expect(try await shows("you are no longer in this group"))
        #expect(try await poster.api(bob).messages(in: plans.id).allSatisfy { $0.kind == "event" }, "nothing was posted after leaving")
        try await tmux.keys("C-c")
    }

    @Test("/notify and /snooze set the open chat's level and do not disturb; Tab completes @names; mentions stand out")
    func notificationCommands() async throws {
        try await DemoTerminal.run(notificationCommands)
    }

    private func notificationCommands(_ demo: DemoTerminal) async throws {
        let tmux = demo.tmux
        let poster = Poster(port: demo.server.port, database: demo.database)
        let (alice, bob) = try await (poster.token("alice", name: "Alice Johnson"), poster.token("bob", name: "Bob"))
        let plans = try await poster.api(alice).createConversation(kind: .group, title: "Plans", members: ["bob"])
        try await tmux.start(demo.aliceChat)
        #expect(try await tmux.wait { $0.first?.contains("· live") == true } != nil, "connected")
        try await tmux.open("Plans")
        #expect((await tmux.screen()).first?.contains("· Plans ·") == true, "Alice has the group open")
        func shows(_ text: String) async throws -> Bool { try await tmux.shows(text) }
        let api = poster.api(alice)
        func level() async throws -> LevelChoice? { try await api.conversation(plans.id).level }

        try await tmux.type("/notify mentions 1h")
        #expect(try await shows("notifications: mentions until"))
        let forAnHour = try await level()
        #expect(forAnHour?.level == .mentions)
        #expect(abs((forAnHour?.until?.timeIntervalSinceNow ?? 0) - 3600) < 120, "for an hour: \(String(describing: forAnHour))")
        try await tmux.type("/notify nothing")
        #expect(try await shows("notifications: nothing"))
        #expect(try await level() == LevelChoice(level: .nothing))
        try await tmux.type("/notify default")
        #expect(try await shows("notifications: the default level"))
        #expect(try await level() == nil)
        try await tmux.type("/snooze 8h")
        #expect(try await shows("snoozed until"))
        let snooze = try await api.notificationSettings().snoozeUntil
        #expect(abs((snooze?.timeIntervalSinceNow ?? 0) - 8 * 3600) < 120, "snoozed for 8 hours: \(String(describing: snooze))")
        try await tmux.type("/snooze off")
        // (The words differ from the command's: the line typed must not be taken for the answer.)
        #expect(try await shows("not snoozed any more"))
        #expect(try await api.notificationSettings().snoozeUntil == nil)
        try await tmux.type("/notify loud")
        #expect(try await shows("usage: /notify all|mentions|nothing|default"))
        try await tmux.type("/snooze always")
        #expect(try await shows("usage: /snooze 1h|8h|tomorrow|off"))

        // Tab completes a member's name after @; the message carries the mention.
        try await tmux.keys("-l", "thanks @Bo")
        try await tmux.keys("Tab")
        #expect(try await shows("> thanks @Bob"))
        try await tmux.type("for lunch")
        let deadline = ContinuousClock.now + .seconds(5)
        var sent = try await poster.api(bob).messages(in: plans.id).last
        while sent?.text != "thanks @Bob for lunch", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            sent = try await poster.api(bob).messages(in: plans.id).last
        }
        #expect(sent?.text == "thanks @Bob for lunch" && sent?.mentions == ["bob"], "\(String(describing: sent))")
        // Bob names her: the line stands out (bold); a line that does not name her does not.
        try await poster.api(bob).postMessage(in: plans.id, text: "@Alice Johnson see above", mentions: ["alice"])
        try await poster.api(bob).postMessage(in: plans.id, text: "just chatting")
        #expect(try await shows("just chatting"))
        let styled = await tmux.styledScreen()
        #expect(styled.contains { $0.contains("\u{1B}[1mBob: @Alice Johnson see above") }, "\(styled.joined(separator: "\n"))")
        #expect(!styled.contains { $0.contains("\u{1B}[1mBob: just chatting") })
        try await tmux.keys("C-c")
    }

    @Test("/edit and /delete change one's own last message; another's edit and deletion change its line in place")
    func amendments() async throws {
        try await DemoTerminal.run(amendments)
    }

    private func amendments(_ demo: DemoTerminal) async throws {
        let tmux = demo.tmux
        let poster = Poster(port: demo.server.port, database: demo.database)
        let (alice, bob) = try await (poster.token("alice", name: "Alice Johnson"), poster.token("bob", name: "Bob"))
        let plans = try await poster.api(alice).createConversation(kind: .group, title: "Edits", members: ["bob"])
        try await tmux.start(demo.aliceChat)
        #expect(try await tmux.wait { $0.first?.contains("· live") == true } != nil, "connected")
        try await tmux.open("Edits")
        func shows(_ text: String) async throws -> Bool { try await tmux.shows(text) }
        func last() async throws -> WireMessage? { try await poster.api(bob).messages(in: plans.id).last { $0.kind == "message" } }

        try await tmux.type("/delete")
        #expect(try await shows("you have no message here to change"))
        try await tmux.type("see you at 5")
        #expect(try await shows("You: see you at 5"))
        try await tmux.type("/edit see you at 6, @Bob")
        #expect(try await shows("You: see you at 6, @Bob (edited)"))
        let edited = try await last()
        #expect(edited?.text == "see you at 6, @Bob" && edited?.edited == true && edited?.mentions == ["bob"])

        // Bob's message, edited and then deleted by him: its line follows, and no line is added for either.
        let his = try await poster.api(bob).postMessage(in: plans.id, text: "the code is 1234")
        #expect(try await shows("Bob: the code is 1234"))
        try await poster.api(bob).editMessage(his.id, in: plans.id, text: "the code is 4321")
        #expect(try await shows("Bob: the code is 4321 (edited)"))
        try await poster.api(bob).deleteMessage(his.id, in: plans.id)
        #expect(try await shows("Bob: This message was deleted"))
        #expect(!(await tmux.screen()).contains { $0.contains("1234") || $0.contains("4321") })

        // Her own last message (Bob's is not hers to change), then nothing left to change.
        try await tmux.type("/delete")
        #expect(try await shows("You: This message was deleted"))
        #expect(try await poster.api(bob).messages(in: plans.id).filter { $0.kind == "message" }.allSatisfy(\.deleted))
        try await tmux.type("/edit again")
        #expect(try await shows("you have no message here to change"))
        try await tmux.keys("C-c")
    }

    @Test("a resize redraws at the new size; after Ctrl-C, and after SIGTERM, the terminal is exactly as it was")
    func terminalCare() async throws {
        try await DemoTerminal.run(terminalCare)
    }

    private func terminalCare(_ demo: DemoTerminal) async throws {
        let tmux = demo.tmux
        try await tmux.start("env -i PATH=/usr/bin:/bin TERM=screen PS1='$ ' bash --norc --noprofile")
        let shellProcess = try await tmux.format("#{pane_pid}")
        let saved = demo.folder.appendingPathComponent("stty").path
        try await tmux.type("stty -g > \(saved); clear")
        let chat = demo.aliceChat

        for ending in ["Ctrl-C", "SIGTERM"] {
            try await tmux.type(chat)
            #expect(try await tmux.wait { $0.first?.contains("· live") == true } != nil, "connected")
            #expect(try await tmux.format("#{alternate_on} #{cursor_flag} #{wrap_flag}") == "1 0 0",
                    "while it runs: the alternate screen, no cursor, no auto-wrap")
            if ending == "Ctrl-C" {
                let help = "↑↓ chats · Enter send"
                #expect((await tmux.screen()).dropFirst(28).first?.contains(help) == true, "the help line is above the input line, the 30th")
                try await tmux.resize(columns: 72, rows: 20)
                // One capture can fall between two rows of a redraw: wait for the whole redrawn screen.
                let redrawn = try await tmux.wait(.seconds(5)) {
                    $0.count >= 20 && $0[18].hasPrefix("↑↓ chats ·") && $0[18].hasSuffix("^C quit")
                        && $0[0].contains("Herald · alice")
                }
                #expect(redrawn != nil, "after a resize to 20 rows, the help line is the 19th, with the title on top")
                try await tmux.keys("C-c")
            } else {
                let process = try await shell(["pgrep", "-P", shellProcess]).trimmingCharacters(in: .whitespacesAndNewlines)
                try await shell(["kill", "-TERM", process])
            }
            var modes = ""
            for _ in 0..<200 where modes != "0 1 1" {
                try await Task.sleep(for: .milliseconds(25))
                modes = try await tmux.format("#{alternate_on} #{cursor_flag} #{wrap_flag}")
            }
            #expect(modes == "0 1 1", "after \(ending): the main screen, the cursor and auto-wrap are back")
            try await tmux.type("clear; stty -g | cmp -s - \(saved); echo termios-$?")
            #expect(try await tmux.wait(.seconds(5)) { $0.contains("termios-0") } != nil,
                    "after \(ending): the terminal's settings are the ones it had before (echo, line editing)")
            try await tmux.type("clear")
        }
    }

    @Test("hostile names, titles and texts change nothing in the terminal; long messages wrap; the line edits as a shell's; sending reads")
    func hostileTextAndEditing() async throws {
        try await DemoTerminal.run(hostileTextAndEditing)
    }

    private func hostileTextAndEditing(_ demo: DemoTerminal) async throws {
        let tmux = demo.tmux
        let poster = Poster(port: demo.server.port, database: demo.database)
        // Names and titles with control characters are refused by the server; bidi overrides are not, and the
        // message text may hold anything but U+0000: the terminal cleans what it shows.
        let mallory = try await poster.token("mallory", name: "Mallory\u{202E}")
        let evil = try await poster.api(mallory).createConversation(
            kind: .group, title: "\u{202E}Evil\u{2066}Group", members: ["alice"]).id
        try await poster.post(mallory, to: evil, "\u{1B}]2;PWNED-TEXT\u{7}\u{9B}2Jhello\u{7}\u{202E}there")
        try await tmux.start(demo.aliceChat)
        #expect(try await tmux.wait { $0.first?.contains("· live") == true } != nil, "connected")
        #expect(try await tmux.wait { $0.contains { $0.contains("EvilGroup") } } != nil, "the title, cleaned, is in the list")
        for _ in 0..<6 where try await tmux.wait(.milliseconds(300), for: { $0.first?.contains("EvilGroup ·") == true }) == nil {
            try await tmux.keys("Down")
        }
        let opened = try await tmux.wait { $0.contains { $0.contains("Mallory: hellothere") } }
        let openedScreen = await tmux.screen()
        #expect(opened != nil, "the text, cleaned: \(openedScreen)")
        let title = try await tmux.format("#{pane_title}")
        #expect(!title.contains("PWNED"), "no escape sequence reached the terminal: \(title)")
        let everything = await tmux.screen()
        #expect(!everything.joined().contains("PWNED"))

        // A long message wraps inside the chat view.
        let words = (1...40).map { "word\($0)" }.joined(separator: " ")
        try await poster.post(mallory, to: evil, words)
        let wrapped = try await tmux.wait { lines in
            lines.contains { $0.contains("Mallory: word1 ") } && lines.contains { $0.contains("│ ") && $0.contains("word40") }
                && !lines.contains { $0.contains("Mallory: word1 ") && $0.contains("word40") }
        }
        let wrappedScreen = await tmux.screen()
        #expect(wrapped != nil, "wrapped over several lines: \(wrappedScreen)")

        // A word longer than the pane (100 columns: 73 for the messages) is broken at exactly the pane's width: its
        // lines fill the pane to the last column, and not one character is lost.
        let pane = 100 - ChatScreen.listWidth - 3
        let long = String((0..<(pane * 2 + 5)).map { Character(UnicodeScalar(UInt8(0x61 + $0 % 26))) })
        try await poster.post(mallory, to: evil, long)
        let first = String(long.prefix(pane))
        let second = String(long.dropFirst(pane).prefix(pane))
        let filled = try await tmux.wait { lines in
            lines.contains { $0.hasSuffix("│ " + first) } && lines.contains { $0.hasSuffix("│ " + second) }
        }
        let filledScreen = await tmux.screen()
        #expect(filled != nil, "lines that fill the pane keep their last character: \(filledScreen)")

        // Editing: a typo fixed with the arrows, an unknown key (F5) and Alt-x ignored, Ctrl-W and Ctrl-U.
        try await tmux.keys("-l", "helo wrld")
        try await tmux.keys("Home", "Right", "Right", "Right", "F5", "M-x")
        try await tmux.keys("-l", "l")
        try await tmux.keys("End", "Left", "Left", "Left")
        try await tmux.keys("-l", "o")
        let typed = try await tmux.wait { $0.last { !$0.isEmpty }?.hasPrefix("> hello world") == true }
        let typedScreen = await tmux.screen()
        #expect(typed != nil, "the input line: \(typedScreen)")
        try await tmux.keys("Enter")
        #expect(try await tmux.wait { $0.contains { $0.contains("You: hello world") } } != nil)
        try await tmux.keys("-l", "one two three")
        try await tmux.keys("C-w")
        #expect(try await tmux.wait { $0.last { !$0.isEmpty }?.hasPrefix("> one two") == true } != nil)
        try await tmux.keys("C-u")
        #expect(try await tmux.wait { $0.last { !$0.isEmpty } == ">" } != nil, "Ctrl-U empties the line")

        // Her own message moved her read marker: nothing unread in that chat on the server.
        let alice = try await poster.token("alice", name: "Alice Johnson")
        let sent = try await poster.api(alice).messages(in: evil).last
        #expect(sent?.text == "hello world")
        #expect(try await poster.unread(alice, in: evil) == 0)
        try await tmux.keys("C-c")
    }

    @Test("a refused token and an unreachable server are shown with their reason, not an endless reconnecting; a hang-up ends the chat cleanly")
    func refusals() async throws {
        try await DemoTerminal.run(refusals)
    }

    private func refusals(_ demo: DemoTerminal) async throws {
        let tmux = demo.tmux
        // A well-formed token signed with another server's secret.
        let foreign = try await runHerald(
            ["token", "alice"], environment: ["HERALD_JWT_SECRET": "another-servers-secret-0123456789-abcdef"]
        ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try await tmux.start("\(heraldExecutable.path) chat --server http://127.0.0.1:\(demo.server.port) --token \(foreign)")
        let refused = try await tmux.wait { $0.first?.contains("refused by the server: invalid_token") == true }
        let refusedScreen = await tmux.screen()
        #expect(refused != nil, "\(refusedScreen)")
        try await tmux.keys("C-c")
        await tmux.stop()

        // A port nobody listens on: the one the demo server had before it was stopped is not reliable, so port 9.
        try await tmux.start("\(heraldExecutable.path) chat --server http://127.0.0.1:9 --token \(foreign)")
        let unreachable = try await tmux.wait { $0.first?.contains("cannot reach http://127.0.0.1:9") == true }
        let unreachableScreen = await tmux.screen()
        #expect(unreachable != nil, "\(unreachableScreen)")
        try await tmux.keys("C-c")
        await tmux.stop()

        // The terminal hangs up (its tmux server ends): the chat exits cleanly. Writing to the gone terminal used to
        // crash it, and the crash report of the whole binary, on a busy machine, outlasted the wait for its exit.
        let errors = try makeTemporaryFolder("herald-chat-hang-up").appendingPathComponent("stderr")
        defer { try? FileManager.default.removeItem(at: errors.deletingLastPathComponent()) }
        try await tmux.start("\(heraldExecutable.path) chat --server http://127.0.0.1:9 --token \(foreign) 2>\(errors.path)")
        _ = try await tmux.wait { $0.first?.contains("cannot reach http://127.0.0.1:9") == true }
        await tmux.stop()
        let report = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(!report.contains("Fatal error"), "herald chat crashed at the hang-up: \(report.prefix(400))")
    }
}
