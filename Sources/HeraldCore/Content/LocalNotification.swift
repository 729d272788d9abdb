/// A system notification about a message: what the app posts when it is in the background, and what a push carries.
public struct LocalNotification: Codable, Hashable, Sendable {
    /// The message it is about; posting twice with the same id replaces rather than repeats.
    public var messageID: String
    /// `New message from <sender>` or `New message in <group>`.
    public var title: String
    /// The preview, prefixed with `<sender>: ` in groups.
    public var body: String
    /// The grouping id: the conversation id.
    public var thread: String
    /// Whether it is posted without sound or vibration (the user's quiet hours).
    public var silent: Bool

    /// A name no other message's notification has: its conversation and its id there (message ids are unique only
    /// within their conversation). The conversation id's length in UTF-8 comes first, so no id can pass for another.
    public var identifier: String {
        "\(thread.utf8.count):\(thread)/\(messageID)"
    }

    /// Creates a notification.
    public init(messageID: String, title: String, body: String, thread: String, silent: Bool = false) {
        self.messageID = messageID
        self.title = title
        self.body = body
        self.thread = thread
        self.silent = silent
    }
}
