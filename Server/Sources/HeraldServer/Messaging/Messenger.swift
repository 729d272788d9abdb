import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords

/// Posting and reading messages with the rules that hold for every way in (HTTP and the stream): only members,
/// known conversations, usable ids, limits on text and on how fast one user posts, idempotent ids. What is stored
/// reaches the live connections through the store's ``EventLog``, in sequence order; what a change to a group or a
/// read queued for the senders, they are woken for.
struct Messenger: Sendable {
    let store: any ConversationStore & EntryStore & ReadStateStore
    let push: PushDispatcher
    let webhooks: WebhookDispatcher
    let limits: ServerLimits
    let userLimits: UserLimits
    let memberships: Memberships

    /// The conversation `id` and who is in it, if `identity` is a member; from memory after the first time. A view
    /// in memory that says they are not is read again from the database before they are refused (they may have been
    /// added on another node a moment ago).
    ///
    /// - Throws: ``APIError`` `conversation_not_found` or `not_a_member`.
    func conversation(_ id: String, for identity: Identity) async throws -> MemberView {
        try await conversation(id, for: identity.userID)
    }

    /// The conversation `id` and who is in it, if `userID` is a member (see ``conversation(_:for:)-(_,Identity)``).
    func conversation(_ id: String, for userID: String) async throws -> MemberView {
        let load = { try await store.memberView(of: id) }
        guard var view = try await memberships.view(of: id, load: load) else { throw APIError.conversationNotFound }
        if !view.isMember(userID), let fresh = try await load() {
            view = memberships.remember(fresh)
        }
        guard view.deleted == nil else { throw APIError.conversationNotFound }
        guard view.isMember(userID) else { throw APIError.notAMember }
        return view
    }

    /// The conversation `id` and who is in it, for the app's backend: any conversation that exists.
    ///
    /// - Throws: ``APIError`` `conversation_not_found`.
    func conversation(_ id: String) async throws -> MemberView {
        guard let view = try await memberships.view(of: id, load: { try await store.memberView(of: id) }),
              view.deleted == nil
        else { throw APIError.conversationNotFound }
        return view
    }

    /// Stores a message from `identity` and sends it to the members' connections.
    ///
    /// The same `clientID` from the same sender in the same conversation returns the stored message again.
    ///
    /// - Throws: ``APIError``: `invalid_request` (an unusable id, U+0000 in the text, no content, a bad image
    ///   URL), `text_too_long`, `invalid_mentions`, `rate_limited`, `conversation_not_found`, `not_a_member`,
    ///   `id_conflict`.
    func post(
        to conversationID: String,
        clientID: String?,
        text: String?,
        imageURL: String?,
        mentions: Mentions = Mentions(),
        by identity: Identity
    ) async throws -> PostOutcome {
        try await post(
            to: conversationID, clientID: clientID, text: text, imageURL: imageURL, mentions: mentions,
            as: identity.person, silent: false)
    }

    /// Stores a message from `sender` (the app's backend when its id is empty: a system message, which needs no
    /// membership and no per-user allowance), `silent` or not, and sends it to the members' connections.
    func post(
        to conversationID: String,
        clientID: String?,
        text: String?,
        imageURL: String?,
        mentions: Mentions = Mentions(),
        as sender: Person,
        silent: Bool
    ) async throws -> PostOutcome {
        let input = try PostInput(conversationID: conversationID, clientID: clientID, text: text, imageURL: imageURL, messenger: self)
        let record = sender.id.isEmpty
            ? try await conversation(input.conversationID) : try await conversation(input.conversationID, for: sender.id)
        let draft = try self.draft(input, in: record, mentions: mentions, from: sender, silent: silent)
        let arrived = DispatchTime.now()
        // Answered once stored and handed on to the live connections (the sender's among them).
        let outcome = try await store.post(draft)
        HeraldMetrics.postToPublish.recordInterval(since: arrived)
        return outcome
    }

    /// Stores a message from `identity` as ``post(to:clientID:text:imageURL:mentions:by:)`` does, with no task: when
    /// the conversation is in memory and says they are a member, the post is queued for its group at once and
    /// `answer` is called with its outcome on the thread that handed it on (it must not wait). Returns false, having
    /// done nothing, when the conversation must be read first: then the `async` way does it.
    ///
    /// - Throws: what the `async` way throws before anything is stored.
    func postNow(
        to conversationID: String,
        clientID: String?,
        text: String?,
        imageURL: String?,
        mentions: Mentions = Mentions(),
        by identity: Identity,
        answer: @escaping @Sendable (Result<PostOutcome, any Error>) -> Void
    ) throws -> Bool {
        let input = try PostInput(conversationID: conversationID, clientID: clientID, text: text, imageURL: imageURL, messenger: self)
        guard let record = memberships.cached(input.conversationID), record.isMember(identity.userID) else { return false }
        guard record.deleted == nil else { throw APIError.conversationNotFound }
        let draft = try self.draft(input, in: record, mentions: mentions, from: identity.person, silent: false)
        let arrived = DispatchTime.now()
        store.post(draft) { outcome in
            HeraldMetrics.postToPublish.recordInterval(since: arrived)
            answer(outcome)
        }
        return true
    }

    /// A post's fields, checked: what needs nothing but the request.
    private struct PostInput {
        var conversationID: String
        var clientID: String?
        var text: String?
        var image: URL?

        init(conversationID: String, clientID: String?, text: String?, imageURL: String?, messenger: Messenger) throws {
            self.conversationID = try Input.id(conversationID, field: "conversation")
            if let clientID { _ = try Input.id(clientID, field: "id") }
            self.clientID = clientID
            try messenger.checkText(text)
            self.text = text
            if let imageURL {
                guard let url = Input.webURL(imageURL) else {
                    throw APIError.invalidRequest("`imageURL` must be an http or https URL of at most \(Input.maxURLBytes) bytes")
                }
                image = url
            }
            guard !(text ?? "").allSatisfy(\.isWhitespace) || image != nil else {
                throw APIError.invalidRequest("a message needs `text` or an `imageURL`")
            }
        }
    }

    /// The draft of a checked post in `record` (where `sender` may post), once `sender`'s allowance takes it.
    private func draft(
        _ input: PostInput, in record: MemberView, mentions: Mentions, from sender: Person, silent: Bool
    ) throws -> MessageDraft {
        if !sender.id.isEmpty { try userLimits.post(by: sender.id) }
        let mentioned = try mentions.checked(in: record)
        return MessageDraft(
            id: input.clientID ?? UUID().uuidString.lowercased(),
            conversation: record.conversation,
            sender: sender,
            text: input.text,
            imageURL: input.image,
            silent: silent,
            mentions: mentioned,
            mentionsAll: mentions.all
        )
    }

    /// Edits the text of `identity`'s message `messageID` in `conversationID` (within the edit window, at most the
    /// edit limit times): its entry goes to every member's devices, and pushes of it follow.
    ///
    /// - Throws: ``APIError``: `invalid_request` (an unusable id, U+0000, blank text), `text_too_long`,
    ///   `invalid_mentions`, `rate_limited`, `conversation_not_found`, `not_a_member`, `message_not_found`,
    ///   `not_the_sender`, `edit_window_passed`, `edit_limit`, `message_deleted`.
    func edit(
        _ messageID: String, in conversationID: String, text: String, mentions: Mentions = Mentions(), by identity: Identity
    ) async throws -> AmendOutcome {
        let (conversationID, messageID) = (try Input.id(conversationID, field: "conversation"), try Input.id(messageID, field: "message"))
        try checkText(text)
        guard !text.allSatisfy(\.isWhitespace) else {
            throw APIError.invalidRequest("an edit needs `text` (delete the message to take it back)")
        }
        let record = try await conversation(conversationID, for: identity)
        try userLimits.post(by: identity.userID)
        let mentioned = try mentions.checked(in: record)
        return try await amend(MessageAmendment(
            conversationID: conversationID, messageID: messageID, actorID: identity.userID,
            action: .edit(text: text, mentions: mentioned, mentionsAll: mentions.all)))
    }

    /// Deletes the message `messageID` of `conversationID`: `identity`'s own, or any in a group they own. History
    /// keeps a tombstone; the text leaves the database and the outboxes.
    ///
    /// - Throws: ``APIError``: `invalid_request`, `rate_limited`, `conversation_not_found`, `not_a_member`,
    ///   `message_not_found`, `not_the_sender`, `message_deleted`.
    func delete(_ messageID: String, in conversationID: String, by identity: Identity) async throws -> AmendOutcome {
        let (conversationID, messageID) = (try Input.id(conversationID, field: "conversation"), try Input.id(messageID, field: "message"))
        _ = try await conversation(conversationID, for: identity)
        try userLimits.post(by: identity.userID)
        return try await amend(MessageAmendment(
            conversationID: conversationID, messageID: messageID, actorID: identity.userID, action: .delete))
    }

    /// Stores `amendment` under the server's edit window and limit. Its webhook (`message.edited`,
    /// `message.deleted`) and the pushes' follow-ups come from the log, as everything else does.
    private func amend(_ amendment: MessageAmendment) async throws -> AmendOutcome {
        var amendment = amendment
        amendment.editWindow = limits.editWindow
        amendment.editLimit = limits.editLimit
        return try await store.amend(amendment)
    }

    /// Refuses text a message may not have: U+0000 (`invalid_request`), or more than the limits (`text_too_long`).
    private func checkText(_ text: String?) throws {
        try Input.text(text, field: "text")
        if let text, text.utf8.count > limits.maxTextBytes || text.count > limits.maxTextLength {
            throw APIError.textTooLong(limit: limits.maxTextLength, bytes: limits.maxTextBytes)
        }
    }

    /// Applies `change` to the group `conversationID`, by `identity`, once the caller passed the per-user limit on
    /// changes: the events it made were handed on by the log before this returns; the views in memory and the push
    /// outbox follow it at once.
    ///
    /// - Throws: ``APIError`` as ``StorageFailure`` maps the store's refusals (`not_an_owner`, ...).
    func change(_ change: ConversationChange, in conversationID: String, by identity: Identity) async throws -> ChangeOutcome {
        try userLimits.change(by: identity.userID)
        return try await self.change(change, in: conversationID, by: .member(identity.userID))
    }

    /// Applies `change` by `actor` (the app's backend has no per-user allowance).
    func change(_ change: ConversationChange, in conversationID: String, by actor: ChangeActor) async throws -> ChangeOutcome {
        let outcome = try await store.change(change, in: conversationID, by: actor, memberLimit: limits.maxGroupMembers)
        applied(outcome.entries)
        push.queued(clears: outcome.clears)
        return outcome
    }

    /// `identity` read `conversationID` up to `seq`, on `device` if the app said: the marker, the backend's `read`
    /// event and the clears to the other devices are one transaction (``ReadStateStore/markRead(_:)``); then the
    /// senders look at their outboxes at once.
    ///
    /// - Throws: `conversation_not_found` when they are not a member.
    func markRead(_ conversationID: String, upTo seq: Int64, device: String?, by identity: Identity) async throws {
        _ = try await conversation(conversationID, for: identity)
        let outcome = try await store.markRead(ReadMark(
            userID: identity.userID, conversationID: conversationID, upTo: seq, device: device,
            webhook: webhooks.wants(.read), clearsDue: push.clearsDue))
        if outcome.events > 0 { webhooks.queued() }
        push.queued(clears: outcome.clears)
    }

    /// The views in memory follow the events `entries` (a change, or an erasure) at once.
    func applied(_ entries: [IncomingMessage]) {
        for entry in entries { memberships.apply(entry.message) }
    }
}

/// Whom a message mentions, as its sender's client sent it: member ids, and `@all`.
struct Mentions: Sendable {
    var ids: [String] = []
    var all = false

    /// The ids to store: each once, in the order given.
    ///
    /// - Throws: ``APIError`` `invalid_mentions`: more than ``Message/maxMentions``, an unusable id, or someone who is
    ///   not a member of the conversation now.
    func checked(in view: MemberView) throws -> [String] {
        guard ids.count <= Message.maxMentions else {
            throw APIError(.badRequest, .invalidMentions, "a message mentions at most \(Message.maxMentions) members, not \(ids.count)")
        }
        var seen: Set<String> = []
        var kept: [String] = []
        for id in ids where seen.insert(id).inserted {
            if let problem = HeraldID.problem(with: id) {
                throw APIError(.badRequest, .invalidMentions, "`mentions` has an id that \(problem)")
            }
            guard view.isMember(id) else {
                throw APIError(
                    .badRequest, .invalidMentions,
                    "`mentions` names \(ControlCharacters.escaped(id)), who is not a member of this conversation")
            }
            kept.append(id)
        }
        return kept
    }
}
