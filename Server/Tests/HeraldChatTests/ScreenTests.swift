import Foundation
@testable import HeraldChat
import HeraldCore
import Testing

@Suite("The chat screen")
struct ScreenTests {
    @Test("widths: emoji and East Asian text take two columns, combining marks none")
    func widths() {
        #expect(TextWidth.of("Bob") == 3)
        #expect(TextWidth.of("中文") == 4)
        #expect(TextWidth.of("👋🏽") == 2)
        #expect(TextWidth.of("👨‍👩‍👧") == 2)
        #expect(TextWidth.of("e\u{301}") == 1)
        #expect(TextWidth.fit("中文中文", columns: 5) == "中文…")
        #expect(TextWidth.of(TextWidth.pad("👋 hi", columns: 10)) == 10)
    }

    @Test("every line is exactly as wide as the terminal, banner or not")
    func linesFit() {
        var model = ChatModel(me: "alice")
        let team = Conversation(id: "team", kind: .group, title: "Team Chat 中文")
        model.receive(IncomingMessage(
            message: Message(id: "m1", conversationID: "team", senderID: "bob", text: "👋🏽 Hi 中文 " + String(repeating: "x", count: 200), seq: 1),
            conversation: team, sender: Person(id: "bob", displayName: "Bob")))
        model.open("team")
        let clock = ContinuousClock()
        let banner = ContentFormatter.standard.banner(for: IncomingMessage(
            message: Message(id: "m2", conversationID: "c", senderID: "charlie", text: "Hey, are you there?"),
            conversation: Conversation(id: "c", kind: .group, title: "Team Chat"),
            sender: Person(id: "charlie", displayName: "Charlie Davis")))
        model.banner = .init(banner: banner, since: clock.now - .seconds(1))
        for columns in [40, 80, 123] {
            let lines = ScreenTests.visible(ChatScreen.render(model, rows: 20, columns: columns, now: clock.now))
            #expect(lines.count == 20)
            #expect(lines.allSatisfy { TextWidth.of($0) == columns }, "\(columns) columns")
            #expect(lines[1].contains("[CD] Charlie Davis in Team Chat"))
            #expect(lines[2].contains("Hey, are you there?"))
        }
    }

    @Test("the key hints fit the terminal: at 80 columns every key is named, ^C quit included; narrower, the shorter hints")
    func hints() {
        let model = ChatModel(me: "alice")
        let clock = ContinuousClock()
        for columns in [30, 40, 60, 80, 100] {
            let lines = ScreenTests.visible(ChatScreen.render(model, rows: 20, columns: columns, now: clock.now))
            let hint = lines[lines.count - 2]
            #expect(hint.contains("^C quit"), "\(columns) columns: \(hint)")
            #expect(!hint.contains("…"), "never cut: \(hint)")
        }
        let wide = ScreenTests.visible(ChatScreen.render(model, rows: 20, columns: 80, now: clock.now))
        let hint = wide[wide.count - 2]
        for key in ["↑↓", "Enter", "PgUp", "^O", "^X", "^P", "^C"] { #expect(hint.contains(key), "\(key) at 80 columns") }
    }

    @Test("a word longer than the pane is broken at exactly its width: lines that fill it, nothing lost")
    func exactFill() {
        let word = String(repeating: "abcdefghij", count: 15)
        let lines = TextWidth.wrap("Bob: " + word, columns: 40)
        #expect(lines.first == "Bob:", "the name alone, then the word from a line of its own")
        #expect(lines.dropFirst().dropLast().allSatisfy { TextWidth.of($0) == 40 })
        #expect(lines.dropFirst().joined() == word)
    }

    @Test("the list shows each chat with its unread count and a preview of its last message")
    func list() {
        var model = ChatModel(me: "alice")
        let team = Conversation(id: "team", kind: .group, title: "Team Chat")
        let direct = Conversation(id: "ab", kind: .direct)
        let bob = Person(id: "bob", displayName: "Bob")
        model.receive(IncomingMessage(message: Message(id: "1", conversationID: "ab", senderID: "bob", text: "Hi", seq: 1), conversation: direct, sender: bob))
        model.receive(IncomingMessage(message: Message(id: "2", conversationID: "team", senderID: "bob", text: "Standup?", seq: 2), conversation: team, sender: bob))
        model.receive(IncomingMessage(message: Message(id: "3", conversationID: "team", senderID: "charlie", text: "Yes", seq: 3), conversation: team,
                                      sender: Person(id: "charlie", displayName: "Charlie Davis")))
        let lines = ScreenTests.visible(ChatScreen.listLines(model))
        #expect(lines.count == 4)
        #expect(lines.allSatisfy { TextWidth.of($0) == ChatScreen.listWidth })
        #expect(lines[0].hasPrefix("  Team Chat") && lines[0].hasSuffix(" 2"), "newest first, with its unread count")
        #expect(lines[1] == TextWidth.pad("  Charlie: Yes", columns: ChatScreen.listWidth), "its last message")
        #expect(lines[2].hasPrefix("  Bob") && lines[2].hasSuffix(" 1"))
        #expect(lines[3] == TextWidth.pad("  Bob: Hi", columns: ChatScreen.listWidth))
        model.open("team")
        #expect(ScreenTests.visible(ChatScreen.listLines(model))[0].hasPrefix("> Team Chat"))
        #expect(!ScreenTests.visible(ChatScreen.listLines(model))[0].hasSuffix("2"), "opening clears the unread count")
    }

    @Test("the chat view shows whole messages on one line, with the formatter's placeholders")
    func history() {
        var model = ChatModel(me: "alice")
        let room = Conversation(id: "ab", kind: .direct)
        let bob = Person(id: "bob", displayName: "Bob")
        let long = String(repeating: "word ", count: 20) + "end"
        for (id, text, image) in [("1", "two\nlines", nil), ("2", nil, URL(string: "https://example.com/a.png")), ("3", long, nil)] as [(String, String?, URL?)] {
            model.receive(IncomingMessage(message: Message(id: id, conversationID: "ab", senderID: "bob", text: text, imageURL: image, seq: Int64(id)),
                                          conversation: room, sender: bob))
        }
        model.open("ab")
        #expect(model.openRoom?.messages.map(\.text) == ["two lines", "📷 Image", long.trimmingCharacters(in: .whitespaces)])
    }

    @Test("a banner slides down over the top rows as it enters, and up as it leaves")
    func slide() {
        var model = ChatModel(me: "alice")
        let clock = ContinuousClock()
        let start = clock.now
        let banner = Banner.general(id: "g", message: "Saved", tone: .success)
        model.banner = .init(banner: banner, since: start)
        #expect(ChatScreen.banner(model, columns: 40, now: start).count == 1)
        #expect(ChatScreen.banner(model, columns: 40, now: start + ChatScreen.slideStep * 3).count == 4)
        model.banner = .init(banner: banner, since: start, leaving: true)
        #expect(ChatScreen.banner(model, columns: 40, now: start).count == 3)
        #expect(ChatScreen.banner(model, columns: 40, now: start + ChatScreen.slideStep * 3).isEmpty)
    }

    /// The text a line shows, without ANSI styles.
    static func visible(_ lines: [String]) -> [String] {
        lines.map { line in
            var result = ""
            var inEscape = false
            for character in line {
                if character == "\u{1B}" { inEscape = true; continue }
                if inEscape { if character.isLetter { inEscape = false }; continue }
                result.append(character)
            }
            return result
        }
    }
}
