import HeraldProtocol

/// Text from the network made safe for a terminal: nothing in it can move the cursor, change the title, ring the
/// bell or reorder what is drawn.
///
/// Escape sequences are removed whole (CSI `ESC [ … final`, OSC `ESC ] … BEL or ESC \`, string sequences such as
/// DCS up to their terminator, two-byte `ESC x`), and so are their C1 forms (U+009B CSI, U+009D OSC, …); then
/// every other C0 and C1 control and the bidirectional overrides (U+202A to U+202E, U+2066 to U+2069). Tabs and
/// line breaks become spaces.
enum TerminalText {
    static func clean(_ text: String) -> String {
        var output = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            switch scalar.value {
            case 0x1B:
                guard let next = scalars.next() else { break }
                switch next {
                case "[": skipControlSequence(&scalars)
                case "]", "P", "X", "^", "_": skipControlString(&scalars)
                default: break  // ESC and one more: a two-byte sequence.
                }
            case 0x9B: skipControlSequence(&scalars)
            case 0x90, 0x98, 0x9D, 0x9E, 0x9F: skipControlString(&scalars)
            case 0x09, 0x0A, 0x0D: output.append(" ")
            case 0x202A...0x202E, 0x2066...0x2069: break
            default:
                if !ControlCharacters.isControl(scalar) { output.append(scalar) }
            }
        }
        return String(output)
    }

    /// Skips a CSI's parameter and intermediate bytes and its final byte.
    private static func skipControlSequence(_ scalars: inout String.UnicodeScalarView.Iterator) {
        while let scalar = scalars.next() {
            if (0x40...0x7E).contains(scalar.value) || !(0x20...0x3F).contains(scalar.value) { return }
        }
    }

    /// Skips a control string (OSC, DCS, SOS, PM, APC) up to BEL, ST (U+009C) or `ESC \`.
    private static func skipControlString(_ scalars: inout String.UnicodeScalarView.Iterator) {
        while let scalar = scalars.next() {
            switch scalar.value {
            case 0x07, 0x9C: return
            case 0x1B:
                _ = scalars.next()
                return
            default: continue
            }
        }
    }
}
