import Foundation
import HeraldCore
import Testing

/// Member events in the engine: the person added is told like a message, everyone else gets a quiet line, and
/// whoever is no longer in the conversation loses its banners and notifications (docs/behaviour.md §1 and §2).
@Suite("Conversation events: who is told, and in what words")
struct ConversationEventTests {
    static let carol = Person(id: "carol", displayName: "Carol")
    static let dave = Person(id: "dave", displayName: "Dave")
    static let erin = Person(id: "erin", displayName: "Erin")

    static func event(
        _ id: String, _ kind: ConversationEvent.Kind, by sender: Person = Cast.bob, members: [Person] = [],
        title: String? = nil, in conversation: Conversation = Cast.team
    ) -> IncomingMessage {
        IncomingMessage(
            message: Message(
                id: id, conversationID: conversation.id, senderID: sender.id,
                sentAt: Date(timeIntervalSinceReferenceDate: 0),
                event: ConversationEvent(kind: kind, members: members, title: title)),
            conversation: conversation, sender: sender)
    }

    @Test("each event's line, in the third person and as the viewer reads it")
    func lines() {
        let formatter = ContentFormatter.standard
        func line(_ incoming: IncomingMessage, for viewer: String? = nil) -> String {
            formatter.line(for: incoming, viewer: viewer)
        }
        #expect(line(Self.event("e1", .memberAdded, members: [Self.carol])) == "Bob added Carol")
        #expect(line(Self.event("e1", .memberAdded, members: [Cast.alice]), for: "alice") == "Bob added you to Team Chat")
        #expect(line(Self.event("e1", .memberAdded, members: [Self.carol]), for: "bob") == "You added Carol")
        #expect(line(Self.event("e1", .memberAdded, members: [Self.carol, Self.dave])) == "Bob added Carol and Dave")
        #expect(line(Self.event("e1", .memberAdded, members: [Self.carol, Self.dave, Self.erin, Cast.alice]))
                == "Bob added Carol, Dave, Erin and 1 others")
        #expect(line(Self.event("e2", .memberRemoved, members: [Cast.alice]), for: "alice") == "Bob removed you")
        #expect(line(Self.event("e3", .memberLeft, by: Self.carol)) == "Carol left")
        #expect(line(Self.event("e4", .renamed, title: "  Plans\n2027 ")) == "Bob renamed the group to \u{201C}Plans 2027\u{201D}")
        #expect(line(Self.event("e4", .renamed, title: nil)) == "Bob removed the group's name")
        #expect(line(Self.event("e5", .ownerAdded, members: [Self.carol])) == "Bob made Carol an owner")
        #expect(line(Self.event("e5", .ownerAdded, members: [Self.carol, Self.dave])) == "Bob made Carol and Dave owners")
        #expect(line(Self.event("e6", .ownerRemoved, members: [Self.carol])) == "Bob removed Carol as owner")
        #expect(line(Self.event("e7", .deleted)) == "Bob deleted the group")
    }

    @Test("the person added gets a banner in the foreground and a notification in the background; others get nothing")
    func added() {
        var alice = Notifier(userID: "alice")
        let added = Self.event("e1", .memberAdded, members: [Cast.alice, Self.carol])
        let effects = alice.handle(.message(added), at: .zero)
        guard case .show(let banner) = effects.first?.effect else {
            Issue.record("no banner: \(describe(effects))")
            return
        }
        #expect(banner.title == "Bob" && banner.body == "added you to Team Chat" && banner.subtitle == nil)
        #expect(banner.conversationID == "team" && banner.senderID == "bob")
        #expect(ContentFormatter.standard.announcement(for: banner) == "Bob: added you to Team Chat")

        var away = Notifier(userID: "alice")
        _ = away.handle(.app(.background), at: .zero)
        let notified = away.handle(.message(added), at: .zero)
        guard case .local(let notification) = notified.first?.effect else {
            Issue.record("no notification: \(describe(notified))")
            return
        }
        #expect(notification.title == "Team Chat" && notification.body == "Bob added you to Team Chat")

        var dave = Notifier(userID: "dave")
        #expect(describe(dave.handle(.message(added), at: .zero)) == ["0.00 skip e1 quiet"])
        var bob = Notifier(userID: "bob")
        #expect(describe(bob.handle(.message(added), at: .zero)) == ["0.00 skip e1 own"])
        var lookAlike = Notifier(userID: "Alice")
        #expect(describe(lookAlike.handle(.message(added), at: .zero)) == ["0.00 skip e1 quiet"], "ids are compared byte for byte")
    }

    @Test("renames, owners and others' removals are quiet; a muted group's addition is not shown either")
    func quiet() {
        var alice = Notifier(userID: "alice")
        for (id, kind) in [("e1", ConversationEvent.Kind.renamed), ("e2", .ownerAdded), ("e3", .memberRemoved), ("e4", .memberLeft)] {
            let effects = alice.handle(.message(Self.event(id, kind, members: [Self.carol], title: "New")), at: .zero)
            #expect(describe(effects) == ["0.00 skip \(id) quiet"])
        }
        var muted = Notifier(userID: "alice")
        _ = muted.handle(.mute(conversationID: "team"), at: .zero)
        let effects = muted.handle(.message(Self.event("e5", .memberAdded, members: [Cast.alice])), at: .zero)
        #expect(describe(effects) == ["0.00 skip e5 muted"])
    }

    @Test("removed, left or deleted: the group's banner goes, its waiting ones are dropped, its notifications cleared")
    func removed() {
        for ending in [
            Self.event("end", .memberRemoved, members: [Cast.alice]),
            Self.event("end", .memberLeft, by: Cast.alice),
            Self.event("end", .deleted),
        ] {
            var alice = Notifier(userID: "alice")
            _ = alice.handle(.message(Cast.message("t1", in: Cast.team, from: Cast.charlie)), at: .zero)
            _ = alice.handle(.message(Cast.message("o1", in: Cast.aliceCharlie, from: Cast.charlie)), at: .zero)
            _ = alice.handle(.message(Cast.message("t2", in: Cast.team, from: Cast.bob)), at: .zero)
            let effects = alice.handle(.message(ending), at: at(1))
            let reason = ending.message.senderID == "alice" ? "own" : "quiet"
            #expect(describe(effects) == ["1.00 dismiss t1 removed", "1.00 drop t2 removed", "1.00 clear team",
                                          "1.00 skip end \(reason)"])
            // The other chat's banner shows after the gap; the same event again (a reconnect) changes nothing more.
            let again = ending.message.senderID == "alice" ? "own" : "duplicate"
            #expect(describe(alice.handle(.message(ending), at: at(1.5))) == ["1.25 show o1", "1.50 skip end \(again)"])
        }
    }
}
