import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldNIOTransport
@_exported import HeraldProtocol
@_exported import HeraldTransport
@_exported import HeraldWebhookSignature
import NIOHTTP1

/// Herald's service API for a Swift backend (Hummingbird, Vapor, ...): users before they sign in and their erasure,
/// conversations with the app's own ids, members, owners, titles, messages on a member's behalf and system messages,
/// history; and the webhooks' check (``verifyWebhook(body:headers:)``). Every call sends the service key; a refusal
/// is a ``HeraldAPIError`` with the server's stable code (`conversation_exists`, `user_erased`, ...).
///
/// ```swift
/// let herald = HeraldService(server: URL(string: "https://chat.example.com")!, key: serviceKey,
///                            webhookSecret: webhookSecret)
/// try await herald.putUser("alice", name: "Alice")
/// _ = try await herald.createConversation(id: "order-42", kind: .group, title: "Order 42",
///                                         members: ["alice", "bob"], owners: ["alice"])
/// _ = try await herald.post(to: "order-42", text: "Your order has shipped")
/// ```
public struct HeraldService: Sendable {
    /// The server.
    public let server: URL
    /// How long one request may take.
    public var timeout: Duration = .seconds(30)
    /// The secrets webhook signatures are checked with (`HERALD_WEBHOOK_SECRET`; two while one replaces the other).
    public var webhookSecrets: [String]
    /// How far a webhook's signature time may be from now.
    public var webhookTolerance: TimeInterval = 300
    private let key: String
    private let http: AsyncHTTPClientTransport

    /// A client of `server` with the service `key` (one of `HERALD_SERVICE_KEY`'s), on `httpClient` (the
    /// process-wide shared one by default); `webhookSecret` checks webhooks.
    public init(server: URL, key: String, webhookSecret: String? = nil, httpClient: HTTPClient = .shared) {
        self.server = server
        self.key = key
        webhookSecrets = webhookSecret.map { [$0] } ?? []
        http = AsyncHTTPClientTransport(httpClient: httpClient)
    }

    // MARK: Users

    /// Creates or updates a user (`PUT /v1/service/users/{id}`).
    @discardableResult
    public func putUser(_ id: String, name: String, picture: URL? = nil) async throws -> WirePerson {
        struct Body: Encodable {
            var name: String
            var avatarURL: String?
        }
        return try await transport.request(
            .PUT, "/v1/service/users/\(escape(id))", body: Body(name: name, avatarURL: picture?.absoluteString), as: WirePerson.self)
    }

    /// A user as others see them (`GET /v1/service/users/{id}`).
    public func user(_ id: String) async throws -> WirePerson {
        try await transport.request(.GET, "/v1/service/users/\(escape(id))", as: WirePerson.self)
    }

    /// Erases a user (`DELETE /v1/service/users/{id}`): they leave every conversation, their devices, read markers,
    /// mutes and pushes go, their tokens are refused and the id never comes back; their messages stay.
    public func eraseUser(_ id: String) async throws {
        try await transport.perform(.DELETE, "/v1/service/users/\(escape(id))")
    }

    // MARK: Conversations

    /// Creates a conversation with the app's own `id` (`POST /v1/service/conversations`); `created` is false when it
    /// existed already (a retry).
    public func createConversation(
        id: String?, kind: Conversation.Kind, title: String? = nil, members: [String], owners: [String] = []
    ) async throws -> (conversation: WireConversation, created: Bool) {
        struct Body: Encodable {
            var id: String?
            var kind: Conversation.Kind
            var title: String?
            var members: [String]
            var owners: [String]
        }
        let path = "/v1/service/conversations"
        let answer = try await transport.exchange(
            .POST, path, body: Body(id: id, kind: kind, title: title, members: members, owners: owners))
        return (try transport.decode(WireConversation.self, from: answer.data, method: .POST, path: path), answer.status == 201)
    }

    /// A conversation, its members and owners.
    public func conversation(_ id: String) async throws -> WireConversation {
        try await transport.request(.GET, "/v1/service/conversations/\(escape(id))", as: WireConversation.self)
    }

    /// Renames a group (nil: no title).
    @discardableResult
    public func rename(_ id: String, to title: String?) async throws -> WireConversation {
        try await transport.request(
            .PATCH, "/v1/service/conversations/\(escape(id))", body: WireRename(title: title), as: WireConversation.self)
    }

    /// Deletes a group for everyone.
    public func deleteConversation(_ id: String) async throws {
        try await transport.perform(.DELETE, "/v1/service/conversations/\(escape(id))")
    }

    /// Adds people to a group; `fullHistory` false: they see only what follows.
    @discardableResult
    public func addMembers(_ members: [String], to id: String, fullHistory: Bool = true) async throws -> WireConversation {
        struct Body: Encodable {
            var members: [String]
            var history: String
        }
        return try await transport.request(
            .POST, "/v1/service/conversations/\(escape(id))/members",
            body: Body(members: members, history: fullHistory ? "full" : "none"), as: WireConversation.self)
    }

    /// Removes a member from a group.
    public func removeMember(_ userID: String, from id: String) async throws {
        try await transport.perform(.DELETE, "/v1/service/conversations/\(escape(id))/members/\(escape(userID))")
    }

    /// Makes a member an owner of a group, or (`owner` false) no longer one.
    @discardableResult
    public func setOwner(_ userID: String, _ owner: Bool = true, in id: String) async throws -> WireConversation {
        try await transport.request(
            owner ? .PUT : .DELETE, "/v1/service/conversations/\(escape(id))/owners/\(escape(userID))",
            as: WireConversation.self)
    }

    // MARK: Messages

    /// Posts a message: from `sender` (a member), or with none a system message; `silent` notifies nobody. `created`
    /// is false when a message with this `id` was stored before (a retry).
    @discardableResult
    public func post(
        to conversationID: String, id: String? = nil, sender: String? = nil, text: String?, imageURL: URL? = nil,
        silent: Bool = false
    ) async throws -> (message: WireMessage, created: Bool) {
        struct Body: Encodable {
            var id: String?
            var senderId: String?
            var text: String?
            var imageURL: String?
            var silent: Bool
        }
        let path = "/v1/service/conversations/\(escape(conversationID))/messages"
        let answer = try await transport.exchange(
            .POST, path,
            body: Body(id: id, senderId: sender, text: text, imageURL: imageURL?.absoluteString, silent: silent))
        return (try transport.decode(WireMessage.self, from: answer.data, method: .POST, path: path), answer.status == 201)
    }

    /// A conversation's entries, oldest first: the first `limit` after `after`, else the last `limit` (before
    /// `before`).
    public func messages(in conversationID: String, after: Int64? = nil, before: Int64? = nil, limit: Int? = nil) async throws -> [WireMessage] {
        let path = "/v1/service/conversations/\(escape(conversationID))/messages"
            + APITransport.pageQuery(after: after, before: before, limit: limit)
        return try await transport.request(.GET, path, as: WireMessageList.self).messages
    }

    // MARK: Webhooks

    /// The event a webhook delivery carries, once its `Herald-Signature` header (found in `headers` whatever its
    /// case) verified against ``webhookSecrets`` within ``webhookTolerance``.
    ///
    /// - Throws: ``WebhookSignature/Failure`` for a delivery that is not Herald's (answer it 401);
    ///   `DecodingError` for a body that is not an event.
    public func verifyWebhook(body: Data, headers: [String: String]) throws -> WebhookEvent {
        let signature = headers.first { $0.key.lowercased() == WebhookSignature.header.lowercased() }?.value
        try WebhookSignature.verify(body: body, header: signature, secrets: webhookSecrets, tolerance: webhookTolerance)
        return try WireJSON.decoder().decode(WebhookEvent.self, from: body)
    }

    /// ``verifyWebhook(body:headers:)`` with the request's headers as async-http-client and NIO keep them.
    public func verifyWebhook(body: Data, headers: HTTPHeaders) throws -> WebhookEvent {
        try verifyWebhook(body: body, headers: Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }))
    }

    private var transport: APITransport {
        APITransport(server: server, credential: key, http: http, timeout: timeout)
    }

    private func escape(_ component: String) -> String {
        APITransport.escape(component)
    }
}
