import Foundation
@testable import HeraldChat
import HeraldCore
import Testing

@Suite("The chat's unread counts follow the server's read markers")
struct ChatModelTests {
    static let team = Conversation(id: "team", kind: .group, title: "Team Chat")
    static let direct = Conversation(id: "ab", kind: .direct)

    static func message(_ seq: Int64, in conversation: Conversation, from sender: String) -> IncomingMessage {
        IncomingMessage(
            message: Message(id: "m\(seq)", conversationID: conversation.id, senderID: sender, text: "text \(seq)", seq: seq),
            conversation: conversation, sender: Person(id: sender, displayName: sender.capitalized))
    }

    /// Alice's history: Bob and Charlie in the team chat (seq 1, 2, 4), Alice herself (3), Bob directly (5, 6).
    static func history() -> ChatModel {
        var model = ChatModel(me: "alice")
        model.receive(message(1, in: team, from: "bob"))
        model.receive(message(2, in: team, from: "charlie"))
        model.receive(message(3, in: team, from: "alice"))
        model.receive(message(4, in: team, from: "bob"))
        model.receive(message(5, in: direct, from: "bob"))
        model.receive(message(6, in: direct, from: "bob"))
        return model
    }

    static func unread(_ model: ChatModel) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: model.rooms.map { ($0.conversation.id, $0.unread) })
    }

    @Test("messages from others after the marker are unread; one's own never are")
    func markers() {
        var model = Self.history()
        model.applyReadMarkers(["team": 2, "ab": 6])
        #expect(Self.unread(model) == ["team": 1, "ab": 0])
        model.receive(Self.message(7, in: Self.direct, from: "bob"))
        #expect(Self.unread(model) == ["team": 1, "ab": 1], "a new message counts on top")
        model.applyReadMarkers(["ab": 5])
        #expect(model.rooms.first { $0.conversation.id == "ab" }?.readUpTo == 6, "a marker never moves back")
    }

    @Test("the open chat is read up to its last message, once per new message, and only while the terminal has focus")
    func readingMovesTheMarker() {
        var model = Self.history()
        model.applyReadMarkers(["team": 0, "ab": 0])
        #expect(Self.reads(&model) == [], "nothing open, nothing read")
        model.open("team")
        #expect(Self.reads(&model) == ["team 4"])
        #expect(Self.reads(&model) == [], "already sent")
        model.terminalFocused = false
        model.receive(Self.message(8, in: Self.team, from: "charlie"))
        #expect(Self.reads(&model) == [], "nobody is looking")
        model.terminalFocused = true
        #expect(Self.reads(&model) == ["team 8"], "read when the terminal has focus again")
        #expect(Self.unread(model)["ab"] == 2)
    }

    @Test("a read marker the server did not take is sent again after the next reconnect, not before, and once")
    func failedReadsAreRetried() {
        var model = Self.history()
        model.connection = .live
        model.applyReadMarkers(["team": 0, "ab": 0])
        model.open("team")
        #expect(Self.reads(&model) == ["team 4"])
        model.readFailed("team", upTo: 4)
        model.open("ab")
        #expect(Self.reads(&model) == ["ab 6"], "the failed one waits: asking again at once would repeat the failure")
        model.readFailed("ab", upTo: 6)
        model.connection = .reconnecting(attempt: 1, delay: .milliseconds(250), reason: "connection lost")
        #expect(Self.reads(&model) == [])
        model.connection = .live
        #expect(Self.reads(&model) == ["ab 6", "team 4"], "both again once the connection is back")
        #expect(Self.reads(&model) == [], "and only once")
        model.readFailed("ab", upTo: 6)
        model.receive(Self.message(9, in: Self.direct, from: "bob"))
        model.connection = .reconnecting(attempt: 1, delay: .milliseconds(250), reason: "connection lost")
        model.connection = .live
        #expect(Self.reads(&model) == ["ab 9"], "a newer marker for the open chat replaces the failed one")
    }

    @Test("a chat without messages is in the list, by the other person's name; a listed chat's names fill in")
    func listedChats() {
        var model = Self.history()
        let quiet = Conversation(id: "ac", kind: .direct)
        model.learn(quiet, people: [Person(id: "alice", displayName: "Alice Johnson"), Person(id: "charlie", displayName: "Charlie Davis")])
        model.learn(Self.team, people: [Person(id: "dana", displayName: "Dana")])
        model.applyReadMarkers(["ac": 0, "team": 4, "ab": 6])
        #expect(model.rooms.map(\.conversation.id) == ["ab", "team", "ac"], "the quiet chat last, the others by their newest message")
        #expect(model.rooms.map { model.title(of: $0) } == ["Bob", "Team Chat", "Charlie Davis"])
        #expect(Self.unread(model) == ["ab": 0, "team": 0, "ac": 0])
        #expect(model.rooms.first { $0.conversation.id == "team" }?.messages.count == 4, "learning a chat again keeps its history")
        model.learn(Conversation(id: "ae", kind: .direct), people: [Person(id: "alice", displayName: "Alice Johnson")])
        #expect(model.title(of: model.rooms.last!) == "Direct chat", "the other person never signed in: no name, and never a raw id")
        model.receive(Self.message(7, in: quiet, from: "charlie"))
        #expect(model.rooms.first?.conversation.id == "ac", "its first message moves it to the top")
        #expect(Self.unread(model)["ac"] == 1)
    }

    /// What `takeReads()` returns, as "conversation seq" lines.
    static func reads(_ model: inout ChatModel) -> [String] {
        model.takeReads().map { "\($0.conversationID) \($0.seq)" }
    }
}

@Suite("herald chat: member events as quiet lines, and the group commands")
struct ChatMembershipTests {
    static func event(_ seq: Int64, _ kind: ConversationEvent.Kind, by sender: String = "bob", members: [String] = []) -> IncomingMessage {
        IncomingMessage(
            message: Message(id: "e\(seq)", conversationID: "team", senderID: sender, seq: seq,
                             event: ConversationEvent(kind: kind, members: members.map { Person(id: $0, displayName: $0.capitalized) })),
            conversation: ChatModelTests.team, sender: Person(id: sender, displayName: sender.capitalized))
    }

    @Test("events are lines of their own, never unread; removal closes the room, being added again opens it")
    func events() {
        var model = ChatModel(me: "alice")
        model.receive(Self.event(1, .memberAdded, members: ["alice"]))
        model.receive(Self.event(2, .memberAdded, members: ["carol"]))
        model.receive(ChatModelTests.message(3, in: ChatModelTests.team, from: "carol"))
        let room = model.rooms[0]
        #expect(room.messages.map(ChatModel.Room.line) == ["· Bob added you to Team Chat", "· Bob added Carol", "Carol: text 3"])
        #expect(room.unread == 1, "only the message counts")
        model.applyReadMarkers(["team": 0])
        #expect(model.rooms[0].unread == 1)
        model.receive(Self.event(4, .memberRemoved, members: ["alice"]))
        #expect(model.rooms[0].removed && model.rooms[0].messages.last?.text == "Bob removed you")
        model.receive(Self.event(5, .memberAdded, members: ["alice"]))
        #expect(!model.rooms[0].removed)
        model.receive(Self.event(6, .memberLeft, by: "alice"))
        #expect(model.rooms[0].removed && model.rooms[0].messages.last?.text == "You left")
        let screen = ChatScreen.render(model, rows: 12, columns: 80, now: .now)
        #expect(screen.contains { $0.contains("You left") }, "the list's preview is the event's line")
    }

    @Test("commands: /add, /remove, /rename (empty: no title), /leave; any other /word names them; text is text")
    func commands() {
        #expect(ChatCommand.parse("/add carol  dave") == .success(.add(["carol", "dave"])))
        #expect(ChatCommand.parse("/remove carol") == .success(.remove("carol")))
        #expect(ChatCommand.parse("/rename  Launch  crew ") == .success(.rename("Launch  crew")))
        #expect(ChatCommand.parse("/rename") == .success(.rename(nil)))
        #expect(ChatCommand.parse("/leave") == .success(.leave))
        for wrong in ["/add", "/remove a b", "/leave now", "/kick bob", "/"] {
            #expect(ChatCommand.parse(wrong) == .failure(CommandError(message: ChatCommand.usage)), "\(wrong)")
        }
        #expect(ChatCommand.parse("hello /add") == nil)
    }

    @Test("/notify LEVEL [1h|8h|tomorrow|always] and /snooze 1h|8h|tomorrow|off; a wrong one says how they are written")
    func notificationCommands() {
        #expect(ChatCommand.parse("/notify mentions") == .success(.notify(.mentions, .always)))
        #expect(ChatCommand.parse("/notify nothing 8h") == .success(.notify(.nothing, .hours(8))))
        #expect(ChatCommand.parse("/notify all tomorrow") == .success(.notify(.all, .tomorrow)))
        #expect(ChatCommand.parse("/notify default") == .success(.notify(nil, .always)))
        #expect(ChatCommand.parse("/snooze 1h") == .success(.snooze(.hours(1))))
        #expect(ChatCommand.parse("/snooze off") == .success(.snooze(nil)))
        for wrong in ["/notify", "/notify loud", "/notify all 0h", "/notify all 1000h", "/notify all 1h more"] {
            #expect(ChatCommand.parse(wrong) == .failure(CommandError(message: ChatCommand.notifyUsage)), "\(wrong)")
        }
        for wrong in ["/snooze", "/snooze always", "/snooze 2d", "/snooze 1h 2h"] {
            #expect(ChatCommand.parse(wrong) == .failure(CommandError(message: ChatCommand.snoozeUsage)), "\(wrong)")
        }
        // Tomorrow 08:00 in the calendar's zone, whatever the time now.
        var berlin = Calendar(identifier: .gregorian)
        berlin.timeZone = TimeZone(identifier: "Europe/Berlin")!
        let late = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18 11:06 UTC, 12:06 in Berlin
        let end = ChatCommand.For.tomorrow.end(from: late, calendar: berlin)!
        #expect(berlin.dateComponents([.day, .hour, .minute], from: end) == DateComponents(day: 19, hour: 8, minute: 0))
        #expect(ChatCommand.For.always.end(from: late) == nil)
    }

    @Test("Tab after @ completes the open chat's member's name; what the line mentions goes with it")
    func mentionCompletion() {
        var model = ChatModel(me: "alice")
        let team = Conversation(id: "team", kind: .group, title: "Team")
        model.learn(team, people: [Person(id: "alice", displayName: "Alice"), Person(id: "bob", displayName: "Bob Dylan"),
                                   Person(id: "carol", displayName: "Carol")])
        model.open("team")
        for character in "hi @bo" { _ = model.input.apply(.character(character)) }
        model.completeMention()
        #expect(model.input.text == "hi @Bob Dylan ")
        for character in "and @zz" { _ = model.input.apply(.character(character)) }
        model.completeMention()
        #expect(model.input.text == "hi @Bob Dylan and @zz" && model.notice == "no member's name starts with @zz")
        #expect(MentionText.find(in: model.input.text, members: model.openMembers) == (["bob"], false))
    }
}

@Suite("herald chat: edits and deletions")
struct ChatAmendmentTests {
    static func amendment(_ seq: Int64, of target: String, by sender: String, text: String? = nil) -> IncomingMessage {
        IncomingMessage(
            message: Message(
                id: "x\(seq)", conversationID: "team", senderID: sender, text: text, seq: seq,
                event: ConversationEvent(kind: text == nil ? .messageDeleted : .messageEdited, messageID: target)),
            conversation: ChatModelTests.team, sender: Person(id: sender, displayName: sender.capitalized))
    }

    @Test("an edit changes its message's line in place, marked (edited); a deletion leaves the tombstone and is no longer unread; neither adds a line")
    func amendments() {
        var model = ChatModel(me: "alice")
        model.receive(ChatModelTests.message(1, in: ChatModelTests.team, from: "bob"))
        model.receive(ChatModelTests.message(2, in: ChatModelTests.team, from: "alice"))
        model.receive(ChatModelTests.message(3, in: ChatModelTests.team, from: "bob"))
        #expect(model.rooms[0].unread == 2)
        model.receive(Self.amendment(4, of: "m1", by: "bob", text: "fixed\u{1B}[31m"))
        model.receive(Self.amendment(5, of: "m3", by: "bob"))
        model.receive(Self.amendment(6, of: "m3", by: "bob", text: "too late"))
        #expect(model.rooms[0].messages.map(ChatModel.Room.line) == [
            "Bob: fixed (edited)", "You: text 2", "Bob: This message was deleted",
        ])
        #expect(model.rooms[0].unread == 1, "the deleted message is no longer unread")
        model.open("team")
        #expect(model.lastOwnMessageID == "m2")
        model.receive(Self.amendment(7, of: "m2", by: "alice"))
        #expect(model.lastOwnMessageID == nil, "a deleted message is not changed again")
    }

    @Test("/edit TEXT and /delete; /edit alone says how it is written")
    func commands() {
        #expect(ChatCommand.parse("/edit  see you at 6 ") == .success(.edit("see you at 6")))
        #expect(ChatCommand.parse("/delete") == .success(.delete))
        #expect(ChatCommand.parse("/edit") == .failure(CommandError(message: "usage: /edit NEW TEXT (your last message here)")))
        #expect(ChatCommand.parse("/delete now") == .failure(CommandError(message: ChatCommand.usage)))
    }
}
