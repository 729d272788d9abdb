/// What a person does to the visible banner.
public enum BannerGesture: Hashable, Sendable {
    /// A tap: dismiss, and open a message banner's conversation.
    case tap
    /// The close button.
    case close
    /// A vertical drag that ended `dy` points from where it began; negative is up.
    case swipe(dy: Double)
    /// A finger went down on the banner: its timer pauses.
    case touchDown
    /// The finger lifted: its timer resumes with the time that was left.
    case touchUp
}

/// An input to the ``BannerQueue``.
public enum BannerInput: Hashable, Sendable {
    /// A new banner: shown now if nothing is on screen, else queued.
    case enqueue(Banner)
    /// A gesture on the visible banner.
    case gesture(BannerGesture)
    /// A conversation was opened: its banner goes, and its waiting banners are dropped.
    case conversationOpened(String)
    /// The user is no longer in a conversation: its banner goes, and its waiting banners are dropped (reason
    /// `removed`).
    case conversationLeft(String)
    /// Dismiss the visible banner (reason `programmatic`).
    case dismiss
    /// Dismiss the visible banner and drop every waiting one (reason `programmatic`).
    case dismissAll
    /// The message `messageID` of `conversationID` was edited: a banner showing it (visible or waiting) shows
    /// `body` instead, keeping its place and its time.
    case messageEdited(conversationID: String, messageID: String, body: String)
    /// The message `messageID` of `conversationID` was deleted: a banner showing it goes (reason `deleted`).
    case messageDeleted(conversationID: String, messageID: String)
}
