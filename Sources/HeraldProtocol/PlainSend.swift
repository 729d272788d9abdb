extension ClientFrame {
    /// A `send` written plainly, read without the JSON decoder (one arrives with every post): one flat object whose
    /// keys are the frame's own, each once; strings without escapes or control characters; `text` and `imageURL` a
    /// string or null, `mentions` a list of such strings or null, `mentionsAll` true, false or null. Nil for anything
    /// else (an escape, a number, another key, a nesting, another `type`), which is the decoder's to read or refuse:
    /// what this reads, the decoder reads alike.
    static func plainSend(_ text: String) -> ClientFrame? {
        var text = text
        return text.withUTF8 { bytes in
            var reader = PlainObjectReader(bytes: bytes)
            return reader.send()
        }
    }
}

/// Reads one flat JSON object of plain values from UTF-8 bytes: see ``ClientFrame/plainSend(_:)``.
private struct PlainObjectReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    enum Value {
        case string(String)
        case strings([String])
        case bool(Bool)
        case null
    }

    private static let quote = UInt8(ascii: "\"")

    mutating func send() -> ClientFrame? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var type: String?, conversation: String?, id: String?
        var text: Value?, imageURL: Value?, mentions: Value?, mentionsAll: Value?
        repeat {
            guard let key = string(), take(UInt8(ascii: ":")), let value = value() else { return nil }
            func once(_ slot: inout Value?) -> Bool {
                guard slot == nil else { return false }
                slot = value
                return true
            }
            func onceString(_ slot: inout String?) -> Bool {
                guard slot == nil, case .string(let string) = value else { return false }
                slot = string
                return true
            }
            let fresh: Bool
            switch key {
            case "type": fresh = onceString(&type)
            case "conversation": fresh = onceString(&conversation)
            case "id": fresh = onceString(&id)
            case "text": fresh = once(&text)
            case "imageURL": fresh = once(&imageURL)
            case "mentions": fresh = once(&mentions)
            case "mentionsAll": fresh = once(&mentionsAll)
            default: return nil
            }
            guard fresh else { return nil }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")) else { return nil }
        skipSpace()
        guard index == bytes.count, type == "send", let conversation, let id else { return nil }
        func optionalString(_ value: Value?) -> String?? {
            switch value {
            case nil, .null: .some(nil)
            case .string(let string): .some(string)
            default: nil
            }
        }
        guard let text = optionalString(text), let imageURL = optionalString(imageURL) else { return nil }
        let list: [String]
        switch mentions {
        case nil, .null: list = []
        case .strings(let strings): list = strings
        default: return nil
        }
        let all: Bool
        switch mentionsAll {
        case nil, .null: all = false
        case .bool(let bool): all = bool
        default: return nil
        }
        return .send(conversationID: conversation, id: id, text: text, imageURL: imageURL, mentions: list, mentionsAll: all)
    }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    /// Takes `byte` (after any white space), or nothing.
    private mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// A string without escapes or control characters.
    private mutating func string() -> String? {
        guard take(Self.quote) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == Self.quote {
                // Cut at ASCII quotes, the bytes between are whole UTF-8 (the text was).
                let string = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return string
            }
            guard byte != UInt8(ascii: "\\"), byte >= 0x20 else { return nil }
            index += 1
        }
        return nil
    }

    private mutating func literal(_ word: String) -> Bool {
        let word = Array(word.utf8)
        guard bytes.count - index >= word.count, bytes[index..<(index + word.count)].elementsEqual(word) else { return false }
        index += word.count
        return true
    }

    private mutating func value() -> Value? {
        skipSpace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case Self.quote: return string().map(Value.string)
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "["):
            index += 1
            var strings: [String] = []
            if take(UInt8(ascii: "]")) { return .strings(strings) }
            repeat {
                guard let string = string() else { return nil }
                strings.append(string)
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "]")) ? .strings(strings) : nil
        default: return nil
        }
    }
}
