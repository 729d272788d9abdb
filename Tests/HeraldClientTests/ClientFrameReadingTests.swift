import Foundation
@testable import HeraldProtocol
import HeraldTestSupport
import Testing

/// A client's `send` is read without the JSON decoder when written plainly: the result must be the decoder's, for
/// every spelling the fast reader takes and every near miss, which the decoder reads (or refuses) itself.
@Suite("Send frames read fast, read alike")
struct PlainSendTests {
    @Test("20,000 varied send frames: what the fast reader takes, the decoder reads alike; the rest is the decoder's")
    func sameAsDecoder() throws {
        var generator = SplitMix(seed: 11)
        func pick<T>(_ items: [T]) -> T { items[Int(generator.next() % UInt64(items.count))] }
        let plain = [#""c1""#, #""""#, #""héllo 日本 👋🏽""#, #""/slash/""#, "\"\u{7F}del\"", #""<script>""#, #""a b""#]
        let escaped = [#""a\"b""#, #""a\nb""#, #""\u00e9""#, "\"tab\there\"", #""{\"x\":1}""#, #""x"#]
        let lists = ["[]", #"["bob"]"#, #"[ "bob" , "ann" ]"#, #"["bob",]"#, #"[1]"#, #"[null]"#, #"["a\u0062"]"#]
        let others = ["null", "true", "false", "0", "1.5", #"{"a":1}"#, "nul", "tru"]
        // Mostly what the fast reader takes, so that both of its answers are checked often.
        func string() -> String { generator.next() % 8 == 0 ? pick(escaped) : pick(plain) }
        func value() -> String {
            switch generator.next() % 6 {
            case 0, 1, 2: string()
            case 3: pick(lists)
            default: pick(others)
            }
        }
        let keys = ["type", "conversation", "id", "text", "imageURL", "mentions", "mentionsAll"]
        let spaces = ["", "", "", " ", "\n", "\t", "  "]
        var fast = 0
        for index in 0..<20_000 {
            var fields: [(String, String)] = [("type", #""send""#), ("conversation", string()), ("id", string())]
            for key in keys.dropFirst(3) where generator.next() % 2 == 0 {
                // Mostly a value of the key's kind.
                let fitting = switch key {
                case "mentions": pick(["[]", #"["bob"]"#, #"[ "bob" , "ann" ]"#, "null"])
                case "mentionsAll": pick(["true", "false", "null"])
                default: generator.next() % 4 == 0 ? "null" : pick(plain)
                }
                fields.append((key, generator.next() % 5 == 0 ? value() : fitting))
            }
            // Near misses: another type, a missing or repeated key, an unknown one, a key with an escape.
            switch index % 13 {
            case 0: fields[0].1 = pick([#""Send""#, #""ping""#, "null", #""send ""#])
            case 1: fields.remove(at: 1 + Int(generator.next() % 2))
            case 2: fields.append(pick(fields))
            case 3: fields.append(("other", value()))
            case 4: fields[Int(generator.next() % UInt64(fields.count))].0 = #"te\u0078t"#
            default: if generator.next() % 5 == 0 { fields[1 + Int(generator.next() % 2)].1 = value() }
            }
            for position in fields.indices.reversed() where position > 0 {
                fields.swapAt(position, Int(generator.next() % UInt64(position + 1)))
            }
            var text = pick(spaces) + "{" + fields.map { pick(spaces) + "\"\($0.0)\"" + pick(spaces) + ":" + pick(spaces) + $0.1 }
                .joined(separator: pick(spaces) + ",") + pick(spaces) + "}" + pick(spaces)
            switch index % 29 {
            case 0: text.removeLast()
            case 1: text += "}"
            case 2: text = String(text.dropFirst())
            default: break
            }
            if ClientFrame.plainSend(text) != nil { fast += 1 }
            expectReadAsDecoded(text)
        }
        #expect(fast > 2_000, "the fast reader took \(fast) of 20,000")
        #expect(ClientFrame.plainSend(#"{"type":"send","conversation":"c","id":"m1","text":"hi","mentions":["bob"],"mentionsAll":true}"#)
            == .send(conversationID: "c", id: "m1", text: "hi", imageURL: nil, mentions: ["bob"], mentionsAll: true))
    }
}

/// A client's confirmation is read without the JSON decoder when written as the clients write it: the result must be
/// the decoder's, for those forms and for every near miss, which the decoder reads (or refuses) itself.
@Suite("Confirmation frames read fast, read alike")
struct PlainConfirmationTests {
    @Test("the plain forms give what the decoder gives; any other spelling is the decoder's to read or refuse")
    func sameAsDecoder() throws {
        let numbers = ["0", "1", "7", "123", "999999999999999999", "1234567890123456789", "9223372036854775807",
                       "9223372036854775808", "01", "-1", "-0", "1.0", "1e3", "", " 5", "5 ", "1_000", "０"]
        var texts: [String] = []
        for number in numbers {
            texts.append(#"{"type":"received","through":\#(number)}"#)
            texts.append(#"{"through":\#(number),"type":"received"}"#)
            texts.append(#"{"type": "received", "through": \#(number)}"#)
        }
        texts += [#"{"type":"received","through":5}}"#, #"{"type":"received","through":5"#, #"{"type":"received","through":"5"}"#,
                  #"{"type":"receivedX","through":5}"#, #"{"through":5,"type":"received"} "#, #"{"type":"received"}"#]
        for text in texts { expectReadAsDecoded(text) }
        #expect(try ClientFrame(parsing: #"{"through":42,"type":"received"}"#) == .received(through: 42))
    }
}

/// `ClientFrame(parsing:)` reads `text` as the JSON decoder does: the same frame, or a refusal where it refuses.
func expectReadAsDecoded(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let read = Result { try ClientFrame(parsing: text) }
    let decoded = Result { try WireJSON.decoder().decode(ClientFrame.self, from: Data(text.utf8)) }
    switch (read, decoded) {
    case (.success(let a), .success(let b)): #expect(a == b, "\(text)", sourceLocation: sourceLocation)
    case (.failure, .failure): break
    default: Issue.record("\(text): read \(read), the decoder \(decoded)", sourceLocation: sourceLocation)
    }
}
