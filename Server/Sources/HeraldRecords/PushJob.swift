import Foundation
import HeraldCore

/// What one push says: the words of ``ContentFormatter`` and the data an app needs to open the right chat.
///
/// An alert is about one message; a clear ("read elsewhere") carries no words, only the conversation whose
/// notifications should go away, how far it was read, and the badge now.
public struct PushContent: Codable, Hashable, Sendable {
    /// The conversation, which is also the notification's thread.
    public var conversationID: String
    /// The message (alerts only); also the collapse key, so a push sent twice shows once.
    public var messageID: String?
    /// The message's `seq`, or for a clear the read marker.
    public var seq: Int64
    /// Who sent the message (alerts only).
    public var senderID: String?
    /// `New message from <sender>` or `New message in <group>` (alerts only).
    public var title: String?
    /// The preview (alerts only).
    public var body: String?
    /// The member's unread messages over all their conversations.
    public var badge: Int
    /// Whether it arrives without sound or vibration: the member's quiet hours (APNs `passive`, FCM low priority,
    /// Web Push `silent`). Alerts only.
    public var quiet: Bool = false
    /// Whether the message mentions the member told (by name, `@all`, a direct chat). Alerts only.
    public var mentioned: Bool = false
    /// Whether it may break through Focus (APNs and Expo `time-sensitive`): a group message that names the member,
    /// when the operator allows it (``PushSettings/timeSensitiveMentions``). Alerts only, never in quiet hours.
    public var timeSensitive: Bool = false
    /// The sender's name as Herald shows it, for a chat-style notification (alerts of a person's message only).
    public var senderName: String?
    /// The sender's picture, for a chat-style notification: left out when its address is longer than
    /// ``maxPictureBytes`` (the app can still find it by the sender's id).
    public var senderAvatarURL: String?
    /// The group's title (alerts of a group's entries only).
    public var conversationTitle: String?
    /// Whether the conversation is a group. Alerts only.
    public var isGroup: Bool = false
    /// The title and body as keys of the app's own strings (``ContentFormatter/localization(for:viewer:)``), their
    /// arguments clipped like the names. Alerts only.
    public var localization: NotificationLocalization?
    /// What the push services were not told (``PushContentMode``): the app fetches it with its device key
    /// (`GET /v1/push/conversations/{id}/messages/{id}`). ``PushContentMode/full`` for an alert that says it all.
    public var withheld: PushContentMode = .full
    /// Inside a burst (``NotificationBursts``): the identifier of the burst's first alert, which this one replaces
    /// (its collapse id and tag); nil for a burst's first.
    public var replaces: String?
    /// Inside a burst: its messages so far, this one included; nil for a burst's first.
    public var count: Int?
    /// Set on a follow-up (``PushJob/Kind/follow``): the message ``messageID`` was edited (these are its new words,
    /// shown under ``replaces`` in place of the old, silently) or deleted (its notification ``replaces`` goes).
    public var follows: PushFollow?
    /// Set on a test notification (`POST /v1/devices/{id}/test`): its data's `type` is `test`, and it is about no
    /// conversation.
    public var test: Bool?
    /// The words of ``count`` (`3 new messages`): APNs' and Expo's subtitle, the service worker's first line.
    public var summary: String? {
        count.map { ContentFormatter.standard.summary(ofBurst: $0) }
    }

    /// The category of every alert: what the app registers its Reply and Mark as read actions under (APNs
    /// `category`, Expo `categoryId`, the `category` of the data an Android app or a service worker reads).
    public static let category = "HERALD_MESSAGE"

    /// An alert for `incoming`, in ``ContentFormatter``'s words as `viewer` (the member told) reads them, each at most
    /// ``maxWordsBytes`` in JSON.
    ///
    /// `mode` is what the push services may read: with ``PushContentMode/sender`` the words are those of a message
    /// without text or picture (`New message from Ann`, `Ann: New message`); with ``PushContentMode/none`` they are
    /// the formatter's `New message` alone, and only the ids, the badge and the category go with them.
    public init(
        alert incoming: IncomingMessage, badge: Int, viewer: String? = nil, quiet: Bool = false,
        formatter: ContentFormatter = ContentFormatter(), mode: PushContentMode = .full
    ) {
        var incoming = incoming
        withheld = mode
        if mode == .sender || mode == .none, incoming.message.event == nil {
            incoming.message.text = nil
            incoming.message.imageURL = nil
        }
        let notification = formatter.notification(for: incoming, viewer: viewer)
        conversationID = incoming.conversation.id
        messageID = incoming.message.id
        seq = incoming.message.seq ?? 0
        senderID = incoming.message.senderID
        title = Self.clipped(notification.title, toJSONBytes: Self.maxWordsBytes)
        body = Self.clipped(notification.body, toJSONBytes: Self.maxWordsBytes)
        self.badge = badge
        self.quiet = quiet
        mentioned = viewer.map { incoming.message.isMention(of: $0, in: incoming.conversation.kind) } ?? false
        isGroup = incoming.conversation.kind == .group
        if isGroup {
            conversationTitle = Self.clipped(formatter.groupTitle(of: incoming.conversation), toJSONBytes: Self.maxNameBytes)
        }
        if incoming.message.event == nil, !incoming.message.isSystem {
            senderName = Self.clipped(formatter.name(of: incoming.sender), toJSONBytes: Self.maxNameBytes)
            if let picture = incoming.sender.avatarURL?.absoluteString, Self.jsonBytes(of: picture) <= Self.maxPictureBytes {
                senderAvatarURL = picture
            }
        }
        var localization = formatter.localization(for: incoming, viewer: viewer)
        func clip(_ words: LocalizedWords?) -> LocalizedWords? {
            words.map { LocalizedWords(key: $0.key, arguments: $0.arguments.map { Self.clipped($0, toJSONBytes: Self.maxNameBytes) }) }
        }
        localization.title = clip(localization.title)
        localization.body = clip(localization.body)
        self.localization = localization.title == nil && localization.body == nil ? nil : localization
        if mode == .none { withholdAll(formatter: formatter) }
    }

    /// Who wrote, where, and to whom: none of it (``PushContentMode/none``). The words are the generic ones every
    /// alert shares; an edit's follow-up says `New message` too, a deletion's and a clear's keep saying nothing.
    /// Whether it is a group's and names the member stay known to the server (for its rank, ``isGroup``), not in
    /// its ``data``.
    package mutating func withholdAll(formatter: ContentFormatter = .standard) {
        if messageID != nil, follows != .deleted {
            title = nil
            body = formatter.emptyPlaceholder
            localization = NotificationLocalization(body: LocalizedWords(key: "HERALD_NEW_MESSAGE"))
        }
        withheld = .none
        senderID = nil
        senderName = nil
        senderAvatarURL = nil
        conversationTitle = nil
    }

    /// The most bytes a title or a body takes in a push's JSON. A preview is 50 characters, but a character may be
    /// many code points and a control character six bytes escaped; with these, the names and keys' arguments
    /// (``maxNameBytes``), the picture (``maxPictureBytes``) and ids of at most 128 bytes, every provider's payload
    /// stays within the services' 4 KB, so no message's push is dropped for its size.
    public static let maxWordsBytes = 400
    /// The most bytes a name, a group's title or a key's argument takes in a push's JSON.
    public static let maxNameBytes = 160
    /// The longest picture address a push carries, in bytes of JSON.
    public static let maxPictureBytes = 300

    /// `text`, or as many of its first characters as fit in `budget` bytes of JSON followed by `...`.
    package static func clipped(_ text: String, toJSONBytes budget: Int) -> String {
        func cost(_ character: Character) -> Int { jsonBytes(of: character) }
        var used = 0
        for index in text.indices {
            used += cost(text[index])
            guard used > budget else { continue }
            var kept = ""
            var keptCost = 0
            for character in text[..<index] {
                keptCost += cost(character)
                guard keptCost <= budget - 3 else { break }
                kept.append(character)
            }
            return kept + "..."
        }
        return text
    }

    /// The bytes `text` takes in JSON at most: six for an escaped control character, two for `"`, `\\` and `/`.
    package static func jsonBytes(of text: some StringProtocol) -> Int {
        text.unicodeScalars.reduce(0) { total, scalar in
            switch scalar.value {
            case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029: total + 6  // escaped as \uXXXX
            case 0x22, 0x5C, 0x2F: total + 2  // \" \\ \/
            default: total + String(scalar).utf8.count
            }
        }
    }

    /// ``jsonBytes(of:)`` of one character.
    package static func jsonBytes(of character: Character) -> Int {
        jsonBytes(of: String(character))
    }

    /// A test notification (`POST /v1/devices/{id}/test`), with the member's `badge` as it is.
    public static func test(badge: Int) -> PushContent {
        var content = PushContent(clear: "", readUpTo: 0, badge: badge)
        content.title = "Herald"
        content.body = "Test notification: notifications reach this device."
        content.test = true
        return content
    }

    /// A clear: `conversationID` was read up to `readUpTo` on another device.
    public init(clear conversationID: String, readUpTo: Int64, badge: Int) {
        self.conversationID = conversationID
        seq = readUpTo
        self.badge = badge
    }

    /// The identifier the device's own notification of the message has (``LocalNotification/identifier``): what
    /// the push is shown under on every platform that lets it be set (alerts of stored messages only).
    /// Inside a burst, the burst's first alert's (``replaces``), so this one takes its place.
    public var notificationID: String? {
        guard let messageID, seq > 0 else { return nil }
        return replaces ?? LocalNotification.identifier(seq: seq, conversationID: conversationID, messageID: messageID)
    }

    /// The localisation keys and their arguments under a service's field names (APNs `title-loc-key`, FCM
    /// `title_loc_key`, …), for the fields of the alert it sends.
    package func localizationFields(
        titleKey: String, titleArguments: String, bodyKey: String, bodyArguments: String
    ) -> [String: Any] {
        var fields: [String: Any] = [:]
        if let title = localization?.title {
            fields[titleKey] = title.key
            fields[titleArguments] = title.arguments
        }
        if let body = localization?.body {
            fields[bodyKey] = body.key
            fields[bodyArguments] = body.arguments
        }
        return fields
    }

    /// The data an app receives with the push, as strings (FCM's `data` takes strings only).
    public var data: [String: String] {
        var data = ["conversationId": conversationID, "seq": String(seq)]
        if let messageID {
            data["type"] = "message"
            data["messageId"] = messageID
            data["notificationId"] = notificationID
        } else {
            data["type"] = "read"
        }
        if let senderID { data["senderId"] = senderID }
        if mentioned { data["mentioned"] = "true" }
        if quiet { data["quiet"] = "true" }
        if messageID != nil {
            data["category"] = Self.category
            data["isGroup"] = isGroup ? "true" : "false"
        }
        if let senderName { data["senderName"] = senderName }
        if let senderAvatarURL { data["senderAvatarURL"] = senderAvatarURL }
        if let conversationTitle { data["conversationTitle"] = conversationTitle }
        if messageID != nil, withheld == .sender || withheld == .none { data["withheld"] = withheld.rawValue }
        if let count { data["count"] = String(count) }
        if withheld == .none {
            // Ids only: not even whether it is a group, or names the member.
            data["isGroup"] = nil
            data["mentioned"] = nil
        }
        if test == true {
            // A test: nothing to open, nothing to answer.
            return ["type": "test"]
        }
        if let follows {
            // A follow-up: which notification to change, and how.
            data["type"] = follows.rawValue
            if follows == .deleted {
                for key in ["category", "isGroup", "senderName", "senderAvatarURL", "conversationTitle", "count", "senderId"] {
                    data[key] = nil
                }
            }
        }
        return data
    }

    /// A follow-up of the alert `shownAs` (the identifier a device shows it under) for the message `messageID` at
    /// `seq`: `edited` into `words` (an alert's content for the edited message), or `deleted`.
    package static func followUp(
        _ follows: PushFollow, of conversationID: String, messageID: String, seq: Int64, shownAs: String, badge: Int,
        words: PushContent? = nil
    ) -> PushContent {
        var content = words ?? PushContent(clear: conversationID, readUpTo: seq, badge: badge)
        content.messageID = messageID
        content.seq = seq
        content.badge = badge
        content.replaces = shownAs
        content.follows = follows
        // Never a sound: an edit replaces what is shown, it is not news.
        content.quiet = true
        content.timeSensitive = false
        if follows == .deleted {
            content.title = nil
            content.body = nil
            content.localization = nil
            content.count = nil
        }
        return content
    }

    /// What an alert in flight when its message was deleted is left holding in the outbox, as JSON: no words, only
    /// that its message is gone. Should it be leased again (its send failed, or the server stopped meanwhile), it is
    /// dropped rather than sent.
    package static func deletedInFlight(_ conversationID: String, messageID: String, seq: Int64) -> String {
        let content = followUp(.deleted, of: conversationID, messageID: messageID, seq: seq, shownAs: "", badge: 0)
        return (try? JSONEncoder().encode(content)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Whether it is an alert's content whose message was deleted while it was in flight (``deletedInFlight(_:messageID:seq:)``).
    package var isDeletedInFlight: Bool { follows == .deleted && replaces == "" }

    /// A queued job's content as the outbox keeps it (JSON), with the words of `incoming` (its message edited) as
    /// `viewer` reads them; nil when it cannot be read, or is a deletion's follow-up (which has no words).
    package static func rewritten(_ stored: String, to incoming: IncomingMessage, viewer: String) -> String? {
        guard let content = try? JSONDecoder().decode(PushContent.self, from: Data(stored.utf8)), content.follows != .deleted,
              let encoded = try? JSONEncoder().encode(content.edited(to: incoming, viewer: viewer))
        else { return nil }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// This alert's content with the words of `incoming` (its message edited), as `viewer` reads them; its badge,
    /// quiet hours, burst and mode kept.
    package func edited(to incoming: IncomingMessage, viewer: String) -> PushContent {
        var next = PushContent(alert: incoming, badge: badge, viewer: viewer, quiet: quiet, mode: withheld)
        next.timeSensitive = timeSensitive
        next.replaces = replaces
        next.count = count
        next.follows = follows
        if follows != nil { next.quiet = true }
        return next
    }

    private enum CodingKeys: String, CodingKey {
        case conversationID, messageID, seq, senderID, title, body, badge, quiet, mentioned, senderName, senderAvatarURL,
             conversationTitle, isGroup, localization, timeSensitive, withheld, replaces, count, follows
    }

    /// Decodes a queued push; one queued before quiet hours, mentions and chat-style fields existed has none of them.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        conversationID = try container.decode(String.self, forKey: .conversationID)
        messageID = try container.decodeIfPresent(String.self, forKey: .messageID)
        seq = try container.decode(Int64.self, forKey: .seq)
        senderID = try container.decodeIfPresent(String.self, forKey: .senderID)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        body = try container.decodeIfPresent(String.self, forKey: .body)
        badge = try container.decode(Int.self, forKey: .badge)
        quiet = try container.decodeIfPresent(Bool.self, forKey: .quiet) ?? false
        mentioned = try container.decodeIfPresent(Bool.self, forKey: .mentioned) ?? false
        senderName = try container.decodeIfPresent(String.self, forKey: .senderName)
        senderAvatarURL = try container.decodeIfPresent(String.self, forKey: .senderAvatarURL)
        conversationTitle = try container.decodeIfPresent(String.self, forKey: .conversationTitle)
        isGroup = try container.decodeIfPresent(Bool.self, forKey: .isGroup) ?? false
        localization = try container.decodeIfPresent(NotificationLocalization.self, forKey: .localization)
        timeSensitive = try container.decodeIfPresent(Bool.self, forKey: .timeSensitive) ?? false
        withheld = try container.decodeIfPresent(PushContentMode.self, forKey: .withheld) ?? .full
        replaces = try container.decodeIfPresent(String.self, forKey: .replaces)
        count = try container.decodeIfPresent(Int.self, forKey: .count)
        follows = try container.decodeIfPresent(PushFollow.self, forKey: .follows)
    }
}

/// What a follow-up push (``PushJob/Kind/follow``) tells a device of a message it was pushed.
public enum PushFollow: String, Codable, Hashable, Sendable {
    /// The message was edited: its notification shows the new words (APNs: a passive alert under the same collapse
    /// id; FCM, Expo and Web Push: the same tag), if it is still shown.
    case edited = "message_edited"
    /// The message was deleted: its notification is removed (a background push the app acts on; the service
    /// worker closes it).
    case deleted = "message_deleted"
}

/// What an alert tells the push services (`HERALD_PUSH_CONTENT`; docs/push.md, "Private pushes"): Apple, Google and
/// Expo read every push they carry, so an operator may keep the text, or even who wrote it, off them. The app's
/// Notification Service Extension (or Android service) then fetches the words with the device key its registration
/// returned. Web Push is encrypted to the browser (RFC 8291), so its pushes say everything in every mode.
public enum PushContentMode: String, Codable, Hashable, Sendable, CaseIterable {
    /// Everything: the words, the sender's name and picture, the group's title.
    case full
    /// Who wrote and where, not what: `New message from Ann`, or in a group `Ann: New message`.
    case sender
    /// Nothing but the ids, the badge and a generic `New message`.
    case none
    /// Everything, encrypted to the device (RFC 8291, with the keys it registered): the push services read the ids,
    /// the badge and `New message`, as with ``none``; the device decrypts the rest. A device without keys is sent
    /// what ``none`` sends.
    case encrypted
}

/// One job of the push outbox: one push to one device.
public struct PushJob: Hashable, Sendable {
    /// What the job does.
    public enum Kind: String, Hashable, Sendable {
        /// Tell the member about a message.
        case alert
        /// Clear a conversation's notifications read on another device, and set the badge (a silent push).
        case clear
        /// Ask the push service what became of an earlier push (Expo's receipts).
        case receipt
        /// Change what a device shows of a message it was pushed: edited or deleted (``PushContent/follows``).
        case follow
    }

    /// The outbox row.
    public var id: Int64
    /// What it does.
    public var kind: Kind
    /// Where it goes.
    public var device: DeviceRegistration
    /// What it says.
    public var content: PushContent
    /// The push service's ticket, for a ``Kind/receipt`` job.
    public var ticket: String?
    /// When it was queued; it is dropped once older than the maximum age.
    public var createdAt: Date
    /// How many times it was tried before.
    public var attempts: Int
    /// Set when the alert waited for a confirmation that did not come (rule 8): what would have covered it.
    public var coveredBy: PushCover?

    /// Whether the push shows words: an alert, or the follow-up of an edit (which replaces an alert's words).
    /// Anything else is a background push: a clear, a deletion's follow-up.
    public var showsAlert: Bool {
        kind == .alert || (kind == .follow && content.follows == .edited)
    }

    /// Creates a job.
    public init(
        id: Int64, kind: Kind, device: DeviceRegistration, content: PushContent, ticket: String? = nil,
        createdAt: Date, attempts: Int, coveredBy: PushCover? = nil
    ) {
        self.id = id
        self.kind = kind
        self.device = device
        self.content = content
        self.ticket = ticket
        self.createdAt = createdAt
        self.attempts = attempts
        self.coveredBy = coveredBy
    }
}

/// Whose confirmation holds back an alert (docs/behaviour.md, rule 8): it waits out the grace period, and goes only
/// if no such confirmation reached its message by then.
public enum PushCover: String, Hashable, Sendable {
    /// Any of the member's devices: they had one in the foreground, whose banner (or any device's notification)
    /// tells them.
    case member
    /// The job's own device, which was connected in the background and notifies by itself.
    case device
}

/// How far one device confirmed taking messages in: every message of its user's conversations up to `through`
/// reached its notification engine (the stream's `received` frame).
public struct PushConfirmation: Hashable, Sendable {
    /// The device's user.
    public var userID: String
    /// The device (the stream's `device`), or empty for a stream that did not say.
    public var device: String
    /// The seq confirmed through.
    public var through: Int64

    /// A receipt.
    public init(userID: String, device: String, through: Int64) {
        self.userID = userID
        self.device = device
        self.through = through
    }
}

/// A job to queue.
public struct NewPushJob: Hashable, Sendable {
    /// What it does.
    public var kind: PushJob.Kind
    /// The device's owner.
    public var userID: String
    /// The device.
    public var deviceID: String
    /// What it says.
    public var content: PushContent
    /// The push service's ticket, for a receipt job.
    public var ticket: String?
    /// When to send it.
    public var due: Date
    /// Whose confirmation of its message holds it back (an alert only); nil: it goes when due.
    public var coveredBy: PushCover?

    /// Creates a job to queue.
    public init(
        kind: PushJob.Kind, userID: String, deviceID: String, content: PushContent, ticket: String? = nil, due: Date,
        coveredBy: PushCover? = nil
    ) {
        self.kind = kind
        self.userID = userID
        self.deviceID = deviceID
        self.content = content
        self.ticket = ticket
        self.due = due
        self.coveredBy = coveredBy
    }

    /// What makes a job unique: the message (by its `seq`: its id is its conversation's) for an alert and a
    /// follow-up (a newer follow-up replaces a waiting one), the
    /// conversation for a clear (a newer clear replaces a waiting one), the ticket for a receipt.
    package var key: String {
        switch kind {
        case .alert, .follow: String(content.seq)
        case .clear: content.conversationID
        case .receipt: ticket ?? ""
        }
    }
}

/// A device that may get a push for a message, with its owner's badge.
public struct PushTarget: Hashable, Sendable {
    /// The device.
    public var device: DeviceRegistration
    /// Its owner's unread messages over all their conversations.
    public var badge: Int
    /// Its owner's own level for the conversation, nil when they follow their default.
    public var level: LevelChoice? = nil
    /// Its owner's settings: default level, snooze, quiet hours.
    public var settings = NotificationSettings()
    /// How far its owner has read the conversation: a burst of pushes ends when it moves (``NotificationBursts``).
    public var readMarker: Int64 = 0

    /// One of these, member by member.
    package init(
        device: DeviceRegistration, badge: Int, level: LevelChoice? = nil, settings: NotificationSettings = NotificationSettings(),
        readMarker: Int64 = 0
    ) {
        self.device = device
        self.badge = badge
        self.level = level
        self.settings = settings
        self.readMarker = readMarker
    }
}

/// A device by owner and id.
package struct DeviceKey: Hashable, Sendable {
    package var userID: String
    package var id: String

    /// The device `id` of `userID`.
    package init(userID: String, id: String) {
        self.userID = userID
        self.id = id
    }
}
