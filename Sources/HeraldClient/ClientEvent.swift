import HeraldCore

/// Where the connection stands.
public enum ConnectionState: Hashable, Sendable {
    /// Opening the first connection.
    case connecting
    /// Caught up and receiving live messages.
    case live
    /// The connection was lost, or could not be made; the next attempt comes after `delay`. `reason` says what
    /// went wrong, for people ("cannot reach http://…: connection refused", "connection lost").
    case reconnecting(attempt: Int, delay: Duration, reason: String)
    /// Closed by the app (``HeraldClient/pause()``: ``LiveNotifications`` does it when the app goes to the
    /// background) until ``HeraldClient/resume()``; the server's pushes tell the user meanwhile.
    case paused
    /// The server refused the token (`code` is `invalid_token`, `token_expired` or `missing_token`). Trying again
    /// with it cannot help: ``HeraldClient/run()`` returns, and the app signs the user in again with a new token.
    case refused(code: String, message: String)
}

/// Something the client tells the app.
public enum ClientEvent: Hashable, Sendable {
    /// The connection changed state.
    case state(ConnectionState)
    /// A new message in one of the user's conversations; never delivered twice. An event among them may change an
    /// earlier message (``ConversationEvent/isAmendment``: `message_edited` carries the new text, `message_deleted`
    /// makes it a tombstone): apply it to the message it names with ``Message/amended(by:)``, and show no line for it.
    case message(IncomingMessage)
    /// A message the app sent is stored, with this sequence number.
    case acknowledged(id: String, seq: Int64)
    /// A message the app sent was refused for good (`code` is the server's error code); it is not retried.
    /// (`rate_limited` is not final: the send waits as long as the server says and goes again.)
    case refused(id: String, code: String, message: String)
    /// The user muted or unmuted a conversation, on this device or another (a ``level(conversationID:_:)`` comes
    /// with it).
    case muted(conversationID: String, muted: Bool)
    /// The user chose a conversation's level, on this device or another; nil: it follows their default level.
    case level(conversationID: String, LevelChoice?)
    /// The user's notification settings changed, on this device or another.
    case notificationSettings(NotificationSettings)
    /// The server pushed this message to this device (its `deviceID`): the push is its notification, so the app
    /// posts none of its own (``LiveNotifications`` skips it). Comes once the push went out, or before the message
    /// in a catch-up.
    case pushed(conversationID: String, messageID: String, seq: Int64)
}
