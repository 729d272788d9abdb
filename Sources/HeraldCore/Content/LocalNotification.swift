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
    /// The message's `seq`, when the server stored it: what a Mark as read action moves the read marker to.
    public var seq: Int64?
    /// Who wrote the message (nil for an event, or the app's backend): whom a Reply answers.
    public var senderID: String?
    /// Inside a burst (``NotificationBursts``): the identifier of the burst's first notification, which this one
    /// replaces; nil for a burst's first.
    public var replaces: String?
    /// Inside a burst: its messages so far, this one included (``ContentFormatter/summary(ofBurst:)`` words it).
    public var count: Int?
    /// Set when it carries an edit of a notification posted before: the adapter replaces the one with its
    /// ``identifier`` only if that one is still delivered (in the notification centre), and posts nothing otherwise,
    /// always silently.
    public var onlyIfDelivered: Bool = false

    /// A name no other message's notification has, and the one its push carries on every platform (APNs'
    /// `apns-collapse-id`, which iOS makes the request's identifier; Android's tag; Web Push's `tag`): `herald-<seq>`,
    /// so a message both pushed and notified here shows once (docs/push.md, "Shown once"). A message without a seq
    /// (never stored) is named by its conversation and its id there, the conversation id's length in UTF-8 first so
    /// that no id can pass for another.
    /// Inside a burst, the burst's first notification's identifier (``replaces``), so this one takes its place.
    public var identifier: String {
        replaces ?? Self.identifier(seq: seq, conversationID: thread, messageID: messageID)
    }

    /// The identifier of the notification of message `messageID` of `conversationID`, stored at `seq`.
    public static func identifier(seq: Int64?, conversationID: String, messageID: String) -> String {
        seq.map { "herald-\($0)" } ?? "\(conversationID.utf8.count):\(conversationID)/\(messageID)"
    }

    /// Creates a notification.
    public init(
        messageID: String, title: String, body: String, thread: String, silent: Bool = false, seq: Int64? = nil,
        senderID: String? = nil
    ) {
        self.messageID = messageID
        self.title = title
        self.body = body
        self.thread = thread
        self.silent = silent
        self.seq = seq
        self.senderID = senderID
    }
}
