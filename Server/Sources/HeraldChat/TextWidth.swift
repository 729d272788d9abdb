import CTerminal

/// How many terminal columns text takes: emoji and East Asian wide characters take two, combining marks none.
enum TextWidth {
    static let setUp: Bool = herald_terminal_use_utf8() == 0

    /// Columns one grapheme cluster takes.
    static func of(_ character: Character) -> Int {
        _ = setUp
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.value < 0x7F { return first.value < 0x20 ? 0 : 1 }
        // Emoji sequences (skin tones, ZWJ families, flags, VS16) are drawn two columns wide.
        if first.properties.isEmojiPresentation || scalars.contains("\u{FE0F}")
            || scalars.contains(where: { $0.properties.isEmojiModifier }) || scalars.contains("\u{200D}") {
            return 2
        }
        return max(0, Int(herald_wcwidth(first.value)))
    }

    /// Columns a string takes.
    static func of(_ text: some StringProtocol) -> Int {
        text.reduce(0) { $0 + of($1) }
    }

    /// The longest prefix of `text` that fits in `columns`, with `…` when something was cut.
    static func fit(_ text: String, columns: Int) -> String {
        guard columns > 0 else { return "" }
        if of(text) <= columns { return text }
        var result = ""
        var used = 0
        for character in text {
            let width = of(character)
            if used + width > columns - 1 { break }
            result.append(character)
            used += width
        }
        return result + "…"
    }

    /// `text` fitted to exactly `columns`, padded with spaces.
    static func pad(_ text: String, columns: Int) -> String {
        let fitted = fit(text, columns: columns)
        return fitted + String(repeating: " ", count: max(0, columns - of(fitted)))
    }

    /// `text` broken into lines of at most `columns`: at spaces where it can, inside a word too long for a line.
    static func wrap(_ text: String, columns: Int) -> [String] {
        guard columns > 0 else { return [] }
        var lines: [String] = []
        var line = "", lineWidth = 0
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let wordWidth = of(word)
            let gap = line.isEmpty ? 0 : 1
            if lineWidth + gap + wordWidth <= columns {
                line += (gap == 1 ? " " : "") + word
                lineWidth += gap + wordWidth
                continue
            }
            if !line.isEmpty { lines.append(line) }
            line = ""
            lineWidth = 0
            for character in word {
                let width = of(character)
                if lineWidth + width > columns {
                    lines.append(line)
                    line = ""
                    lineWidth = 0
                }
                line.append(character)
                lineWidth += width
            }
        }
        lines.append(line)
        return lines
    }
}
