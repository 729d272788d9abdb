import Foundation
import HeraldCore

/// Posting and reading messages with the rules that hold for every way in (HTTP and the stream): only members,
/// known conversations, usable ids, limits on text and on how fast one user posts, idempotent ids, and fan-out
/// to the live connections in sequence order.
struct Messenger: Sendable {
    let store: any Store
    let hub: Hub
    let push: PushDispatcher
    let limits: ServerLimits
    let userLimits: UserLimits
    let memberships: Memberships

    /// The conversation `id` and its members, if `identity` is one of them; from memory after the first time.
    ///
    /// - Throws: ``APIError`` `conversation_not_found` or `not_a_member`.
    func conversation(_ id: String, for identity: Identity) async throws -> Membership {
        let membership = try await memberships.membership(of: id) {
            try await store.conversation(id: id).map { Membership(conversation: $0.conversation, memberIDs: $0.memberIDs) }
        }
        guard let membership else { throw APIError.conversationNotFound }
        guard membership.memberIDs.contains(identity.userID) else { throw APIError.notAMember }
        return membership
    }

    /// Stores a message from `identity` and sends it to the members' connections.
    ///
    /// The same `clientID` from the same sender in the same conversation returns the stored message again.
    ///
    /// - Throws: ``APIError``: `invalid_request` (an unusable id, U+0000 in the text, no content, a bad image
    ///   URL), `text_too_long`, `rate_limited`, `conversation_not_found`, `not_a_member`, `id_conflict`.
    func post(
        to conversationID: String,
        clientID: String?,
        text: String?,
        imageURL: String?,
        by identity: Identity
    ) async throws -> PostOutcome {
        let conversationID = try Input.id(conversationID, field: "conversation")
        if let clientID { _ = try Input.id(clientID, field: "id") }
        try Input.text(text, field: "text")
        if let text, text.utf8.count > limits.maxTextBytes || text.count > limits.maxTextLength {
            throw APIError.textTooLong(limit: limits.maxTextLength, bytes: limits.maxTextBytes)
        }
        var image: URL?
        if let imageURL {
            guard let url = Input.webURL(imageURL) else {
                throw APIError.invalidRequest("`imageURL` must be an http or https URL of at most \(Input.maxURLBytes) bytes")
            }
            image = url
        }
        guard !(text ?? "").allSatisfy(\.isWhitespace) || image != nil else {
            throw APIError.invalidRequest("a message needs `text` or an `imageURL`")
        }
        let record = try await conversation(conversationID, for: identity)
        try userLimits.post(by: identity.userID)
        let draft = MessageDraft(
            id: clientID ?? UUID().uuidString.lowercased(),
            conversation: record.conversation,
            sender: identity.person,
            text: text,
            imageURL: image
        )
        let hub = hub
        let push = push
        let members = record.memberIDs
        let arrived = DispatchTime.now()
        return try await store.post(draft) { stored in
            hub.publish(stored, to: members)
            HeraldMetrics.messagesPosted.increment()
            HeraldMetrics.postToPublish.recordInterval(since: arrived)
            push.messageStored(stored, members: members)
        }
    }
}
