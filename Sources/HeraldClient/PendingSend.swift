import HeraldProtocol

/// A message waiting for its `ack`.
struct PendingSend: Hashable, Sendable {
    var id: String
    var conversationID: String
    var text: String
    /// The members it mentions.
    var mentions: [String] = []
    /// Whether it mentions everyone.
    var mentionsAll = false
    /// Not to be sent again before this (the server rate-limited it).
    var notBefore: ContinuousClock.Instant?

    /// The `send` frame that posts it.
    var frame: ClientFrame {
        .send(conversationID: conversationID, id: id, text: text, imageURL: nil, mentions: mentions, mentionsAll: mentionsAll)
    }
}
