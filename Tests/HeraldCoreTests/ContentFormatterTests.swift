import Foundation
import HeraldCore
import Testing

@Suite("What a notification says (docs/behaviour.md §2)")
struct ContentFormatterTests {
    let formatter = ContentFormatter.standard

    @Test("white space runs, newlines included, fold to one space and the ends are trimmed")
    func foldsWhitespace() {
        #expect(formatter.preview(text: "  Lunch?\n\n  The usual\tplace \r\n at 12:30  ", hasImage: false)
            == "Lunch? The usual place at 12:30")
        #expect(formatter.preview(text: "Café\u{00A0}\u{2003}au lait", hasImage: false) == "Café au lait")
    }

    @Test("a preview of 50 characters or fewer is kept whole")
    func keepsShortText() {
        let fifty = String(repeating: "a", count: 50)
        #expect(formatter.preview(text: fifty, hasImage: false) == fifty)
        #expect(formatter.preview(text: "Hey, are you there?", hasImage: false) == "Hey, are you there?")
    }

    @Test("a longer preview keeps its first 50 characters, then ...")
    func cutsLongText() {
        let text = String(repeating: "abcde", count: 11)
        #expect(formatter.preview(text: text, hasImage: false) == String(repeating: "abcde", count: 10) + "...")
    }

    @Test("trailing spaces are trimmed before the ellipsis")
    func trimsBeforeEllipsis() {
        let text = String(repeating: "a", count: 49) + " and more"
        #expect(formatter.preview(text: text, hasImage: false) == String(repeating: "a", count: 49) + "...")
    }

    @Test("the limit counts grapheme clusters: emoji with skin tones and flags are one character each")
    func countsEmojiAsOne() {
        let wave = "👋🏽"
        let family = "👨‍👩‍👧‍👦"
        let text = String(repeating: wave, count: 30) + String(repeating: family, count: 30)
        let preview = formatter.preview(text: text, hasImage: false)
        #expect(preview == String(repeating: wave, count: 30) + String(repeating: family, count: 20) + "...")
        #expect(preview.count == 53)
        #expect(formatter.preview(text: String(repeating: "🇫🇷", count: 50), hasImage: false)
            == String(repeating: "🇫🇷", count: 50))
    }

    @Test("a letter with combining accents is one character, never split from its accents")
    func keepsCombiningAccents() {
        let accented = "e\u{0301}\u{0323}"
        let text = String(repeating: accented, count: 60)
        let preview = formatter.preview(text: text, hasImage: false)
        #expect(preview == String(repeating: accented, count: 50) + "...")
        #expect(preview.unicodeScalars.count == 50 * 3 + 3)
    }

    @Test("an image with no text reads 📷 Image; nothing at all reads New message")
    func placeholders() {
        #expect(formatter.preview(text: nil, hasImage: true) == "📷 Image")
        #expect(formatter.preview(text: " \n ", hasImage: true) == "📷 Image")
        #expect(formatter.preview(text: nil, hasImage: false) == "New message")
        #expect(formatter.preview(text: "", hasImage: false) == "New message")
        #expect(formatter.preview(text: "Look!", hasImage: true) == "Look!")
    }

    @Test("initials are the first letters of the first and last words, upper-cased")
    func initials() {
        #expect(formatter.initials(of: "Alice Johnson") == "AJ")
        #expect(formatter.initials(of: "Bob") == "B")
        #expect(formatter.initials(of: "  ") == "?")
        #expect(formatter.initials(of: "") == "?")
        #expect(formatter.initials(of: "mary ann  de la cruz") == "MC")
        #expect(formatter.initials(of: "émile zola") == "ÉZ")
    }

    @Test("a direct chat's banner: sender as title, no subtitle, preview as body")
    func directBanner() {
        let banner = formatter.banner(for: Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))
        #expect(banner.id == "m1")
        #expect(banner.conversationID == "alice-bob")
        #expect(banner.title == "Bob")
        #expect(banner.subtitle == nil)
        #expect(banner.body == "Hey, are you there?")
        #expect(banner.initials == "B")
        #expect(banner.tone == .message)
        #expect(banner.count == 1)
        #expect(banner.senderID == "bob", "for the colour behind the initials")
    }

    @Test("a group's banner says in <group title>")
    func groupBanner() {
        let banner = formatter.banner(for: Cast.message("m1", in: Cast.team, from: Cast.charlie, "Standup in 5"))
        #expect(banner.title == "Charlie Davis")
        #expect(banner.subtitle == "in Team Chat")
        #expect(banner.body == "Standup in 5")
        #expect(banner.initials == "CD")
    }

    @Test("the sender's avatar is carried; initials stay available for when it fails to load")
    func avatar() {
        let dana = Person(id: "dana", displayName: "Dana Li", avatarURL: URL(string: "https://example.com/dana.png"))
        let banner = formatter.banner(for: Cast.message("m1", in: Cast.aliceBob, from: dana))
        #expect(banner.avatarURL?.absoluteString == "https://example.com/dana.png")
        #expect(banner.initials == "DL")
    }

    @Test("a direct chat's system notification: New message from <sender>, body the preview, thread the chat")
    func directNotification() {
        let notification = formatter.notification(for: Cast.message("m1", in: Cast.aliceBob, from: Cast.bob))
        #expect(notification == LocalNotification(
            messageID: "m1", title: "New message from Bob", body: "Hey, are you there?", thread: "alice-bob", senderID: "bob"))
    }

    @Test("a group's system notification: New message in <group>, body <sender>: <preview>")
    func groupNotification() {
        let image = URL(string: "https://example.com/cat.jpg")
        let notification = formatter.notification(
            for: Cast.message("m2", in: Cast.team, from: Cast.charlie, nil, imageURL: image))
        #expect(notification == LocalNotification(
            messageID: "m2", title: "New message in Team Chat", body: "Charlie Davis: 📷 Image", thread: "team",
            senderID: "charlie"))
    }

    @Test("a notification names its message's sender, whom a Reply answers; an event's and the app's backend's name none")
    func notificationSender() {
        #expect(formatter.notification(for: Cast.message("m1", in: Cast.team, from: Cast.charlie)).senderID == "charlie")
        let system = Person(id: "", displayName: "")
        #expect(formatter.notification(for: Cast.message("m2", in: Cast.team, from: system)).senderID == nil)
        let added = ConversationEventTests.event("e1", .memberAdded, members: [Cast.alice])
        #expect(formatter.notification(for: added, viewer: "alice").senderID == nil)
    }

    @Test("display names are shown, never raw ids; a blank name or group title gets a neutral stand-in")
    func fallbacks() {
        let nameless = Person(id: "+15551234567", displayName: "   ")
        let untitled = Conversation(id: "g1", kind: .group, title: nil)
        let incoming = Cast.message("m1", in: untitled, from: nameless, "hi")
        #expect(formatter.banner(for: incoming).title == "Someone")
        #expect(formatter.banner(for: incoming).subtitle == "in Group chat")
        #expect(formatter.notification(for: incoming).title == "New message in Group chat")
        #expect(formatter.notification(for: incoming).body == "Someone: hi")
    }

    @Test("the limit and the words are configurable")
    func configurable() {
        let short = ContentFormatter(previewLimit: 5, imagePlaceholder: "[photo]")
        #expect(short.preview(text: "Hello world", hasImage: false) == "Hello...")
        #expect(short.preview(text: nil, hasImage: true) == "[photo]")
    }

    @Test("a name reads as the system's by its letters and digits, in any case and with anything between them, ASCII or not")
    func systemLookAlikes() {
        let formatter = ContentFormatter()
        for name in ["Admin", "ADMIN", "admin", "Ad-min", " a.d.m.i.n ", "A d m i n", "Ａｄｍｉｎ", "Admin!"] {
            #expect(formatter.readsAsSystemName(name), "\(name)")
        }
        for name in ["Admin2", "Admins", "Adm", "Bob", "", "!!!", "Ädmin", "Аdmin"] {
            #expect(!formatter.readsAsSystemName(name), "\(name)")
        }
        let accented = ContentFormatter(systemSenderName: "Système")
        #expect(accented.readsAsSystemName("SYSTÈME"))
        #expect(accented.readsAsSystemName("Sy-stème"))
        #expect(!accented.readsAsSystemName("Systeme"), "an accent is part of the letter")
        let digits = ContentFormatter(systemSenderName: "Bot 9")
        #expect(digits.readsAsSystemName("bot9") && digits.readsAsSystemName("ＢＯＴ９") && !digits.readsAsSystemName("bot"))
    }
}
