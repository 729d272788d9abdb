import HeraldCore

/// Where the connection stands.
public enum ConnectionState: Hashable, Sendable {
    /// Opening the first connection.
    case connecting
    /// Caught up and receiving live messages.
    case live
    /// The connection was lost; the next attempt comes after `delay`.
    case reconnecting(attempt: Int, delay: Duration)
}

/// Something the client tells the app.
public enum ClientEvent: Hashable, Sendable {
    /// The connection changed state.
    case state(ConnectionState)
    /// A new message in one of the user's conversations; never delivered twice.
    case message(IncomingMessage)
    /// A message the app sent is stored, with this sequence number.
    case acknowledged(id: String, seq: Int64)
    /// A message the app sent was refused for good (`code` is the server's error code); it is not retried.
    case refused(id: String, code: String, message: String)
}
