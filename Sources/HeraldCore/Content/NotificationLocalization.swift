/// Words as a key of the app's own strings and what fills it in: an app that translates its notifications looks the
/// key up (`Localizable.strings` on iOS, `strings.xml` on Android) and puts the arguments in place of its `%@`s, in
/// order; one that does not shows the English words sent beside it.
public struct LocalizedWords: Codable, Hashable, Sendable {
    /// The key, one of ``NotificationLocalization/keys``.
    public var key: String
    /// The words that fill the key's format, in order: names, titles and previews, as the English words have them.
    public var arguments: [String]

    /// Creates localized words.
    public init(key: String, arguments: [String] = []) {
        self.key = key
        self.arguments = arguments
    }
}

/// The keys of a system notification's title and body (``ContentFormatter/localization(for:viewer:)``): nil where
/// the words are nobody's to translate: a message's own text in a direct chat, a group's title, a name.
public struct NotificationLocalization: Codable, Hashable, Sendable {
    /// The title's key: `New message from <sender>` or `New message in <group>`.
    public var title: LocalizedWords?
    /// The body's key: a group's `<sender>: <preview>`, a placeholder, or an event's line.
    public var body: LocalizedWords?

    /// Creates the keys of a notification.
    public init(title: LocalizedWords? = nil, body: LocalizedWords? = nil) {
        self.title = title
        self.body = body
    }

    /// Every key Herald sends, with its English format: what an app puts in its strings, translated (docs/push.md).
    /// Two of them are the formatter's placeholders, which an operator may change (``ContentFormatter/englishFormat(of:)``).
    public static let keys = [
        "HERALD_MESSAGE_FROM", "HERALD_MESSAGE_IN", "HERALD_GROUP_MESSAGE", "HERALD_IMAGE", "HERALD_NEW_MESSAGE",
        "HERALD_GROUP_IMAGE", "HERALD_GROUP_NEW_MESSAGE", "HERALD_ADDED_YOU", "HERALD_NEW_MESSAGES",
    ]
}

extension ContentFormatter {
    /// The English format of `key` with this formatter's words (`%@` is filled with the arguments in order), or nil
    /// for a key Herald does not send.
    public func englishFormat(of key: String) -> String? {
        switch key {
        case "HERALD_MESSAGE_FROM": "New message from %@"
        case "HERALD_MESSAGE_IN": "New message in %@"
        case "HERALD_GROUP_MESSAGE": "%@: %@"
        case "HERALD_IMAGE": imagePlaceholder
        case "HERALD_NEW_MESSAGE": emptyPlaceholder
        case "HERALD_GROUP_IMAGE": "%@: " + imagePlaceholder
        case "HERALD_GROUP_NEW_MESSAGE": "%@: " + emptyPlaceholder
        case "HERALD_ADDED_YOU": "%@ added you to %@"
        case "HERALD_NEW_MESSAGES": "%@ new messages"
        default: nil
        }
    }

    /// The keys of the system notification of `incoming` as `viewer` reads it (``notification(for:viewer:)``): the
    /// same words, as keys and arguments, so an app's own strings can translate a push. Filling each key's
    /// ``englishFormat(of:)`` with its arguments gives the notification's English title and body.
    ///
    /// Only what Herald wrote has a key: the title of a person's message (direct or group); the body of a group's
    /// message (`<sender>: <preview>`), of a message that has no text (the placeholders), and of the event that
    /// added the viewer (`<who> added you to <group>`). A direct chat's text, a group's title and the app's
    /// backend's name are shown as they are.
    public func localization(for incoming: IncomingMessage, viewer: String? = nil) -> NotificationLocalization {
        let message = incoming.message
        let conversation = incoming.conversation
        if let event = message.event {
            guard let viewer, event.kind == .memberAdded, event.concerns(viewer),
                  !incoming.sender.id.utf8.elementsEqual(viewer.utf8)
            else { return NotificationLocalization() }
            return NotificationLocalization(
                body: LocalizedWords(key: "HERALD_ADDED_YOU", arguments: [name(of: incoming.sender), groupTitle(of: conversation)]))
        }
        let placeholder: String? = switch (Self.foldWhitespace(message.text ?? "").text.isEmpty, message.imageURL != nil) {
        case (false, _): nil
        case (true, true): "IMAGE"
        case (true, false): "NEW_MESSAGE"
        }
        if message.isSystem {
            return NotificationLocalization(body: placeholder.map { LocalizedWords(key: "HERALD_" + $0) })
        }
        let sender = name(of: incoming.sender)
        switch conversation.kind {
        case .direct:
            return NotificationLocalization(
                title: LocalizedWords(key: "HERALD_MESSAGE_FROM", arguments: [sender]),
                body: placeholder.map { LocalizedWords(key: "HERALD_" + $0) })
        case .group:
            return NotificationLocalization(
                title: LocalizedWords(key: "HERALD_MESSAGE_IN", arguments: [groupTitle(of: conversation)]),
                body: placeholder.map { LocalizedWords(key: "HERALD_GROUP_" + $0, arguments: [sender]) }
                    ?? LocalizedWords(key: "HERALD_GROUP_MESSAGE", arguments: [sender, preview(of: message)]))
        }
    }
}
