import Foundation
import HeraldCore
import Hummingbird
import HeraldProtocol

/// `/v1/conversations`: create and list conversations, post and read messages, read markers and muting.
struct ConversationsController {
    let store: any Store
    let messenger: Messenger

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
        var members = Set(body.members)
        guard members.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 128 }) else {
            throw APIError.invalidRequest("member ids must be 1 to 128 bytes")
        }
        members.insert(identity.userID)
        guard members.count <= 1_000 else { throw APIError.invalidRequest("a conversation has at most 1000 members") }
        if body.kind == .direct, members.count != 2 {
            throw APIError.invalidRequest("a direct conversation is between you and exactly one other member")
        }
        let title = body.title?.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (title ?? "").count <= 200 else { throw APIError.invalidRequest("`title` is at most 200 characters") }
        let (record, created) = try await store.createConversation(
            kind: body.kind,
            title: body.kind == .group ? title : nil,
            memberIDs: Array(members)
        )
        return EditedResponse(status: created ? .created : .ok, response: WireConversation(record))
    }

    @Sendable func list(_ request: Request, context: HeraldRequestContext) async throws -> WireConversationList {
        let identity = try context.requireIdentity()
        let summaries = try await store.conversations(of: identity.userID)
        return WireConversationList(conversations: summaries.map(WireConversationSummary.init))
    }

    struct PostRequest: Decodable {
        var id: String?
        var text: String?
        var imageURL: String?
    }

    @Sendable func postMessage(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<WireMessage> {
        let identity = try context.requireIdentity()
        let id = try context.parameters.require("id")
        let body = try await request.decodeJSON(as: PostRequest.self, context: context)
        switch try await messenger.post(to: id, clientID: body.id, text: body.text, imageURL: body.imageURL, by: identity) {
        case .stored(let message): return EditedResponse(status: .created, response: WireMessage(message))
        case .existing(let message): return EditedResponse(status: .ok, response: WireMessage(message))
        }
    }

    @Sendable func listMessages(_ request: Request, context: HeraldRequestContext) async throws -> WireMessageList {
        let identity = try context.requireIdentity()
        let id = try context.parameters.require("id")
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
    }

    @Sendable func markRead(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let id = try context.parameters.require("id")
        let body = try await request.decodeJSON(as: ReadRequest.self, context: context)
        guard body.upTo >= 0 else { throw APIError.invalidRequest("`upTo` must not be negative") }
        _ = try await messenger.conversation(id, for: identity)
        try await store.markRead(userID: identity.userID, conversationID: id, upTo: body.upTo)
        return .noContent
    }

    @Sendable func mute(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        try await setMuted(true, context: context)
    }

    @Sendable func unmute(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        try await setMuted(false, context: context)
    }

    private func setMuted(_ muted: Bool, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let id = try context.parameters.require("id")
        _ = try await messenger.conversation(id, for: identity)
        try await store.setMuted(muted, userID: identity.userID, conversationID: id)
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
