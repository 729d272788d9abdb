import Foundation
import HeraldCore
import HeraldProtocol
import HeraldTestSupport
import Testing

/// The `message` and `ack` frames are written by hand (they go out with every delivery and every post): byte for byte
/// what the JSON encoder writes, for texts with every kind of character, absent fields, mentions and times on either
/// side of 1970.
@Suite("The message and ack frames, written by hand")
struct MessageFrameTests {
    @Test("identical to the encoder's output for 20,000 varied messages, as a frame, alone (a post's answer) and acknowledged")
    func sameAsEncoder() throws {
        var generator = SplitMix(seed: 7)
        let pieces = ["a", "é", "日本", "👩‍👩‍👧", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{1F}", "\u{7F}",
                      "\u{2028}", "\u{2029}", "\u{FEFF}", "<script>", " ", "\u{8}", "\u{C}", "}", "{\"x\":1}"]
        func text(_ generator: inout SplitMix) -> String {
            (0..<Int(generator.next() % 12)).map { _ in pieces[Int(generator.next() % UInt64(pieces.count))] }.joined()
        }
        for index in 0..<20_000 {
            // Any instant a clock gives, to the last bit of the Double: 1970 to 2100, and a few before 1970.
            // Every other one a hair from a millisecond's edge, where rounding shows.
            let span = index % 50 == 0 ? -1_500_000_000.0 : 3_200_000_000.0
            var since2001 = Double(generator.next() % (1 << 53)) / Double(1 << 53) * span - (index % 50 == 0 ? 0 : 978_307_200)
            if index % 2 == 1 {
                let edge = (since2001 * 1000).rounded(.down) / 1000
                since2001 = index % 4 == 1 ? edge.nextDown : edge.nextUp
            }
            let sentAt = Date(timeIntervalSinceReferenceDate: since2001)
            let message = Message(
                id: text(&generator), conversationID: text(&generator), senderID: text(&generator),
                text: index % 7 == 0 ? nil : text(&generator),
                imageURL: index % 3 == 0 ? URL(string: "https://example.com/a/b.png?x=1&y=2") : nil,
                sentAt: sentAt, seq: Int64(generator.next() % 1_000_000_000),
                silent: index % 5 == 0, mentions: index % 4 == 0 ? [text(&generator), text(&generator)] : [],
                mentionsAll: index % 6 == 0)
            let incoming = IncomingMessage(
                message: message,
                conversation: Conversation(id: message.conversationID, kind: index % 2 == 0 ? .group : .direct,
                                           title: index % 3 == 1 ? nil : text(&generator)),
                sender: Person(id: message.senderID, displayName: text(&generator),
                               avatarURL: index % 2 == 1 ? URL(string: "https://example.com/me.jpg") : nil))
            let frame = ServerFrame.message(incoming)
            let encoded = WireJSON.string(frame)
            #expect(frame.text == encoded, "message \(index)")
            let ack = ServerFrame.ack(id: message.id, seq: message.seq ?? 0)
            #expect(ack.text == WireJSON.string(ack), "ack \(index)")
            let alone = WireMessage.jsonText(message)
            #expect(alone == WireJSON.string(WireMessage(message)), "message \(index) alone")
            if frame.text != encoded || alone != WireJSON.string(WireMessage(message)) { break }
        }
    }

    @Test("an event goes through the encoder")
    func events() throws {
        let event = ConversationEvent(kind: .memberAdded, members: [Person(id: "bob", displayName: "Bob")])
        let message = Message(id: "e1", conversationID: "c", senderID: "ann", sentAt: Date(timeIntervalSince1970: 1), seq: 3, event: event)
        let frame = ServerFrame.message(IncomingMessage(
            message: message, conversation: Conversation(id: "c", kind: .group, title: "Team"),
            sender: Person(id: "ann", displayName: "Ann")))
        #expect(frame.text == WireJSON.string(frame))
        #expect(frame.text.contains(#""kind":"event""#))
        #expect(WireMessage.jsonText(message) == WireJSON.string(WireMessage(message)))
    }
}
