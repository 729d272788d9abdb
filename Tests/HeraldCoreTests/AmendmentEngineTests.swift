import Foundation
import HeraldCore
import Testing

/// What an edit or a deletion does to the banners and system notifications a device already has
/// (docs/behaviour.md §6).
@Suite("Edits and deletions in the engine")
struct AmendmentEngineTests {
    /// Bob's edit (or deletion) of his message `target` in `conversation`.
    private func amendment(
        _ id: String, of target: String, in conversation: Conversation = Cast.team, text: String? = nil, deleted: Bool = false
    ) -> NotifierInput {
        var entry = Cast.message(id, in: conversation, from: Cast.bob, text)
        entry.message.event = ConversationEvent(kind: deleted ? .messageDeleted : .messageEdited, messageID: target)
        return .message(entry)
    }

    @Test("a visible banner takes the new words and keeps its time; a waiting one shows them; a deletion takes each away")
    func banners() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("v1", in: Cast.team, from: Cast.bob, "with a tpyo"))),
            (0.5, .message(Cast.message("w1", in: Cast.aliceBob, from: Cast.bob, "waiting"))),
            (0.6, .message(Cast.message("w2", in: Cast.aliceCharlie, from: Cast.charlie, "waiting too"))),
            (1, amendment("e1", of: "v1", text: "with a typo")),
            (1.5, amendment("e2", of: "w1", in: Cast.aliceBob, text: "edited while waiting")),
            (2, amendment("e3", of: "w2", in: Cast.aliceCharlie, deleted: true)),
        ])
        #expect(describe(timeline) == [
            "0.00 show v1", "1.00 skip e1 quiet", "1.00 update v1 x1", "1.50 skip e2 quiet", "2.00 drop w2 deleted",
            "2.00 skip e3 quiet", "4.00 dismiss v1 timeout", "4.25 show w1", "8.25 dismiss w1 timeout",
        ])
        let updates = timeline.compactMap { timed -> Banner? in if case .update(let banner) = timed.effect { banner } else { nil } }
        #expect(updates.map(\.id) == ["v1"] && updates.first?.body == "with a typo")
        // Its timer was not restarted: it goes 4 s after it appeared, not after the edit.
        #expect(describe(timeline).contains("4.00 dismiss v1 timeout"))
        #expect(describe(timeline).contains("2.00 drop w2 deleted"))
        let shown = timeline.compactMap { timed -> Banner? in if case .show(let banner) = timed.effect { banner } else { nil } }
        #expect(shown.first { $0.id == "w1" }?.body == "edited while waiting")

        var again = Notifier(userID: "alice")
        let deleted = again.run([
            (0, .message(Cast.message("v1", in: Cast.team, from: Cast.bob))),
            (1, amendment("e1", of: "v1", deleted: true)),
        ])
        #expect(describe(deleted) == ["0.00 show v1", "1.00 dismiss v1 deleted", "1.00 skip e1 quiet"])
    }

    @Test("a banner that is gone, and another message's banner, stay as they are")
    func untouched() {
        var notifier = Notifier(userID: "alice")
        let timeline = notifier.run([
            (0, .message(Cast.message("m1", in: Cast.team, from: Cast.bob, "first"))),
            (1, .gesture(.close)),
            (2, amendment("e1", of: "m1", text: "changed")),
            (3, .message(Cast.message("m2", in: Cast.aliceBob, from: Cast.bob, "another"))),
            (4, amendment("e2", of: "m1", deleted: true)),
        ])
        #expect(describe(timeline) == [
            "0.00 show m1", "1.00 dismiss m1 close", "2.00 skip e1 quiet", "3.00 show m2", "4.00 skip e2 quiet",
            "7.00 dismiss m2 timeout",
        ])
    }

    @Test("a posted notification is replaced silently, only if still delivered, and withdrawn once deleted; a held one is rewritten or dropped")
    func notifications() throws {
        var notifier = Notifier(userID: "alice")
        _ = notifier.handle(.app(.background), at: .zero)
        var posted = Cast.message("n1", in: Cast.team, from: Cast.bob, "first words")
        posted.message.seq = 11
        let timeline = notifier.run([
            (1, .message(posted)),
            (2, amendment("e1", of: "n1", text: "second words")),
            (3, amendment("e2", of: "n1", deleted: true)),
            (4, amendment("e3", of: "n1", deleted: true)),
        ])
        let locals = timeline.compactMap { timed -> LocalNotification? in if case .local(let note) = timed.effect { note } else { nil } }
        #expect(locals.count == 2)
        let edit = try #require(locals.last)
        #expect(edit.identifier == "herald-11" && edit.body == "Bob: second words" && edit.silent && edit.onlyIfDelivered)
        #expect(!(locals.first?.onlyIfDelivered ?? true))
        #expect(describe(timeline).filter { $0.contains("withdraw") } == ["3.00 withdraw herald-11"], "withdrawn once")

        var holding = Notifier(userID: "alice", localHold: .seconds(2))
        _ = holding.handle(.app(.background), at: .zero)
        let held = holding.run([
            (0, .message(Cast.message("h1", in: Cast.aliceBob, from: Cast.bob, "before"))),
            (0, .message(Cast.message("h2", in: Cast.aliceCharlie, from: Cast.charlie, "dropped"))),
            (1, amendment("e1", of: "h1", in: Cast.aliceBob, text: "after")),
            (1, amendment("e2", of: "h2", in: Cast.aliceCharlie, deleted: true)),
        ])
        let out = held.compactMap { timed -> LocalNotification? in if case .local(let note) = timed.effect { note } else { nil } }
        #expect(out.map(\.messageID) == ["h1"] && out.first?.body == "after" && out.first?.onlyIfDelivered == false)
    }

    @Test("Message.amended(by:): an edit's text and mentions, a tombstone, and nothing for another message or a deleted one")
    func amended() {
        let original = Message(id: "m1", conversationID: "team", senderID: "bob", text: "hi @carol", mentions: ["carol"])
        var edit = Message(id: "e1", conversationID: "team", senderID: "bob", text: "hi @dave", mentions: ["dave"])
        edit.event = ConversationEvent(kind: .messageEdited, messageID: "m1")
        let edited = original.amended(by: edit)
        #expect(edited.text == "hi @dave" && edited.mentions == ["dave"] && edited.edited && !edited.deleted)
        var deletion = Message(id: "e2", conversationID: "team", senderID: "bob")
        deletion.event = ConversationEvent(kind: .messageDeleted, messageID: "m1")
        let tombstone = edited.amended(by: deletion)
        #expect(tombstone.text == nil && tombstone.mentions.isEmpty && tombstone.deleted && tombstone.imageURL == nil)
        #expect(tombstone.amended(by: edit) == tombstone, "a tombstone is not edited back")
        #expect(Message(id: "m2", conversationID: "team", senderID: "bob", text: "x").amended(by: edit).text == "x")
        #expect(ContentFormatter.standard.preview(of: tombstone) == "This message was deleted")
    }
}
