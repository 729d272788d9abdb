/// What a key press means to the chat.
enum Key: Hashable {
    case character(Character)
    case backspace, enter, up, down
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
/// next read.
struct KeyParser {
    private var pending: [UInt8] = []

    mutating func feed(_ bytes: [UInt8]) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        var index = 0
        while index < pending.count {
            let byte = pending[index]
            switch byte {
            case 0x1B:
                guard index + 2 < pending.count else {
                    if index + 1 < pending.count, pending[index + 1] != UInt8(ascii: "[") { index += 1; continue }
                    pending.removeFirst(index)
                    return keys
                }
                if pending[index + 1] == UInt8(ascii: "[") {
                    switch pending[index + 2] {
                    case UInt8(ascii: "A"): keys.append(.up)
                    case UInt8(ascii: "B"): keys.append(.down)
                    case UInt8(ascii: "I"): keys.append(.focusIn)
                    case UInt8(ascii: "O"): keys.append(.focusOut)
                    default: break
                    }
                    index += 3
                } else {
                    index += 1
                }
            case 0x03, 0x04: keys.append(.quit); index += 1
            case 0x0D, 0x0A: keys.append(.enter); index += 1
            case 0x7F, 0x08: keys.append(.backspace); index += 1
            case 0x0F: keys.append(.openBanner); index += 1
            case 0x18: keys.append(.dismissBanner); index += 1
            case 0x10: keys.append(.pauseBanner); index += 1
            case 0x00..<0x20: index += 1
            default:
                let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
                guard index + length <= pending.count else {
                    pending.removeFirst(index)
                    return keys
                }
                for character in String(decoding: pending[index..<index + length], as: UTF8.self) {
                    keys.append(.character(character))
                }
                index += length
            }
        }
        pending.removeAll()
        return keys
    }
}
