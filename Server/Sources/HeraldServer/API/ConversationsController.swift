import Foundation
import HeraldCore
import HeraldRecords
import Hummingbird
import HeraldProtocol

/// `/v1/conversations`: create, list and read conversations, change groups (members, owners, title, deletion), post
/// and read messages, read markers and muting.
struct ConversationsController {
    let store: any ConversationStore & EntryStore & UserStore
    let messenger: Messenger
    let hub: Hub
    let userLimits: UserLimits
    let limits: ServerLimits
    let notifications: NotificationsController

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.post("conversations", use: create)
        group.get("conversations", use: list)
        group.get("conversations/:id", use: show)
        group.patch("conversations/:id", use: rename)
        group.delete("conversations/:id", use: delete)
        group.post("conversations/:id/members", use: addMembers)
        group.delete("conversations/:id/members/:userId", use: removeMember)
        group.put("conversations/:id/owners/:userId", use: makeOwner)
        group.delete("conversations/:id/owners/:userId", use: unmakeOwner)
        group.post("conversations/:id/messages", use: postMessage)
        group.get("conversations/:id/messages", use: listMessages)
        group.patch("conversations/:id/messages/:messageId", use: editMessage)
        group.delete("conversations/:id/messages/:messageId", use: deleteMessage)
        group.post("conversations/:id/read", use: markRead)
        group.put("conversations/:id/mute", use: mute)
        group.delete("conversations/:id/mute", use: unmute)
    }

    struct CreateRequest: Decodable {
        var kind: Conversation.Kind
        var title: String?
        var members: [String]
    }

    @Sendable func create(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<WireConversation> {
        let identity = try context.requireIdentity()
        let body = try await request.decodeJSON(as: CreateRequest.self, context: context)
        let limit = limits.maxGroupMembers
        var members = try Set(Self.memberIDs(body.members, limit: limit))
        members.insert(identity.userID)
        guard members.count <= limit else { throw Self.memberLimit(limit) }
        if body.kind == .direct, members.count != 2 {
            throw APIError.invalidRequest("a direct conversation is between you and exactly one other member")
        }
        try await Self.requireKnown(members.subtracting([identity.userID]), in: store)
        let title = try body.title.map { try Input.displayText($0, field: "title") }
        try userLimits.createConversation(by: identity.userID)
        let (record, created) = try await store.createConversation(
            kind: body.kind,
            title: body.kind == .group ? title : nil,
            // The creator first: they own a group.
            memberIDs: [identity.userID] + HeraldID.sorted(members.subtracting([identity.userID]))
        )
        return EditedResponse(status: created ? .created : .ok, response: WireConversation(record))
    }

    /// `member_limit` (409): a group has at most `limit` members (`HERALD_LIMIT_GROUP_MEMBERS`).
    static func memberLimit(_ limit: Int) -> APIError {
        APIError(.conflict, .memberLimit, "a group has at most \(limit) members")
    }

    /// `ids` checked as member ids: each usable (`members[i]` names the bad one), at most `limit`.
    static func memberIDs(_ ids: [String], limit: Int, field: String = "members") throws -> [String] {
        guard ids.count <= limit else { throw Self.memberLimit(limit) }
        for (index, member) in ids.enumerated() {
            _ = try Input.id(member, field: "\(field)[\(index)]")
        }
        return ids
    }

    /// Only people who exist: a mistyped id, a look-alike one, or a name typed for an id is an error, never an
    /// empty member.
    ///
    /// - Parameter byBackend: the caller is the app's backend, which can make the users itself; a member waits for
    ///   them to sign in (or for the backend). The error says which.
    /// - Throws: ``APIError`` `unknown_user`, naming up to five of them.
    static func requireKnown(_ ids: Set<String>, in store: any UserStore, byBackend: Bool = false) async throws {
        let unknown = try await store.unknownUsers(among: Array(ids))
        guard !unknown.isEmpty else { return }
        let named = unknown.prefix(5).map { "\"\(ControlCharacters.escaped($0))\"" }.joined(separator: ", ")
        throw APIError(
            .badRequest, .unknownUser,
            "no user has the id \(named)\(unknown.count > 5 ? " (and \(unknown.count - 5) more)" : ""): "
                + (byBackend
                    ? "make each with PUT /v1/service/users/{id} (a name, and a picture if you have one), then add them"
                    : "a person can be added once they have signed in, or once the app's backend made them"))
    }

    /// `GET /v1/conversations/{id}`: the conversation as the caller's list shows it, with its members and owners.
    @Sendable func show(_ request: Request, context: HeraldRequestContext) async throws -> WireConversationSummary {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        _ = try await messenger.conversation(id, for: identity)
        guard let summary = try await store.summary(of: id, for: identity.userID) else { throw APIError.notAMember }
        return WireConversationSummary(summary)
    }

    struct AddRequest: Decodable {
        var members: [String]
        var history: HistoryAccess?
    }

    /// `POST /v1/conversations/{id}/members`: owners add people (`history`: `full`, the default, or `none`).
    @Sendable func addMembers(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: AddRequest.self, context: context)
        guard !body.members.isEmpty else { throw APIError.invalidRequest("`members` names at least one person to add") }
        let members = try Self.memberIDs(body.members, limit: limits.maxGroupMembers)
        _ = try await messenger.conversation(id, for: identity)
        try await Self.requireKnown(Set(members), in: store)
        let outcome = try await messenger.change(.add(members, history: body.history ?? .full), in: id, by: identity)
        return try Self.answer(outcome)
    }

    /// `DELETE /v1/conversations/{id}/members/{userId}`: an owner removes a member; anyone removes themselves (leaves).
    @Sendable func removeMember(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let member = try context.parameters.id("userId")
        _ = try await messenger.conversation(id, for: identity)
        _ = try await messenger.change(.remove(member), in: id, by: identity)
        return .noContent
    }

    struct RenameRequest: Decodable {
        var title: String?

        private enum CodingKeys: String, CodingKey { case title }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.title) else {
                throw APIError.invalidRequest("`title` is required: the new title, or null for none")
            }
            title = try container.decodeIfPresent(String.self, forKey: .title)
        }
    }

    /// `PATCH /v1/conversations/{id}`: owners rename the group (`title` null or empty: no title).
    @Sendable func rename(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: RenameRequest.self, context: context)
        var title = try body.title.map { try Input.displayText($0, field: "title") }
        if title?.allSatisfy(\.isWhitespace) == true { title = nil }
        _ = try await messenger.conversation(id, for: identity)
        return try Self.answer(try await messenger.change(.rename(title), in: id, by: identity))
    }

    /// `DELETE /v1/conversations/{id}`: an owner deletes the group for everyone.
    @Sendable func delete(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        _ = try await messenger.conversation(id, for: identity)
        _ = try await messenger.change(.delete, in: id, by: identity)
        return .noContent
    }

    /// `PUT /v1/conversations/{id}/owners/{userId}`: an owner makes a member an owner.
    @Sendable func makeOwner(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        try await setOwner(true, context: context)
    }

    /// `DELETE /v1/conversations/{id}/owners/{userId}`: an owner makes an owner a member only (never the last one).
    @Sendable func unmakeOwner(_ request: Request, context: HeraldRequestContext) async throws -> WireConversation {
        try await setOwner(false, context: context)
    }

    private func setOwner(_ owner: Bool, context: HeraldRequestContext) async throws -> WireConversation {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let member = try context.parameters.id("userId")
        _ = try await messenger.conversation(id, for: identity)
        return try Self.answer(try await messenger.change(.owner(member, owner), in: id, by: identity))
    }

    /// The conversation after a change that leaves it standing.
    static func answer(_ outcome: ChangeOutcome) throws -> WireConversation {
        guard let record = outcome.record else { throw APIError.conversationNotFound }
        return WireConversation(record)
    }

    @Sendable func list(_ request: Request, context: HeraldRequestContext) async throws -> WireConversationList {
        let identity = try context.requireIdentity()
        let query = QueryParameters(request)
        let limit = try Self.integer(query.get("limit"), name: "limit") ?? 50
        guard (1...Int64(limits.maxConversationPage)).contains(limit) else {
            throw APIError.invalidRequest("`limit` must be from 1 to \(limits.maxConversationPage)")
        }
        var cursor: ConversationCursor?
        if let text = try query.get("cursor") {
            guard let parsed = ConversationCursor(encoded: text) else {
                throw APIError.invalidRequest("`cursor` must be a `next` value this server gave")
            }
            cursor = parsed
        }
        var filter = ConversationFilter.all
        switch try query.get("muted") {
        case nil, "false": break
        case "true": filter = .muted
        case let other?: throw APIError.invalidRequest("`muted` must be true or false, not \(other)")
        }
        switch try query.get("level") {
        case nil: break
        case "set" where filter == .all: filter = .leveled
        case "set": throw APIError.invalidRequest("`muted` and `level` cannot be asked together")
        case let other?: throw APIError.invalidRequest("`level` must be set, not \(other)")
        }
        let page = try await store.conversations(of: identity.userID, after: cursor, limit: Int(limit), filter: filter)
        return WireConversationList(conversations: page.summaries.map(WireConversationSummary.init), next: page.next?.encoded)
    }

    struct PostRequest: Decodable {
        var id: String?
        var text: String?
        var imageURL: String?
        var mentions: [String]?
        var mentionsAll: Bool?
    }

    @Sendable func postMessage(_ request: Request, context: HeraldRequestContext) async throws -> StoredMessageResponse {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: PostRequest.self, context: context)
        let mentions = Mentions(ids: body.mentions ?? [], all: body.mentionsAll ?? false)
        switch try await messenger.post(
            to: id, clientID: body.id, text: body.text, imageURL: body.imageURL, mentions: mentions, by: identity) {
        case .stored(let message): return StoredMessageResponse(status: .created, message: message)
        case .existing(let message): return StoredMessageResponse(status: .ok, message: message)
        }
    }

    struct EditRequest: Decodable {
        var text: String
        var mentions: [String]?
        var mentionsAll: Bool?
    }

    /// `PATCH /v1/conversations/{id}/messages/{messageId}` `{"text", "mentions", "mentionsAll"}`: the sender edits
    /// their message; answers it as it is now (`edited`).
    @Sendable func editMessage(_ request: Request, context: HeraldRequestContext) async throws -> StoredMessageResponse {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let messageID = try context.parameters.id("messageId")
        let body = try await request.decodeJSON(as: EditRequest.self, context: context)
        let outcome = try await messenger.edit(
            messageID, in: id, text: body.text, mentions: Mentions(ids: body.mentions ?? [], all: body.mentionsAll ?? false),
            by: identity)
        return StoredMessageResponse(status: .ok, message: outcome.message)
    }

    /// `DELETE /v1/conversations/{id}/messages/{messageId}`: the sender (or a group's owner) deletes a message;
    /// answers its tombstone.
    @Sendable func deleteMessage(_ request: Request, context: HeraldRequestContext) async throws -> StoredMessageResponse {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let messageID = try context.parameters.id("messageId")
        let outcome = try await messenger.delete(messageID, in: id, by: identity)
        return StoredMessageResponse(status: .ok, message: outcome.message)
    }

    @Sendable func listMessages(_ request: Request, context: HeraldRequestContext) async throws -> WireMessageList {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let query = QueryParameters(request)
        let after = try Self.integer(query.get("after"), name: "after")
        let before = try Self.integer(query.get("before"), name: "before")
        let limit = try Self.integer(query.get("limit"), name: "limit") ?? 50
        guard (1...200).contains(limit) else { throw APIError.invalidRequest("`limit` must be from 1 to 200") }
        _ = try await messenger.conversation(id, for: identity)
        let messages = try await store.entries(
            in: id, for: identity.userID, after: after, before: before, limit: Int(limit))
        return WireMessageList(messages: messages.map(WireMessage.init))
    }

    struct ReadRequest: Decodable {
        var upTo: Int64
        /// The device that read, if the app says: the others get a silent push clearing the conversation.
        var device: String?
    }

    @Sendable func markRead(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: ReadRequest.self, context: context)
        guard body.upTo >= 0 else { throw APIError.invalidRequest("`upTo` must not be negative") }
        if let device = body.device { _ = try Input.id(device, field: "device") }
        try await messenger.markRead(id, upTo: body.upTo, device: body.device, by: identity)
        return .noContent
    }

    @Sendable func mute(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        try await setMuted(true, context: context)
    }

    @Sendable func unmute(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        try await setMuted(false, context: context)
    }

    /// A mute is the level `nothing` for ever, an unmute the default level again (`PUT .../notifications` does the
    /// same and more); the user's connected devices get a `level` frame and, for clients that know only mutes, a
    /// `muted` one.
    private func setMuted(_ muted: Bool, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        try await notifications.apply(muted ? .muted : nil, to: id, for: identity)
        hub.send(.muted(conversationID: id, muted: muted), toUser: identity.userID)
        return .noContent
    }

    static func integer(_ text: String?, name: String) throws -> Int64? {
        guard let text else { return nil }
        guard let value = Int64(text), value >= 0 else {
            throw APIError.invalidRequest("`\(name)` must be a whole number, 0 or more")
        }
        return value
    }
}

extension WireConversation: @retroactive ResponseEncodable {
    init(_ record: ConversationRecord) {
        self.init(id: record.conversation.id, kind: record.conversation.kind, title: record.conversation.title,
                  members: record.memberIDs, people: record.people.map(WirePerson.init), owners: record.ownerIDs)
    }
}

extension WireConversationSummary {
    init(_ summary: ConversationSummary) {
        self.init(conversation: WireConversation(summary.record), lastMessage: summary.lastMessage.map(WireMessage.init),
                  unreadCount: summary.unreadCount, readUpTo: summary.readUpTo, muted: summary.muted,
                  level: summary.level)
    }
}

extension WireConversationList: @retroactive ResponseEncodable {}
extension WireConversationSummary: @retroactive ResponseEncodable {}
/// The answer to a post: the message's wire form, written without the JSON encoder (``WireMessage/jsonText(_:)``,
/// the same bytes), as every post is answered with one.
struct StoredMessageResponse: ResponseGenerator {
    var status: HTTPResponse.Status
    var message: Message

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = ByteBuffer(string: WireMessage.jsonText(message))
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .contentLength: String(body.readableBytes)],
            body: .init(byteBuffer: body))
    }
}

extension WireMessageList: @retroactive ResponseEncodable {}
extension WireMessage: @retroactive ResponseEncodable {}
