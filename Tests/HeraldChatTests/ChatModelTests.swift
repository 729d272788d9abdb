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
