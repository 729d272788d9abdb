import Foundation
import HeraldClient
@testable import HeraldChat
import HeraldCore
import HeraldTestSupport
import Testing

@Suite("Typing, escape sequences, wrapping and scrolling in herald chat")
struct InputTests {
    static func keys(_ chunks: [UInt8]...) -> [Key] {
        var parser = KeyParser()
        return chunks.flatMap { parser.feed($0) }
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("keys: arrows, Home, End, Delete, PageUp, PageDown in their common spellings, and the control keys")
    func knownKeys() {
        #expect(Self.keys(Self.bytes("\u{1B}[A\u{1B}[B\u{1B}[C\u{1B}[D")) == [.up, .down, .right, .left])
        #expect(Self.keys(Self.bytes("\u{1B}OA\u{1B}OD\u{1B}OH\u{1B}OF")) == [.up, .left, .home, .end])
        #expect(Self.keys(Self.bytes("\u{1B}[H\u{1B}[F\u{1B}[1~\u{1B}[4~\u{1B}[7~\u{1B}[8~")) == [.home, .end, .home, .end, .home, .end])
        #expect(Self.keys(Self.bytes("\u{1B}[3~\u{1B}[5~\u{1B}[6~")) == [.delete, .pageUp, .pageDown])
        #expect(Self.keys(Self.bytes("\u{1B}[I\u{1B}[O")) == [.focusIn, .focusOut])
        #expect(Self.keys([0x01, 0x05, 0x15, 0x17, 0x7F, 0x08, 0x0D, 0x0F, 0x18, 0x10, 0x03])
            == [.home, .end, .deleteToStart, .deleteWord, .backspace, .backspace, .enter, .openBanner, .dismissBanner,
                .pauseBanner, .quit])
    }

    @Test("escape sequences it does not know are dropped whole, never typed; split reads and UTF-8 are put back together")
    func unknownSequences() {
        let unknown = [
            "\u{1B}[15~", "\u{1B}[1;5P", "\u{1B}[200~", "\u{1B}[?1049h", "\u{1B}]11;rgb:0000/0000/0000\u{7}",
            "\u{1B}]0;title\u{1B}\\", "\u{1B}P+q544e\u{1B}\\", "\u{1B}x", "\u{1B}OP",
        ]
        for sequence in unknown {
            #expect(Self.keys(Self.bytes(sequence + "a")) == [.character("a")], "\(sequence.debugDescription)")
        }
        // Split across reads, anywhere.
        let line = Self.bytes("h\u{1B}[3~é中👋\u{1B}]0;x\u{7}!")
        for cut in 1..<line.count {
            #expect(Self.keys(Array(line[..<cut]), Array(line[cut...]))
                == [.character("h"), .delete, .character("é"), .character("中"), .character("👋"), .character("!")], "cut at \(cut)")
        }
        // Bytes that are not UTF-8, and other control characters, are dropped.
        #expect(Self.keys([0xFF, 0x61, 0xC3, 0x28, 0x00, 0x1F, 0x62]) == [.character("a"), .character("("), .character("b")])
    }

    @Test("the input line edits as a shell's: cursor, Home and End, Delete, Backspace, Ctrl-U and Ctrl-W")
    func lineEditing() {
        var line = LineEditor()
        func type(_ text: String) { for character in text { _ = line.apply(.character(character)) } }
        type("hello world")
        for _ in 0..<5 { _ = line.apply(.left) }
        type("big ")
        #expect(line.text == "hello big world")
        _ = line.apply(.home)
        _ = line.apply(.delete)
        #expect(line.text == "ello big world")
        _ = line.apply(.end)
        _ = line.apply(.backspace)
        #expect(line.text == "ello big worl")
        _ = line.apply(.deleteWord)
        #expect(line.text == "ello big ")
        _ = line.apply(.deleteWord)
        #expect(line.text == "ello ")
        _ = line.apply(.left)
        _ = line.apply(.left)
        _ = line.apply(.deleteToStart)
        #expect(line.text == "o ")
        #expect(line.cursor == 0)
        _ = line.apply(.left)
        _ = line.apply(.backspace)
        #expect(line.text == "o ", "nothing before the cursor to delete")
        _ = line.apply(.right)
        _ = line.apply(.right)
        _ = line.apply(.right)
        #expect(line.cursor == 2, "the cursor stops at the end")
        let edited = line.apply(.up)
        #expect(!edited, "keys that do not edit are left to the chat")
    }

    @Test("the input line keeps the cursor in view on a narrow terminal")
    func inputScrollsSideways() {
        var line = LineEditor()
        for character in String(repeating: "abcdefghij", count: 10) { _ = line.apply(.character(character)) }
        let drawn = ChatScreen.inputLine(line, columns: 40)
        #expect(TextWidth.of(drawn.replacingOccurrences(of: ChatScreen.reverse, with: "").replacingOccurrences(of: ChatScreen.reset, with: "")) == 40)
        #expect(drawn.contains(ChatScreen.reverse + " " + ChatScreen.reset), "the cursor, after the last character")
        _ = line.apply(.home)
        #expect(ChatScreen.inputLine(line, columns: 40).hasPrefix("> " + ChatScreen.reverse + "a"))
    }

    @Test("long messages wrap at spaces within the view; a word longer than a line is broken")
    func wrapping() {
        let lines = TextWidth.wrap("the quick brown fox jumps over the lazy dog", columns: 10)
        #expect(lines == ["the quick", "brown fox", "jumps over", "the lazy", "dog"])
        #expect(TextWidth.wrap(String(repeating: "x", count: 25), columns: 10) == ["xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"])
        #expect(TextWidth.wrap("中文中文中文", columns: 5) == ["中文", "中文", "中文"], "two columns each")
        for width in [7, 13, 31] {
            let text = (0..<40).map { "word\($0)" }.joined(separator: " ") + " 👋🏽👋🏽 中文"
            #expect(TextWidth.wrap(text, columns: width).allSatisfy { TextWidth.of($0) <= width })
        }
    }

    @Test("PageUp and PageDown scroll the history: older lines come into view, never past the oldest")
    func scrolling() throws {
        var model = ChatModel(me: "alice")
        let team = Conversation(id: "team", kind: .group, title: "Team")
        for seq in Int64(1)...40 {
            model.receive(IncomingMessage(
                message: Message(id: "m\(seq)", conversationID: "team", senderID: "bob", text: "message \(seq)", seq: seq),
                conversation: team, sender: Person(id: "bob", displayName: "Bob")))
        }
        model.open("team")
        let room = try #require(model.openRoom)
        let bottom = ChatScreen.historyLines(room, width: 50, rows: 10, scroll: 0)
        #expect(bottom.last == "Bob: message 40")
        let up = ChatScreen.historyLines(room, width: 50, rows: 10, scroll: 10)
        #expect(up.last == "Bob: message 30")
        #expect(up.first == "Bob: message 21")
        let maxScroll = ChatScreen.maxScroll(model, rows: 13, columns: 50 + ChatScreen.listWidth + 3)
        #expect(maxScroll == 30)
        let top = ChatScreen.historyLines(room, width: 50, rows: 10, scroll: maxScroll)
        #expect(top.first == "Bob: message 1")
    }

    @Test("a C1 control typed as UTF-8 (U+009B, a CSI to some terminals) never reaches the input line (found by fuzzing)")
    func c1ControlsAreNotTyped() {
        #expect(Self.keys([0x61, 0xC2, 0x9B, 0x32, 0x4A, 0xC2, 0x85, 0xC2, 0x9F, 0xC2, 0xA0]) == [
            .character("a"), .character("2"), .character("J"), .character("\u{A0}"),
        ])
        #expect(Self.keys([0xC2], [0x87], [0x62]) == [.character("b")], "split across reads too")
    }

    @Test("text from the network loses every control character and escape sequence before it reaches the terminal")
    func cleaning() {
        #expect(TerminalText.clean("\u{1B}]2;PWNED\u{7}Team") == "Team")
        #expect(TerminalText.clean("\u{1B}]0;PWNED\u{1B}\\Team") == "Team")
        #expect(TerminalText.clean("\u{1B}[31mred\u{1B}[0m \u{1B}[2J\u{1B}[Hx") == "red x")
        #expect(TerminalText.clean("\u{9B}31mred\u{9D}0;t\u{9C}!") == "red!")
        #expect(TerminalText.clean("a\u{7}b\u{8}c\u{0}d\u{7F}e\u{85}f") == "abcdef")
        #expect(TerminalText.clean("line\none\ttab") == "line one tab")
        #expect(TerminalText.clean("\u{202E}evil\u{202C} \u{2067}x\u{2069}") == "evil x")
        #expect(TerminalText.clean("José 👋🏽 中文 e\u{301}") == "José 👋🏽 中文 e\u{301}", "ordinary text untouched")
    }

    @Test("the title bar names why it is not live: a refused token's code, an unreachable server's address")
    func connectionStates() {
        #expect(ChatScreen.state(.refused(code: "invalid_token", message: "bad signature")) == "refused by the server: invalid_token")
        let reason = "cannot reach http://127.0.0.1:9: connection refused"
        #expect(ChatScreen.state(.reconnecting(attempt: 3, delay: .milliseconds(1500), reason: reason))
            == "reconnecting (3) in 2 s: \(reason)")
    }

    @Test("herald chat has no unstructured Task: every task it starts belongs to a group that ends with it")
    func structuredConcurrencyOnly() throws {
        let folder = serverPackageRoot.appendingPathComponent("Sources/HeraldChat")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        for file in files {
            let source = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            // `Task {…}`, `Task(…)`, `Task.detached`, `Task<…>`; a group's `addTask` is structured and fine.
            let unstructured = try Regex(#"(^|[^A-Za-z_.])Task\s*(\{|\(|\.detached|<)"#)
            #expect(source.firstMatch(of: unstructured) == nil, "\(file) starts an unstructured task")
        }
    }
}
