import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import Hummingbird

/// `/v1/service/…`: what the app's backend does with a service key (docs/integrate.md). Users before they ever
/// sign in, and their erasure; conversations with the app's own ids, their members, owners and titles, by the same
/// rules and with the same events as the user API (shown as made by nobody: `senderId` `""`); messages on a
/// member's behalf or from nobody (system messages), either one `silent`; and reading any conversation.
///
/// The backend is trusted with every conversation, and has no per-user allowance; bodies are bounded as every
/// request's are.
struct ServiceController {
    let store: any ConversationStore & EntryStore & UserStore
    let messenger: Messenger
    let users: UserDirectory
    let limits: ServerLimits

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.put("users/:userId", use: putUser)
        group.get("users/:userId", use: getUser)
        group.delete("users/:userId", use: eraseUser)
        group.post("conversations", use: create)
        group.get("conversations/:id", use: show)
        group.patch("conversations/:id", use: rename)
        group.delete("conversations/:id", use: delete)
        group.post("conversations/:id/members", use: addMembers)
        group.delete("conversations/:id/members/:userId", use: removeMember)
        group.put("conversations/:id/owners/:userId", use: makeOwner)
        group.delete("conversations/:id/owners/:userId", use: unmakeOwner)
        group.post("conversations/:id/messages", use: post)
        group.get("conversations/:id/messages", use: history)
    }

    struct UserRequest: Decodable {
        var name: String
        /// The picture, named as the answers name it; `picture` (its first name, as in tokens) is still taken.
        var avatarURL: String?
        var picture: String?

        /// The picture given under either name.
        ///
        /// - Throws: ``APIError`` `invalid_request` when both are given and differ.
        func givenPicture() throws -> String? {
            try ServiceController.oneOf(avatarURL, picture, names: ("avatarURL", "picture"))
        }
    }

    /// The value of a field sent under its name or its older one: one of them, or both the same.
    static func oneOf(_ current: String?, _ older: String?, names: (current: String, older: String)) throws -> String? {
        if let current, let older, current != older {
            throw APIError.invalidRequest("`\(names.current)` and `\(names.older)` (its older name) differ: send `\(names.current)` alone")
        }
        return current ?? older
    }

    /// `PUT /v1/service/users/{userId}`: creates or updates a user (`name`, `picture`), who can then be added to
    /// conversations before they ever sign in. Their own token's claims replace these when they do.
    @Sendable func putUser(_ request: Request, context: HeraldRequestContext) async throws -> WirePerson {
        let id = try context.parameters.id("userId")
        let body = try await request.decodeJSON(as: UserRequest.self, context: context)
        let name = try Input.displayText(body.name, field: "name")
        guard !name.allSatisfy(\.isWhitespace) else { throw APIError.invalidRequest("`name` must not be blank") }
        var picture: URL?
        if let text = try body.givenPicture() {
            guard let url = Input.webURL(text) else {
                throw APIError.invalidRequest("`avatarURL` must be an http or https URL of at most \(Input.maxURLBytes) bytes")
            }
            picture = url
        }
        let person = Person(id: id, displayName: name, avatarURL: picture)
        try await store.upsertUser(person)
        users.forget(id)
        return WirePerson(person)
    }

    /// `GET /v1/service/users/{userId}`: the user as others see them.
    @Sendable func getUser(_ request: Request, context: HeraldRequestContext) async throws -> WirePerson {
        let id = try context.parameters.id("userId")
        guard let person = try await store.user(id: id) else { throw APIError(.notFound, .userNotFound, "no user has that id") }
        return WirePerson(person)
    }

    /// `DELETE /v1/service/users/{userId}`: erases a user (``UserStore/eraseUser(_:)``): 204, also when repeated.
    @Sendable func eraseUser(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let id = try context.parameters.id("userId")
        let erased = try await store.eraseUser(id)
        users.erased(id)
        messenger.applied(erased.entries)
        return .noContent
    }

    struct CreateRequest: Decodable {
        var id: String?
        var kind: Conversation.Kind
        var title: String?
        var members: [String]
        var owners: [String]?
    }

    /// `POST /v1/service/conversations`: a conversation with the app's own `id` (or a new UUID), its `members`
    /// (known users) and, for a group, its `owners` among them (none: only the backend changes it). 201 when
    /// created; 200 with the conversation as it stands when the same `id` and kind exist (a retry).
    @Sendable func create(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<WireConversation> {
        let body = try await request.decodeJSON(as: CreateRequest.self, context: context)
        let id = try body.id.map { try Input.id($0, field: "id") }
        let limit = limits.maxGroupMembers
        let members = Set(try ConversationsController.memberIDs(body.members, limit: limit))
        let owners = Set(try ConversationsController.memberIDs(body.owners ?? [], limit: limit, field: "owners"))
        switch body.kind {
        case .direct:
            guard members.count == 2 else { throw APIError.invalidRequest("a direct conversation has exactly two members") }
            guard owners.isEmpty else { throw APIError.invalidRequest("a direct conversation has no owners") }
        case .group:
            guard !members.isEmpty else { throw APIError.invalidRequest("`members` names at least one person") }
            guard owners.isSubset(of: members) else { throw APIError.invalidRequest("every one of `owners` must be in `members`") }
        }
        try await ConversationsController.requireKnown(members, in: store, byBackend: true)
        var title = try body.title.map { try Input.displayText($0, field: "title") }
        if title?.allSatisfy(\.isWhitespace) == true || body.kind == .direct { title = nil }
        let (record, created) = try await store.createConversation(NewConversation(
            id: id, kind: body.kind, title: title, memberIDs: HeraldID.sorted(members), ownerIDs: HeraldID.sorted(owners)))
        return EditedResponse(status: created ? .created : .ok, response: WireConversation(record))
    }

    /// `GET /v1/service/conversations/{id}`: the conversation, its members and owners.
    @Sendable func show(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        let id = try context.parameters.id("id")
        guard let record = try await store.conversation(id: id) else { throw APIError.conversationNotFound }
        return WireConversation(record)
    }

    /// `PATCH /v1/service/conversations/{id}`: renames a group.
    @Sendable func rename(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: ConversationsController.RenameRequest.self, context: context)
        var title = try body.title.map { try Input.displayText($0, field: "title") }
        if title?.allSatisfy(\.isWhitespace) == true { title = nil }
        return try ConversationsController.answer(try await messenger.change(.rename(title), in: id, by: .service))
    }

    /// `DELETE /v1/service/conversations/{id}`: deletes a group for everyone.
    @Sendable func delete(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let id = try context.parameters.id("id")
        _ = try await messenger.change(.delete, in: id, by: .service)
        return .noContent
    }

    /// `POST /v1/service/conversations/{id}/members`: adds known users (`history`: `full`, the default, or `none`).
    @Sendable func addMembers(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: ConversationsController.AddRequest.self, context: context)
        guard !body.members.isEmpty else { throw APIError.invalidRequest("`members` names at least one person to add") }
        let members = try ConversationsController.memberIDs(body.members, limit: limits.maxGroupMembers)
        try await ConversationsController.requireKnown(Set(members), in: store, byBackend: true)
        let outcome = try await messenger.change(.add(members, history: body.history ?? .full), in: id, by: .service)
        return try ConversationsController.answer(outcome)
    }

    /// `DELETE /v1/service/conversations/{id}/members/{userId}`: removes a member.
    @Sendable func removeMember(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let id = try context.parameters.id("id")
        let member = try context.parameters.id("userId")
        _ = try await messenger.change(.remove(member), in: id, by: .service)
        return .noContent
    }

    /// `PUT /v1/service/conversations/{id}/owners/{userId}`: makes a member an owner.
    @Sendable func makeOwner(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        try await setOwner(true, context: context)
    }

    /// `DELETE /v1/service/conversations/{id}/owners/{userId}`: makes an owner a member only (never the last one).
    @Sendable func unmakeOwner(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        try await setOwner(false, context: context)
    }

    private func setOwner(_ owner: Bool, context: HeraldRequestContext) async throws -> WireConversation {
        let id = try context.parameters.id("id")
        let member = try context.parameters.id("userId")
        return try ConversationsController.answer(try await messenger.change(.owner(member, owner), in: id, by: .service))
    }

    struct PostRequest: Decodable {
        var id: String?
        /// Who it is from, named as messages name it; `sender` (its first name) is still taken.
        var senderId: String?
        var sender: String?
        var text: String?
        var imageURL: String?
        var silent: Bool?
        var mentions: [String]?
        var mentionsAll: Bool?
    }

    /// `POST /v1/service/conversations/{id}/messages`: a message from `sender` (a member; idempotent by `id` exactly
    /// as their own post), or with no `sender` a system message; `silent` ones notify nobody. 201, or 200 for an
    /// `id` already stored.
    @Sendable func post(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<WireMessage> {
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: PostRequest.self, context: context)
        var sender = Person(id: "", displayName: "")
        if let senderID = try Self.oneOf(body.senderId, body.sender, names: ("senderId", "sender")) {
            _ = try Input.id(senderID, field: "senderId")
            guard let person = try await store.user(id: senderID) else {
                throw APIError(
                    .badRequest, .unknownUser,
                    "`senderId` is no user this server knows: make them with PUT /v1/service/users/{id} first")
            }
            sender = person
        }
        let outcome: PostOutcome
        do {
            outcome = try await messenger.post(
                to: id, clientID: body.id, text: body.text, imageURL: body.imageURL,
                mentions: Mentions(ids: body.mentions ?? [], all: body.mentionsAll ?? false), as: sender,
                silent: body.silent ?? false)
        } catch let error as APIError where error.code == .notAMember {
            throw APIError(.forbidden, .notAMember, "`senderId` is not a member of this conversation")
        }
        switch outcome {
        case .stored(let message): return EditedResponse(status: .created, response: WireMessage(message))
        case .existing(let message): return EditedResponse(status: .ok, response: WireMessage(message))
        }
    }

    /// `GET /v1/service/conversations/{id}/messages?after=&before=&limit=`: the whole history, as a member with full
    /// history reads it.
    @Sendable func history(_ request: Request, context: HeraldRequestContext) async throws -> WireMessageList {
        let id = try context.parameters.id("id")
        let query = QueryParameters(request)
        let after = try ConversationsController.integer(query.get("after"), name: "after")
        let before = try ConversationsController.integer(query.get("before"), name: "before")
        let limit = try ConversationsController.integer(query.get("limit"), name: "limit") ?? 50
        guard (1...200).contains(limit) else { throw APIError.invalidRequest("`limit` must be from 1 to 200") }
        let messages = try await store.entries(in: id, for: nil, after: after, before: before, limit: Int(limit))
        return WireMessageList(messages: messages.map(WireMessage.init))
    }
}

extension WirePerson: @retroactive ResponseEncodable {}
