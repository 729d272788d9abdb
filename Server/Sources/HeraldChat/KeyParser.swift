/// What a key press means to the chat.
enum Key: Hashable {
    case character(Character)
    case backspace, delete, enter, up, down, left, right, home, end, pageUp, pageDown
    /// Ctrl-U: delete from the start of the line to the cursor.
    case deleteToStart
    /// Ctrl-W: delete the word before the cursor.
    case deleteWord
    /// Ctrl-O: open the visible banner's conversation (the tap).
    case openBanner
    /// Ctrl-X: dismiss the visible banner (the swipe, the close button).
    case dismissBanner
    /// Ctrl-P: pause or resume the banner's timer (a terminal has no touch).
    case pauseBanner
    /// Tab: complete the name after an `@`.
    case tab
    /// Ctrl-C, Ctrl-D.
    case quit
    /// The terminal gained or lost focus (focus reporting, `ESC [ I` / `ESC [ O`).
    case focusIn, focusOut
}

/// Turns the bytes of a raw terminal into keys, keeping an unfinished escape sequence or UTF-8 character for the
/// next read. Escape sequences it does not know, and bytes that are not UTF-8, are dropped: nothing but typed
/// characters ever reaches the input line.
struct KeyParser {
    private var pending: [UInt8] = []

    /// The longest escape sequence it waits for; a longer one is dropped as garbage.
    private static let maxSequence = 256

    mutating func feed(_ bytes: [UInt8]) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        var index = 0
        parsing: while index < pending.count {
            let byte = pending[index]
            switch byte {
            case 0x1B:
                switch Self.escape(pending[index...]) {
                case .incomplete:
                    guard pending.count - index <= Self.maxSequence else { index = pending.count; break parsing }
                    break parsing
                case .sequence(let length, let key):
                    if let key { keys.append(key) }
                    index += length
                }
            case 0x01: keys.append(.home); index += 1
            case 0x05: keys.append(.end); index += 1
            case 0x15: keys.append(.deleteToStart); index += 1
            case 0x17: keys.append(.deleteWord); index += 1
            case 0x03, 0x04: keys.append(.quit); index += 1
            case 0x09: keys.append(.tab); index += 1
            case 0x0D, 0x0A: keys.append(.enter); index += 1
            case 0x7F, 0x08: keys.append(.backspace); index += 1
            case 0x0F: keys.append(.openBanner); index += 1
            case 0x18: keys.append(.dismissBanner); index += 1
            case 0x10: keys.append(.pauseBanner); index += 1
            case 0x00..<0x20: index += 1
            default:
                // One UTF-8 character: a lead byte and its continuation bytes. A byte that cannot start one, or a
                // lead whose continuation is missing, is dropped alone and the next byte read afresh.
                let length = switch byte {
                case 0xC2...0xDF: 2
                case 0xE0...0xEF: 3
                case 0xF0...0xF4: 4
                case 0x20...0x7E: 1
                default: 0
                }
                guard length > 0 else { index += 1; break }
                let available = min(length, pending.count - index)
                let continued = (1..<max(1, available)).allSatisfy { (0x80...0xBF).contains(pending[index + $0]) }
                guard continued else { index += 1; break }
                guard available == length else { break parsing }
                var decoder = UTF8()
                var bytes = pending[index..<index + length].makeIterator()
                if case .scalarValue(let scalar) = decoder.decode(&bytes) {
                    // A C1 control (U+0080 to U+009F; U+009B is a CSI to some terminals) is not a typed character.
                    if !(0x80...0x9F).contains(scalar.value) { keys.append(.character(Character(scalar))) }
                    index += length
                } else {
                    index += 1
                }
            }
        }
        pending.removeFirst(index)
        return keys
    }

    private enum Escape {
        case incomplete
        /// `length` bytes make one sequence, meaning `key` (nil: one this chat does not use).
        case sequence(length: Int, key: Key?)
    }

    /// Reads the escape sequence at the start of `bytes` (which starts with ESC).
    private static func escape(_ bytes: ArraySlice<UInt8>) -> Escape {
        let start = bytes.startIndex
        guard bytes.count >= 2 else { return .incomplete }
        switch bytes[start + 1] {
        case UInt8(ascii: "["):
            // CSI: parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, a final byte 0x40-0x7E.
            var end = start + 2
            while end < bytes.endIndex, (0x20...0x3F).contains(bytes[end]) { end += 1 }
            guard end < bytes.endIndex else { return .incomplete }
            guard (0x40...0x7E).contains(bytes[end]) else { return .sequence(length: end - start, key: nil) }
            let parameters = String(decoding: bytes[(start + 2)..<end], as: UTF8.self)
            return .sequence(length: end - start + 1, key: csi(final: bytes[end], parameters: parameters))
        case UInt8(ascii: "O"):
            // SS3: one more byte (arrows, Home and End in application mode).
            guard bytes.count >= 3 else { return .incomplete }
            let key: Key? = switch bytes[start + 2] {
            case UInt8(ascii: "A"): .up
            case UInt8(ascii: "B"): .down
            case UInt8(ascii: "C"): .right
            case UInt8(ascii: "D"): .left
            case UInt8(ascii: "H"): .home
            case UInt8(ascii: "F"): .end
            default: nil
            }
            return .sequence(length: 3, key: key)
        case UInt8(ascii: "]"), UInt8(ascii: "P"), UInt8(ascii: "_"), UInt8(ascii: "^"), UInt8(ascii: "X"):
            // OSC, DCS, APC, PM, SOS: a string up to BEL or ESC \ (a terminal's reply to a query, say).
            var end = start + 2
            while end < bytes.endIndex {
                if bytes[end] == 0x07 { return .sequence(length: end - start + 1, key: nil) }
                if bytes[end] == 0x1B, end + 1 < bytes.endIndex {
                    return .sequence(length: end - start + (bytes[end + 1] == UInt8(ascii: "\\") ? 2 : 1), key: nil)
                }
                end += 1
            }
            return .incomplete
        default:
            // ESC and one more byte (Alt with a key), a key this chat does not use.
            return .sequence(length: 2, key: nil)
        }
    }

    private static func csi(final: UInt8, parameters: String) -> Key? {
        switch final {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "C"): return .right
        case UInt8(ascii: "D"): return .left
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        case UInt8(ascii: "I"): return parameters.isEmpty ? .focusIn : nil
        case UInt8(ascii: "O"): return parameters.isEmpty ? .focusOut : nil
        case UInt8(ascii: "~"):
            switch parameters.split(separator: ";").first {
            case "1", "7": return .home
            case "4", "8": return .end
            case "3": return .delete
            case "5": return .pageUp
            case "6": return .pageDown
            default: return nil
            }
        default: return nil
        }
    }
}
