import Foundation
import HeraldCore
import Hummingbird
import HeraldProtocol

/// `/v1/conversations`: create and list conversations, post and read messages, read markers and muting.
struct ConversationsController {
    let store: any Store
    let messenger: Messenger
    let limits: ServerLimits

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.post("conversations", use: create)
        group.get("conversations", use: list)
        group.post("conversations/:id/messages", use: postMessage)
        group.get("conversations/:id/messages", use: listMessages)
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
        guard body.members.count <= 1_000 else { throw APIError.invalidRequest("a conversation has at most 1000 members") }
        for (index, member) in body.members.enumerated() {
            _ = try Input.id(member, field: "members[\(index)]")
        }
        var members = Set(body.members)
        members.insert(identity.userID)
        guard members.count <= 1_000 else { throw APIError.invalidRequest("a conversation has at most 1000 members") }
        if body.kind == .direct, members.count != 2 {
            throw APIError.invalidRequest("a direct conversation is between you and exactly one other member")
        }
        // Only people who exist: a mistyped id (or a name typed for an id) is an error, never an empty chat.
        let unknown = try await store.unknownUsers(among: Array(members.subtracting([identity.userID])))
        if !unknown.isEmpty {
            let named = unknown.prefix(5).map { "\"\(ControlCharacters.escaped($0))\"" }.joined(separator: ", ")
            throw APIError(
                .badRequest, .unknownUser,
                "no user has the id \(named)\(unknown.count > 5 ? " (and \(unknown.count - 5) more)" : ""): a person can be added once they have signed in")
        }
        let title = try body.title.map { try Input.displayText($0, field: "title") }
        try messenger.userLimits.createConversation(by: identity.userID)
        let (record, created) = try await store.createConversation(
            kind: body.kind,
            title: body.kind == .group ? title : nil,
            memberIDs: Array(members)
        )
        messenger.memberships.remember(Membership(conversation: record.conversation, memberIDs: record.memberIDs))
        return EditedResponse(status: created ? .created : .ok, response: WireConversation(record))
    }

    @Sendable func list(_ request: Request, context: HeraldRequestContext) async throws -> WireConversationList {
        let identity = try context.requireIdentity()
        let query = request.uri.queryParameters
        let limit = try Self.integer(query.get("limit"), name: "limit") ?? 50
        guard (1...Int64(limits.maxConversationPage)).contains(limit) else {
            throw APIError.invalidRequest("`limit` must be from 1 to \(limits.maxConversationPage)")
        }
        var cursor: ConversationCursor?
        if let text = query.get("cursor") {
            guard let parsed = ConversationCursor(encoded: text) else {
                throw APIError.invalidRequest("`cursor` must be a `next` value this server gave")
            }
            cursor = parsed
        }
        let mutedOnly: Bool
        switch query.get("muted") {
        case nil, "false": mutedOnly = false
        case "true": mutedOnly = true
        case let other?: throw APIError.invalidRequest("`muted` must be true or false, not \(other)")
        }
        let page = try await store.conversations(of: identity.userID, after: cursor, limit: Int(limit), mutedOnly: mutedOnly)
        return WireConversationList(conversations: page.summaries.map(WireConversationSummary.init), next: page.next?.encoded)
    }

    struct PostRequest: Decodable {
        var id: String?
        var text: String?
        var imageURL: String?
    }

    @Sendable func postMessage(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<WireMessage> {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: PostRequest.self, context: context)
        switch try await messenger.post(to: id, clientID: body.id, text: body.text, imageURL: body.imageURL, by: identity) {
        case .stored(let message): return EditedResponse(status: .created, response: WireMessage(message))
        case .existing(let message): return EditedResponse(status: .ok, response: WireMessage(message))
        }
    }

    @Sendable func listMessages(_ request: Request, context: HeraldRequestContext) async throws -> WireMessageList {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let query = request.uri.queryParameters
        let after = try Self.integer(query.get("after"), name: "after")
        let before = try Self.integer(query.get("before"), name: "before")
        let limit = try Self.integer(query.get("limit"), name: "limit") ?? 50
        guard (1...200).contains(limit) else { throw APIError.invalidRequest("`limit` must be from 1 to 200") }
        _ = try await messenger.conversation(id, for: identity)
        let messages = try await store.messages(in: id, after: after, before: before, limit: Int(limit))
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
        _ = try await messenger.conversation(id, for: identity)
        try await store.markRead(userID: identity.userID, conversationID: id, upTo: body.upTo)
        await messenger.push.conversationRead(userID: identity.userID, conversationID: id, device: body.device)
        return .noContent
    }

    @Sendable func mute(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        try await setMuted(true, context: context)
    }

    @Sendable func unmute(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        try await setMuted(false, context: context)
    }

    /// Mutes or unmutes, and tells the user's connected devices, so every one of them stops (or starts again)
    /// notifying at once.
    private func setMuted(_ muted: Bool, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        _ = try await messenger.conversation(id, for: identity)
        try await store.setMuted(muted, userID: identity.userID, conversationID: id)
        messenger.hub.send(.muted(conversationID: id, muted: muted), toUser: identity.userID)
        return .noContent
    }

    private static func integer(_ text: String?, name: String) throws -> Int64? {
        guard let text else { return nil }
        guard let value = Int64(text), value >= 0 else {
            throw APIError.invalidRequest("`\(name)` must be a whole number, 0 or more")
        }
        return value
    }
}

extension WireConversation: ResponseEncodable {
    init(_ record: ConversationRecord) {
        self.init(id: record.conversation.id, kind: record.conversation.kind, title: record.conversation.title,
                  members: record.memberIDs, people: record.people.map(WirePerson.init))
    }
}

extension WireConversationSummary {
    init(_ summary: ConversationSummary) {
        self.init(conversation: WireConversation(summary.record), lastMessage: summary.lastMessage.map(WireMessage.init),
                  unreadCount: summary.unreadCount, readUpTo: summary.readUpTo, muted: summary.muted)
    }
}

extension WireConversationList: ResponseEncodable {}
extension WireMessageList: ResponseEncodable {}
extension WireMessage: ResponseEncodable {}
