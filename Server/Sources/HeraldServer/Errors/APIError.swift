import Hummingbird
import HeraldProtocol

/// An error a client can act on: an HTTP status, a stable machine-readable code, and a message for people.
///
/// Over HTTP it is the body `{"error": {"code": "...", "message": "..."}}`; on the stream, a frame
/// `{"type": "error", "code": "...", "message": "...", "ref": ...}`.
public struct APIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stable codes; clients switch on these, so they never change meaning.
    public enum Code: String, Codable, Hashable, Sendable, CaseIterable {
        /// The body or frame is not valid JSON.
        case invalidJSON = "invalid_json"
        /// A field is missing, of the wrong type, or out of range.
        case invalidRequest = "invalid_request"
        /// A message's text is longer than the limit.
        case textTooLong = "text_too_long"
        /// A message's `mentions` are malformed, too many, or name someone who is not a member.
        case invalidMentions = "invalid_mentions"
        /// A request body or stream frame is larger than the limit.
        case tooLarge = "too_large"
        /// A stream frame's `type` is not one the server knows.
        case unknownType = "unknown_type"
        /// No token was given.
        case missingToken = "missing_token"
        /// The token is malformed, unsigned, signed with another key or algorithm, or lacks a claim.
        case invalidToken = "invalid_token"
        /// The token's `exp` has passed.
        case tokenExpired = "token_expired"
        /// The caller is not a member of the conversation.
        case notAMember = "not_a_member"
        /// No conversation has that id.
        case conversationNotFound = "conversation_not_found"
        /// No such endpoint, or no such device.
        case notFound = "not_found"
        /// A message id is already used by another message.
        case idConflict = "id_conflict"
        /// A member to add is no user the server knows (they never signed in).
        case unknownUser = "unknown_user"
        /// Only a group's owners may do this (add, remove, rename, make owners, delete).
        case notAnOwner = "not_an_owner"
        /// A direct conversation's members, title and owners never change.
        case directConversation = "direct_conversation"
        /// The user to remove, or to make an owner, is not a member of the conversation.
        case memberNotFound = "member_not_found"
        /// The group would have more members than the server allows.
        case memberLimit = "member_limit"
        /// The change would leave the group with no owner.
        case lastOwner = "last_owner"
        /// No user has that id (the app's backend's routes).
        case userNotFound = "user_not_found"
        /// The user was erased: their tokens are refused, and their id cannot be used again.
        case userErased = "user_erased"
        /// A conversation id the app's backend gave is taken (another kind, deleted, or the pair's direct
        /// conversation under another id).
        case conversationExists = "conversation_exists"
        /// No message of the conversation has that id.
        case messageNotFound = "message_not_found"
        /// Someone else's message: only its sender edits it; its sender or a group's owner deletes it.
        case notTheSender = "not_the_sender"
        /// The message is older than the edit window (`HERALD_EDIT_WINDOW`).
        case editWindowPassed = "edit_window_passed"
        /// The message was deleted.
        case messageDeleted = "message_deleted"
        /// The message was edited as many times as it may be (`HERALD_EDIT_LIMIT`).
        case editLimit = "edit_limit"
        /// The server encrypts every push (`HERALD_PUSH_REQUIRE_ENCRYPTION=1`): an APNs, FCM or Expo device must
        /// register its push keys (`keys`).
        case encryptionRequired = "encryption_required"
        /// A device key that no device has (`GET /v1/push/…`): register the device again for a new one.
        case invalidDeviceKey = "invalid_device_key"
        /// A service route was called without a valid service key (`HERALD_SERVICE_KEY`), or the server has none.
        case invalidServiceKey = "invalid_service_key"
        /// A service key was sent from a web page (the request has an `Origin`): keys stay on the app's backend.
        case browserOrigin = "browser_origin"
        /// The caller went over one of the per-user limits; `Retry-After` says when to try again.
        case rateLimited = "rate_limited"
        /// The server holds as many connections as it can; `Retry-After` says when to try again.
        case serverBusy = "server_busy"
        /// The database cannot be reached just now; `Retry-After` says when to try again.
        case databaseUnavailable = "database_unavailable"
        /// The server's disk is full: nothing was stored; `Retry-After` says when to try again.
        case storageFull = "storage_full"
        /// Something failed on the server; it is logged.
        case internalError = "internal"
    }

    /// The HTTP status it is sent with.
    public var status: HTTPResponse.Status
    /// The stable code.
    public var code: Code
    /// What went wrong, for a person.
    public var message: String
    /// For `rate_limited`: how many seconds to wait before trying again (the `Retry-After` header).
    public var retryAfter: Int?

    /// Creates an error.
    public init(_ status: HTTPResponse.Status, _ code: Code, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }

    static func invalidRequest(_ message: String) -> APIError { APIError(.badRequest, .invalidRequest, message) }
    static let conversationNotFound = APIError(.notFound, .conversationNotFound, "no conversation has that id")
    static let notAMember = APIError(.forbidden, .notAMember, "you are not a member of this conversation")

    /// `rate_limited` (429): `message` says which limit; try again after `seconds` (at least 1).
    static func rateLimited(_ message: String, retryAfter seconds: Double) -> APIError {
        HeraldMetrics.rateLimited.increment()
        return APIError(.tooManyRequests, .rateLimited, message, retryAfter: max(1, Int(seconds.rounded(.up))))
    }

    /// `server_busy` (503): the connection limit is reached; try again in a second.
    static let serverBusy = APIError(
        .serviceUnavailable, .serverBusy, "the server has as many connections as it can hold; try again", retryAfter: 1)

    /// `storage_full` (503): the database's disk is full; nothing was stored; try again in half a minute.
    static let storageFull = APIError(
        .serviceUnavailable, .storageFull, "the server's disk is full; nothing was stored, try again later",
        retryAfter: 30)

    /// `database_unavailable` (503): the store cannot reach its database; try again in a second.
    static let databaseUnavailable = APIError(
        .serviceUnavailable, .databaseUnavailable, "the database cannot be reached just now; try again", retryAfter: 1)

    static func textTooLong(limit: Int, bytes: Int) -> APIError {
        APIError(.badRequest, .textTooLong, "text is longer than \(limit) characters or \(bytes) bytes of UTF-8")
    }
}

extension ServerFrame {
    /// The stream's `error` frame for `error`, about the `send` with id `ref`, if any.
    static func refusal(_ error: APIError, ref: String?) -> ServerFrame {
        .error(code: error.code.rawValue, message: error.message, ref: ref, retryAfter: error.retryAfter)
    }
}
