/// Turns messages into the words people see: previews, banner lines, notification titles and bodies.
///
/// This is the one place the wording rules live; the server (push), the clients (banners, local notifications)
/// and `herald replay` all call it.
public struct ContentFormatter: Hashable, Sendable {
    /// The longest preview, in grapheme clusters, before it is cut and given an ellipsis.
    public var previewLimit: Int
    /// What stands in for a message that has an image and no text.
    public var imagePlaceholder: String
    /// What stands in for a message with neither text nor image.
    public var emptyPlaceholder: String
    /// The name used when a sender has no display name.
    public var unknownSenderName: String
    /// What a deleted message's tombstone says, in the history and in a conversation's last line.
    public var deletedPlaceholder: String = "This message was deleted"
    /// The title used for a group that has none.
    public var untitledGroupName: String
    /// The name shown for the app's backend: the sender of a system message, or who made a change it made.
    public var systemSenderName: String {
        didSet { systemLetters = Self.asciiLettersAndDigits(systemSenderName) }
    }
    /// The system name's letters and digits, lower-cased, when it is ASCII (what names are compared with).
    private var systemLetters: [UInt8]?

    /// The rules of docs/behaviour.md §2: 50 characters, `📷 Image`, `New message`.
    public static let standard = ContentFormatter()

    /// Creates a formatter; the defaults are the product's rules.
    public init(
        previewLimit: Int = 50,
        imagePlaceholder: String = "📷 Image",
        emptyPlaceholder: String = "New message",
        unknownSenderName: String = "Someone",
        untitledGroupName: String = "Group chat",
        systemSenderName: String = "Admin"
    ) {
        self.previewLimit = max(0, previewLimit)
        self.imagePlaceholder = imagePlaceholder
        self.emptyPlaceholder = emptyPlaceholder
        self.unknownSenderName = unknownSenderName
        self.untitledGroupName = untitledGroupName
        self.systemSenderName = systemSenderName
        systemLetters = Self.asciiLettersAndDigits(systemSenderName)
    }

    /// The one-line preview of a message.
    ///
    /// White space runs (newlines included) fold to one space and the ends are trimmed. Longer than
    /// ``previewLimit`` grapheme clusters: the first ``previewLimit``, trailing spaces trimmed, then `...`.
    /// No text: ``imagePlaceholder`` if there is an image, else ``emptyPlaceholder``.
    public func preview(text: String?, hasImage: Bool) -> String {
        var (folded, cut) = Self.foldWhitespace(text ?? "", limit: previewLimit)
        if folded.isEmpty {
            return hasImage ? imagePlaceholder : emptyPlaceholder
        }
        if cut { folded.append("...") }
        return folded
    }

    /// The preview of a message (see ``preview(text:hasImage:)``); ``deletedPlaceholder`` for a tombstone.
    public func preview(of message: Message) -> String {
        if message.deleted { return deletedPlaceholder }
        return preview(text: message.text, hasImage: message.imageURL != nil)
    }

    /// The name to show for a person: their display name, or ``unknownSenderName`` when it is blank;
    /// ``systemSenderName`` for the app's backend (the empty id). A person whose name reads as the system's
    /// (``readsAsSystemName(_:)``: `Admin`, `ADMIN`, `Ａｄｍｉｎ`, `Ad-min`) is shown with ` (member)` after it:
    /// no one can pass for the app's backend.
    public func name(of person: Person) -> String {
        if person.id.isEmpty { return systemSenderName }
        let name = Self.foldWhitespace(person.displayName).text
        if name.isEmpty { return unknownSenderName }
        return readsAsSystemName(name) ? name + " (member)" : name
    }

    /// Whether `name` reads as ``systemSenderName``: the same letters and digits once both are in compatibility
    /// form (NFKC: full-width letters are letters) and lower case, whatever stands between them. Look-alikes from
    /// other scripts (a Cyrillic А) are not caught here; the system's lines look different on every client.
    public func readsAsSystemName(_ name: String) -> Bool {
        // Most names and the usual system name are ASCII, where compatibility form changes nothing and the letters
        // and digits are A–Z, a–z and 0–9: compared byte by byte, without building a string (this runs for every
        // message's sender).
        if let system = systemLetters, let reads = Self.asciiReads(name, as: system) {
            return reads
        }
        func letters(_ text: String) -> String {
            String(String.UnicodeScalarView(text.precomposedStringWithCompatibilityMapping.lowercased().unicodeScalars.filter {
                switch $0.properties.generalCategory {
                case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                     .decimalNumber, .letterNumber, .otherNumber: true
                default: false
                }
            }))
        }
        let system = letters(systemSenderName)
        return !system.isEmpty && letters(name) == system
    }

    /// Whether ASCII `name`'s letters and digits, lower-cased, are `system` (not empty); nil if `name` is not all
    /// ASCII. Nothing is allocated.
    private static func asciiReads(_ name: String, as system: [UInt8]) -> Bool? {
        var index = 0
        var same = !system.isEmpty
        for byte in name.utf8 {
            let kept: UInt8
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): kept = byte
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): kept = byte + 32
            case 0x80...: return nil
            default: continue
            }
            if same, index < system.count, system[index] == kept {
                index += 1
            } else {
                same = false
            }
        }
        return same && index == system.count
    }

    /// The lower-cased ASCII letters and digits of `text`, or nil if it is not all ASCII.
    private static func asciiLettersAndDigits(_ text: String) -> [UInt8]? {
        var kept: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): kept.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): kept.append(byte + 32)
            case 0x80...: return nil
            default: break
            }
        }
        return kept
    }

    /// The title to show for a group: its title, or ``untitledGroupName`` when it has none.
    public func groupTitle(of conversation: Conversation) -> String {
        let title = Self.foldWhitespace(conversation.title ?? "").text
        return title.isEmpty ? untitledGroupName : title
    }

    /// Initials for an avatar placeholder: the first letters of the first and last words, upper-cased.
    ///
    /// `Alice Johnson` → `AJ`, `Bob` → `B`, a blank name → `?`.
    public func initials(of name: String) -> String {
        Self.initials(ofFolded: Self.foldWhitespace(name).text)
    }

    /// Initials of a name whose white space is already folded to single spaces.
    static func initials(ofFolded name: String) -> String {
        guard let first = name.first else { return "?" }
        guard let space = name.utf8.lastIndex(of: UInt8(ascii: " ")) else { return first.uppercased() }
        return first.uppercased() + name[name.index(after: space)].uppercased()
    }

    /// The line an event is in a chat, as `viewer` reads it: `Alice added Carol`, `Alice added you to Team Chat`,
    /// `You removed Bob`, `Bob left`, `Alice renamed the group to “Plans”`, `Alice made Carol an owner`,
    /// `Alice deleted the group` (docs/behaviour.md §2). More than three people: the first three and
    /// `and N others`. Without a viewer, in the third person.
    public func line(for event: ConversationEvent, by sender: Person, in conversation: Conversation, viewer: String? = nil) -> String {
        let who = viewer.map { sender.id.utf8.elementsEqual($0.utf8) } == true ? "You" : name(of: sender)
        return who + " " + predicate(of: event, by: sender, in: conversation, viewer: viewer)
    }

    /// What an event's line says after its subject: `added Carol`, `added you to Team Chat`, `left`.
    func predicate(of event: ConversationEvent, by sender: Person, in conversation: Conversation, viewer: String?) -> String {
        func named(_ person: Person) -> String {
            guard let viewer, person.id.utf8.elementsEqual(viewer.utf8) else { return name(of: person) }
            return "you"
        }
        func list(_ people: [Person]) -> String {
            let names = people.prefix(3).map(named)
            if people.count > 3 { return names.joined(separator: ", ") + " and \(people.count - 3) others" }
            guard names.count > 1 else { return names.first ?? unknownSenderName }
            return names.dropLast().joined(separator: ", ") + " and " + names.last!
        }
        switch event.kind {
        case .memberAdded:
            if let viewer, event.concerns(viewer), !sender.id.utf8.elementsEqual(viewer.utf8) {
                return "added you to \(groupTitle(of: conversation))"
            }
            return "added \(list(event.members))"
        case .memberRemoved:
            return "removed \(list(event.members))"
        case .memberLeft:
            return "left"
        case .renamed:
            let title = Self.foldWhitespace(event.title ?? "").text
            return title.isEmpty ? "removed the group's name" : "renamed the group to \u{201C}\(title)\u{201D}"
        case .ownerAdded:
            return "made \(list(event.members)) \(event.members.count == 1 ? "an owner" : "owners")"
        case .ownerRemoved:
            return "removed \(list(event.members)) as \(event.members.count == 1 ? "owner" : "owners")"
        case .deleted:
            return "deleted the group"
        case .messageEdited:
            return "edited a message"
        case .messageDeleted:
            return "deleted a message"
        }
    }

    /// What an entry says in one line: a message's preview, or an event's line (as `viewer` reads it).
    public func line(for incoming: IncomingMessage, viewer: String? = nil) -> String {
        guard let event = incoming.message.event else { return preview(of: incoming.message) }
        return line(for: event, by: incoming.sender, in: incoming.conversation, viewer: viewer)
    }

    /// The in-app banner for a message: sender as title, `in <group>` as subtitle for groups, preview as body.
    /// For an event (only the one that added `viewer` makes a banner): who did it as the title, what they did as
    /// the body (`Alice` / `added you to Team Chat`).
    public func banner(for incoming: IncomingMessage, viewer: String? = nil) -> Banner {
        if let event = incoming.message.event {
            return Banner(
                id: incoming.message.id, conversationID: incoming.conversation.id,
                title: name(of: incoming.sender), subtitle: nil,
                body: predicate(of: event, by: incoming.sender, in: incoming.conversation, viewer: viewer),
                avatarURL: incoming.sender.avatarURL, tone: .message, senderID: incoming.sender.id)
        }
        let name = name(of: incoming.sender)
        let subtitle: String? = switch incoming.conversation.kind {
        case .direct: nil
        case .group: "in " + groupTitle(of: incoming.conversation)
        }
        var banner = Banner(
            id: incoming.message.id,
            conversationID: incoming.conversation.id,
            title: name,
            subtitle: subtitle,
            body: preview(of: incoming.message),
            avatarURL: incoming.sender.avatarURL,
            tone: .message,
            senderID: incoming.sender.id
        )
        banner.messageID = incoming.message.id
        return banner
    }

    /// What a screen reader announces for a banner: the sender, `in <group>` and the preview
    /// (`Charlie Davis in Team Chat: Hey, are you there?`); a general banner's message.
    public func announcement(for banner: Banner) -> String {
        var text = banner.title
        if let subtitle = banner.subtitle { text += " " + subtitle }
        if let body = banner.body { text += ": " + body }
        return text
    }

    /// The system notification for a message; push notifications use the same words.
    ///
    /// Direct: `New message from <sender>`, body = preview. Group: `New message in <group>`,
    /// body = `<sender>: <preview>`. The thread is the conversation id.
    ///
    /// An event: the group's title as the title, the event's line (as `viewer` reads it) as the body.
    ///
    /// A system message (from the app's backend) is worded apart from any person's: in a group the group's title
    /// alone as the title and the preview alone as the body; in a direct chat ``systemSenderName`` as the title.
    public func notification(for incoming: IncomingMessage, viewer: String? = nil) -> LocalNotification {
        var notification = words(for: incoming, viewer: viewer)
        notification.seq = incoming.message.seq
        if incoming.message.event == nil, !incoming.message.isSystem { notification.senderID = incoming.message.senderID }
        return notification
    }

    /// What a notification that replaces others of its burst adds to its words: `3 new messages`.
    public func summary(ofBurst count: Int) -> String {
        "\(count) new messages"
    }

    private func words(for incoming: IncomingMessage, viewer: String?) -> LocalNotification {
        if incoming.message.event != nil {
            return LocalNotification(
                messageID: incoming.message.id, title: groupTitle(of: incoming.conversation),
                body: line(for: incoming, viewer: viewer), thread: incoming.conversation.id)
        }
        let name = name(of: incoming.sender)
        let preview = preview(of: incoming.message)
        if incoming.message.isSystem {
            let title = incoming.conversation.kind == .group ? groupTitle(of: incoming.conversation) : systemSenderName
            return LocalNotification(
                messageID: incoming.message.id, title: title, body: preview, thread: incoming.conversation.id)
        }
        switch incoming.conversation.kind {
        case .direct:
            return LocalNotification(
                messageID: incoming.message.id,
                title: "New message from \(name)",
                body: preview,
                thread: incoming.conversation.id
            )
        case .group:
            return LocalNotification(
                messageID: incoming.message.id,
                title: "New message in \(groupTitle(of: incoming.conversation))",
                body: "\(name): \(preview)",
                thread: incoming.conversation.id
            )
        }
    }

    /// `text` with white space runs folded to one space and the ends trimmed, cut to `limit` grapheme clusters
    /// (trailing space trimmed); `cut` tells whether anything was left out.
    static func foldWhitespace(_ text: String, limit: Int = .max) -> (text: String, cut: Bool) {
        var text = text
        switch text.withUTF8({ foldASCII($0, limit: limit) }) {
        case .unchanged: return (text, false)
        case .folded(let folded, let cut): return (folded, cut)
        case .notASCII: break
        }
        var folded = ""
        var count = 0
        var spaceBefore = false
        for character in text {
            if character.isFoldableSpace {
                spaceBefore = count > 0
                continue
            }
            if count + (spaceBefore ? 1 : 0) >= limit {
                return (folded, true)
            }
            if spaceBefore {
                folded.append(" ")
                count += 1
                spaceBefore = false
            }
            folded.append(character)
            count += 1
        }
        return (folded, false)
    }

    private enum ASCIIFolding {
        case unchanged
        case folded(String, cut: Bool)
        case notASCII
    }

    /// ``foldWhitespace(_:limit:)`` for ASCII text, where every byte is one grapheme cluster (CR LF, the one pair,
    /// is white space and folds anyway). Text that is already folded and short enough is left as it is.
    private static func foldASCII(_ bytes: UnsafeBufferPointer<UInt8>, limit: Int) -> ASCIIFolding {
        var clean = bytes.count <= limit
        var spaceBefore = true
        for byte in bytes {
            guard byte < 0x80 else { return .notASCII }
            let isSpace = byte == 0x20 || (0x09...0x0D).contains(byte)
            if isSpace, byte != 0x20 || spaceBefore { clean = false }
            spaceBefore = isSpace
        }
        if clean, !spaceBefore || bytes.isEmpty { return .unchanged }
        var cut = false
        let folded = String(unsafeUninitializedCapacity: min(bytes.count, limit)) { buffer in
            var count = 0
            var spaceBefore = false
            for byte in bytes {
                if byte == 0x20 || (0x09...0x0D).contains(byte) {
                    spaceBefore = count > 0
                    continue
                }
                if count + (spaceBefore ? 1 : 0) >= limit {
                    cut = true
                    break
                }
                if spaceBefore {
                    buffer[count] = 0x20
                    count += 1
                    spaceBefore = false
                }
                buffer[count] = byte
                count += 1
            }
            return count
        }
        return .folded(folded, cut: cut)
    }
}

extension Character {
    /// White space, with a fast answer for ASCII.
    fileprivate var isFoldableSpace: Bool {
        if let ascii = asciiValue {
            return ascii == 0x20 || (0x09...0x0D).contains(ascii)
        }
        return isWhitespace
    }
}
