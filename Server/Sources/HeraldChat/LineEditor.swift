/// The input line, edited as a shell's is: a cursor that moves by character, Home and End, deleting either side of
/// it, the word before it, or everything before it.
struct LineEditor: Hashable {
    private(set) var characters: [Character] = []
    /// Where the cursor is: before `characters[cursor]`, or at the end.
    private(set) var cursor = 0

    /// The line.
    var text: String { String(characters) }

    /// Whether there is nothing typed.
    var isEmpty: Bool { characters.isEmpty }

    /// Applies an editing key; false if `key` does not edit the line.
    mutating func apply(_ key: Key) -> Bool {
        switch key {
        case .character(let character):
            characters.insert(character, at: cursor)
            cursor += 1
        case .backspace:
            guard cursor > 0 else { break }
            cursor -= 1
            characters.remove(at: cursor)
        case .delete:
            if cursor < characters.count { characters.remove(at: cursor) }
        case .left: cursor = max(0, cursor - 1)
        case .right: cursor = min(characters.count, cursor + 1)
        case .home: cursor = 0
        case .end: cursor = characters.count
        case .deleteToStart:
            characters.removeFirst(cursor)
            cursor = 0
        case .deleteWord:
            var start = cursor
            while start > 0, characters[start - 1].isWhitespace { start -= 1 }
            while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
            characters.removeSubrange(start..<cursor)
            cursor = start
        default:
            return false
        }
        return true
    }

    /// The word before the cursor (back to the last space), and where it starts.
    var wordBeforeCursor: (text: String, start: Int) {
        var start = cursor
        while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
        return (String(characters[start..<cursor]), start)
    }

    /// Replaces the characters from `start` to the cursor with `text`, the cursor after it.
    mutating func replace(from start: Int, with text: String) {
        characters.replaceSubrange(start..<cursor, with: Array(text))
        cursor = start + text.count
    }

    /// Empties the line.
    mutating func clear() {
        characters = []
        cursor = 0
    }
}
