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
    private static let maxSequence = 32

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
            case 0x0D, 0x0A: keys.append(.enter); index += 1
            case 0x7F, 0x08: keys.append(.backspace); index += 1
            case 0x0F: keys.append(.openBanner); index += 1
            case 0x18: keys.append(.dismissBanner); index += 1
            case 0x10: keys.append(.pauseBanner); index += 1
            case 0x00..<0x20: index += 1
            default:
                let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
                guard index + length <= pending.count else { break parsing }
                var decoder = UTF8()
                var bytes = pending[index..<index + length].makeIterator()
                if case .scalarValue(let scalar) = decoder.decode(&bytes) {
                    keys.append(.character(Character(scalar)))
                }
                index += length
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
