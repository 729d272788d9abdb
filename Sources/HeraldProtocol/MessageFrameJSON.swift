import Foundation
import HeraldCore

/// The `message` frame written by hand: the frame every delivery carries, so the one worth not building through
/// `JSONEncoder` (a fifth of the cost of handing a message to its recipients went to the encoder and its date
/// formatter); a message's wire form alone, which answers every post; and the `ack` frame, which answers every
/// `send`. The output is the encoder's, byte for byte: sorted keys, slashes unescaped, absent values as `null`,
/// times as ISO 8601 with milliseconds in UTC. A message that is an event goes through the encoder.
enum MessageFrameJSON {
    /// The frame for `incoming`, or nil for an event.
    static func text(_ incoming: IncomingMessage) -> String? {
        let message = incoming.message
        guard message.event == nil else { return nil }
        let conversation = incoming.conversation
        let sender = incoming.sender
        var out = JSONText(capacity: 256 + (message.text?.utf8.count ?? 0))
        out.raw(#"{"conversation":{"id":"#)
        out.string(conversation.id)
        out.raw(#","kind":"#)
        out.string(conversation.kind.rawValue)
        out.raw(#","title":"#)
        out.optional(conversation.title)
        out.raw(#"},"message":"#)
        object(of: message, into: &out)
        out.raw(#","sender":{"avatarURL":"#)
        out.optional(sender.avatarURL?.absoluteString)
        out.raw(#","id":"#)
        out.string(sender.id)
        out.raw(#","name":"#)
        out.string(sender.displayName)
        out.raw(#"},"type":"message"}"#)
        return out.text
    }

    /// `message`'s wire form (``WireMessage``), or nil for an event: what a post is answered with.
    static func text(_ message: Message) -> String? {
        guard message.event == nil else { return nil }
        var out = JSONText(capacity: 192 + (message.text?.utf8.count ?? 0))
        object(of: message, into: &out)
        return out.text
    }

    /// The `ack` frame, which answers every `send` on a stream: `{"id":…,"seq":…,"type":"ack"}`.
    static func ack(id: String, seq: Int64) -> String {
        var out = JSONText(capacity: 40 + id.utf8.count)
        out.raw(#"{"id":"#)
        out.string(id)
        out.raw(#","seq":"#)
        out.raw(String(seq))
        out.raw(#","type":"ack"}"#)
        return out.text
    }

    /// Appends the object of a message that is not an event.
    private static func object(of message: Message, into out: inout JSONText) {
        out.raw(#"{"conversationId":"#)
        out.string(message.conversationID)
        out.raw(#","createdAt":""#)
        out.date(message.sentAt)
        out.raw("\"")
        if message.deleted { out.raw(#","deleted":true"#) }
        if message.edited { out.raw(#","edited":true"#) }
        out.raw(#","id":"#)
        out.string(message.id)
        out.raw(#","imageURL":"#)
        out.optional(message.imageURL?.absoluteString)
        out.raw(#","kind":"message""#)
        if !message.mentions.isEmpty {
            out.raw(#","mentions":["#)
            for (index, mention) in message.mentions.enumerated() {
                if index > 0 { out.raw(",") }
                out.string(mention)
            }
            out.raw("]")
        }
        if message.mentionsAll { out.raw(#","mentionsAll":true"#) }
        out.raw(#","senderId":"#)
        out.string(message.senderID)
        out.raw(#","seq":"#)
        out.raw(String(message.seq ?? 0))
        if message.silent { out.raw(#","silent":true"#) }
        out.raw(#","text":"#)
        out.optional(message.text)
        out.raw("}")
    }
}

/// JSON text built by appending UTF-8.
private struct JSONText {
    private var bytes: [UInt8] = []

    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    mutating func optional(_ text: String?) {
        if let text { string(text) } else { raw("null") }
    }

    /// A JSON string: quotes, backslashes and control characters escaped as `JSONEncoder` escapes them.
    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Runs without a character to escape (most text is one) go in whole.
            var start = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: utf8[start..<index])
                escape(byte)
                start = index + 1
            }
            bytes.append(contentsOf: utf8[start...])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A quote, a backslash or a control character, escaped.
    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        default:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: Array(#"\u00"#.utf8))
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0x0F)])
        }
    }

    /// `2026-11-27T18:05:09.123Z`: UTC, milliseconds truncated, worked out from the time since 2001 as Foundation's
    /// formatter does (from the time since 1970, a time a hair under a millisecond boundary can round across it).
    mutating func date(_ date: Date) {
        let sinceReference = date.timeIntervalSinceReferenceDate
        let whole = sinceReference.rounded(.down)
        let fraction = Int64(((sinceReference - whole) * 1000).rounded(.down))
        let seconds = Int64(whole) + 978_307_200
        var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let inDay = (seconds - days * 86_400) * 1000 + fraction
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        digits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(inDay / 3_600_000, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(inDay / 60_000 % 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(inDay / 1_000 % 60, 2)
        bytes.append(UInt8(ascii: "."))
        digits(inDay % 1_000, 3)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// `value` in decimal, zero-padded to `width` digits, appended digit by digit (no string made: a frame's time
    /// takes seven of these).
    private mutating func digits(_ value: Int64, _ width: Int) {
        guard value >= 0 else {
            var text = Array(String(value).utf8)
            while text.count < width { text.insert(UInt8(ascii: "0"), at: 0) }
            bytes.append(contentsOf: text)
            return
        }
        var count = 1, divisor: Int64 = 1
        while value / divisor >= 10 {
            divisor *= 10
            count += 1
        }
        for _ in count..<max(width, count) { bytes.append(UInt8(ascii: "0")) }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}
