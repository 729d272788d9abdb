import Foundation

/// One in-app banner: about a message, or a general-purpose one ("Saved", "Upload failed").
public struct Banner: Hashable, Sendable, Identifiable {
    /// A message banner's id is its first message's id; a general banner's is chosen by whoever shows it.
    public var id: String
    /// The conversation a message banner opens on tap; nil for general banners.
    public var conversationID: String?
    /// Bold first line: the sender's name, or a general banner's message.
    public var title: String
    /// `in <group title>` for group messages; nil otherwise.
    public var subtitle: String?
    /// Second line: the message preview; nil for general banners.
    public var body: String?
    /// The sender's picture, if any.
    public var avatarURL: URL?
    /// How many messages this banner stands for (more than 1 only when coalescing).
    public var count: Int
    /// Its colour scheme; `.message` for message banners.
    public var tone: BannerTone
    /// A symbol name to show (general banners).
    public var icon: String?
    /// How long it stays; nil means the queue's ``BannerConfig/duration``.
    public var duration: Duration?
    /// The sender's user id, for the colour behind their initials; nil for general banners.
    public var senderID: String?
    /// The message whose words it shows (the latest, for one that took in others); nil for a general banner.
    /// An edit of that message changes its body, a deletion takes it away.
    public var messageID: String?
    /// Whether it tells of a message that names the user (or `@all`): it goes ahead of waiting banners that do not.
    public var mention: Bool

    /// Creates a banner. Prefer ``ContentFormatter/banner(for:)`` and ``Banner/general(id:message:tone:icon:duration:)``.
    public init(
        id: String,
        conversationID: String?,
        title: String,
        subtitle: String? = nil,
        body: String? = nil,
        avatarURL: URL? = nil,
        count: Int = 1,
        tone: BannerTone,
        icon: String? = nil,
        duration: Duration? = nil,
        senderID: String? = nil,
        mention: Bool = false
    ) {
        self.id = id
        self.conversationID = conversationID
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.avatarURL = avatarURL
        self.count = count
        self.tone = tone
        self.icon = icon
        self.duration = duration
        self.senderID = senderID
        self.mention = mention
    }

    /// The sender's initials, shown when there is no avatar (``ContentFormatter/initials(of:)`` of the title);
    /// nil for general banners.
    public var initials: String? {
        tone == .message ? ContentFormatter.initials(ofFolded: title) : nil
    }

    /// A general-purpose banner, queued with message banners. Its duration defaults to 5 s.
    public static func general(
        id: String,
        message: String,
        tone: BannerTone = .primary,
        icon: String? = nil,
        duration: Duration = .seconds(5)
    ) -> Banner {
        Banner(id: id, conversationID: nil, title: message, tone: tone, icon: icon, duration: duration)
    }
}

/// A banner's colour scheme.
public enum BannerTone: String, Codable, Hashable, Sendable, CaseIterable {
    /// A chat message.
    case message
    /// Information (blue).
    case primary
    /// Something worked (green).
    case success
    /// Something needs attention (yellow).
    case warning
    /// Something failed (red).
    case danger
    /// Plain (grey).
    case neutral
}

/// Why a visible banner went away.
public enum DismissReason: String, Codable, Hashable, Sendable, CaseIterable {
    /// Its time ran out.
    case timeout
    /// It was tapped (and, for a message banner, its conversation opened).
    case tap
    /// It was swiped up far enough.
    case swipe
    /// Its close button was pressed.
    case close
    /// Its conversation was opened some other way.
    case opened
    /// The app dismissed it.
    case programmatic
    /// The user is no longer in its conversation (removed, left, or the group deleted).
    case removed
    /// The message it shows was deleted by its sender (or a group's owner).
    case deleted
}

/// Why a waiting banner will never show.
public enum DropReason: String, Codable, Hashable, Sendable, CaseIterable {
    /// The queue was full and a newer banner pushed it out.
    case capacity
    /// Its conversation was opened.
    case opened
    /// The app dismissed everything.
    case programmatic
    /// The user is no longer in its conversation (removed, left, or the group deleted).
    case removed
    /// The message it shows was deleted by its sender (or a group's owner).
    case deleted
}
