import Foundation
@testable import HeraldCore
import Testing

/// A push's words as keys an app translates: each key's English format, filled with its arguments, is the
/// notification's English title and body, in every case the wording rules have.
@Suite("Notification words as keys of the app's strings")
struct NotificationLocalizationTests {
    /// `format` with each `%@` replaced by the next argument.
    static func fill(_ format: String, _ arguments: [String]) -> String {
        var remaining = arguments[...]
        var result = ""
        var rest = format[...]
        while let range = rest.range(of: "%@") {
            result += rest[..<range.lowerBound]
            result += remaining.popFirst() ?? "%@"
            rest = rest[range.upperBound...]
        }
        #expect(remaining.isEmpty, "every argument has its place in \(format.debugDescription)")
        return result + rest
    }

    static let picture = URL(string: "https://example.com/p.png")

    static func cases() -> [(String, IncomingMessage)] {
        let untitled = Conversation(id: "g2", kind: .group)
        let system = Person(id: "", displayName: "")
        let lookAlike = Person(id: "mallory", displayName: "ADMIN")
        let addedBob = ConversationEvent(kind: .memberAdded, members: [Cast.bob])
        let addedCharlie = ConversationEvent(kind: .memberAdded, members: [Cast.charlie])
        func event(_ event: ConversationEvent, by sender: Person) -> IncomingMessage {
            IncomingMessage(
                message: Message(id: "e", conversationID: Cast.team.id, senderID: sender.id, sentAt: Date(), event: event),
                conversation: Cast.team, sender: sender)
        }
        return [
            ("direct, text", Cast.message("1", in: Cast.aliceBob, from: Cast.alice)),
            ("direct, long text", Cast.message("2", in: Cast.aliceBob, from: Cast.alice, String(repeating: "word ", count: 30))),
            ("direct, image", Cast.message("3", in: Cast.aliceBob, from: Cast.alice, nil, imageURL: picture)),
            ("direct, white space and an image", Cast.message("4", in: Cast.aliceBob, from: Cast.alice, " \n ", imageURL: picture)),
            ("direct, nothing", Cast.message("5", in: Cast.aliceBob, from: Cast.alice, nil)),
            ("group, text", Cast.message("6", in: Cast.team, from: Cast.alice)),
            ("group, image", Cast.message("7", in: Cast.team, from: Cast.alice, "", imageURL: picture)),
            ("group, nothing", Cast.message("8", in: Cast.team, from: Cast.alice, "\t")),
            ("untitled group", Cast.message("9", in: untitled, from: Cast.alice)),
            ("a name that reads as the system's", Cast.message("10", in: Cast.team, from: lookAlike)),
            ("a blank name", Cast.message("11", in: Cast.aliceBob, from: Person(id: "x", displayName: " "))),
            ("system, group", Cast.message("12", in: Cast.team, from: system)),
            ("system, direct, image", Cast.message("13", in: Cast.aliceBob, from: system, nil, imageURL: picture)),
            ("the event that added the viewer", event(addedBob, by: Cast.alice)),
            ("an event about someone else", event(addedCharlie, by: Cast.alice)),
        ]
    }

    @Test("each key's English format, filled in, is the notification's title and body")
    func sameWords() {
        for formatter in [ContentFormatter.standard, ContentFormatter(imagePlaceholder: "[picture]", emptyPlaceholder: "(new)")] {
            for (name, incoming) in Self.cases() {
                let notification = formatter.notification(for: incoming, viewer: "bob")
                let keys = formatter.localization(for: incoming, viewer: "bob")
                for (words, english) in [(keys.title, notification.title), (keys.body, notification.body)] {
                    guard let words else { continue }
                    #expect(NotificationLocalization.keys.contains(words.key), "\(name): \(words.key)")
                    let format = formatter.englishFormat(of: words.key)
                    #expect(format.map { Self.fill($0, words.arguments) } == english, "\(name)")
                }
            }
        }
    }

    @Test("what Herald wrote has a key; a direct chat's text, a group's title and the backend's name do not")
    func whichWords() {
        let formatter = ContentFormatter.standard
        let cases = Dictionary(uniqueKeysWithValues: Self.cases())
        func keys(_ name: String) -> [String?] {
            let localization = formatter.localization(for: cases[name]!, viewer: "bob")
            return [localization.title?.key, localization.body?.key]
        }
        #expect(keys("direct, text") == ["HERALD_MESSAGE_FROM", nil])
        #expect(keys("direct, image") == ["HERALD_MESSAGE_FROM", "HERALD_IMAGE"])
        #expect(keys("direct, white space and an image") == ["HERALD_MESSAGE_FROM", "HERALD_IMAGE"])
        #expect(keys("direct, nothing") == ["HERALD_MESSAGE_FROM", "HERALD_NEW_MESSAGE"])
        #expect(keys("group, text") == ["HERALD_MESSAGE_IN", "HERALD_GROUP_MESSAGE"])
        #expect(keys("group, image") == ["HERALD_MESSAGE_IN", "HERALD_GROUP_IMAGE"])
        #expect(keys("group, nothing") == ["HERALD_MESSAGE_IN", "HERALD_GROUP_NEW_MESSAGE"])
        #expect(keys("system, group") == [nil, nil])
        #expect(keys("system, direct, image") == [nil, "HERALD_IMAGE"])
        #expect(keys("the event that added the viewer") == [nil, "HERALD_ADDED_YOU"])
        #expect(keys("an event about someone else") == [nil, nil])
        let group = formatter.localization(for: cases["group, text"]!, viewer: "bob")
        #expect(group.body?.arguments == ["Alice Johnson", "Hey, are you there?"])
        #expect(formatter.localization(for: cases["a name that reads as the system's"]!, viewer: "bob").body?.arguments.first
            == "ADMIN (member)")
        for key in NotificationLocalization.keys { #expect(formatter.englishFormat(of: key) != nil) }
    }
}
