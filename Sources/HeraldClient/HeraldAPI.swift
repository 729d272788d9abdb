import Foundation
import HeraldCore
import HeraldProtocol
@_exported import HeraldTransport

/// Herald's HTTP API for one signed-in user: their conversations with unread counts, a conversation's history, read
/// markers, and posting without a stream. The live stream is ``HeraldClient``; this is what an app asks when it
/// opens, or opens a chat, and how a notification's quick reply is sent when no stream is open.
///
/// ```swift
/// let api = HeraldAPI(configuration: ClientConfiguration(server: url, token: token))
/// for summary in try await api.conversations() { print(summary.conversation.id, summary.unreadCount) }
/// try await api.markRead(conversationID, upTo: lastSeq)
/// ```
public struct HeraldAPI: Sendable {
    /// The server and the user's token.
    public let configuration: ClientConfiguration
    /// How long one request may take.
    public var timeout: Duration = .seconds(30)

    /// An API client for `configuration`'s server and user, over its transport.
    public init(configuration: ClientConfiguration) {
        self.configuration = configuration
    }

    /// All the user's conversations, most recently active first, each with its last message, unread count and the
    /// user's read marker: every page of ``conversationPage(after:limit:mutedOnly:leveledOnly:)``, one request each.
    public func conversations(mutedOnly: Bool = false, leveledOnly: Bool = false) async throws -> [WireConversationSummary] {
        var all: [WireConversationSummary] = []
        var cursor: String?
        repeat {
            let page = try await conversationPage(after: cursor, limit: 100, mutedOnly: mutedOnly, leveledOnly: leveledOnly)
            all += page.conversations
            cursor = page.next
        } while cursor != nil
        return all
    }

    /// One page of the user's conversations, most recently active first: the first page without `cursor`, then
    /// the page after each answer's `next` (nil on the last page). `limit` is 50 by default, at most 100. Only the
    /// conversations whose own level is `nothing` with `mutedOnly`, only those with a level of their own with
    /// `leveledOnly`.
    public func conversationPage(
        after cursor: String? = nil, limit: Int? = nil, mutedOnly: Bool = false, leveledOnly: Bool = false
    ) async throws -> WireConversationList {
        var query: [URLQueryItem] = []
        if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        if mutedOnly { query.append(URLQueryItem(name: "muted", value: "true")) }
        if leveledOnly { query.append(URLQueryItem(name: "level", value: "set")) }
        var components = URLComponents()
        components.path = "/v1/conversations"
        components.queryItems = query.isEmpty ? nil : query
        return try await request(.GET, components.string ?? "/v1/conversations", as: WireConversationList.self)
    }

    /// The ids of the conversations the user muted.
    public func mutedConversationIDs() async throws -> Set<String> {
        Set(try await conversations(mutedOnly: true).map(\.conversation.id))
    }

    /// The user's own levels, by conversation (those that still hold); the others follow the default level.
    public func conversationLevels() async throws -> [String: LevelChoice] {
        var levels: [String: LevelChoice] = [:]
        for summary in try await conversations(leveledOnly: true) {
            if let level = summary.level { levels[summary.conversation.id] = level }
        }
        return levels
    }

    /// Sets the user's level for a conversation, for ever or `until` an instant (nil: back to their default level),
    /// on every device: their connected devices are told at once on the stream.
    ///
    /// - Throws: ``HeraldAPIError`` `invalid_request` for an `until` in the past or more than 366 days away.
    public func setLevel(_ level: NotificationLevel?, until: Date? = nil, conversationID: String) async throws {
        struct Body: Encodable {
            var level: NotificationLevel?
            var until: Date?
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(level, forKey: .level)
                try container.encodeIfPresent(until, forKey: .until)
            }
            enum CodingKeys: String, CodingKey { case level, until }
        }
        try await perform(.PUT, "/v1/conversations/\(Self.escape(conversationID))/notifications",
                          body: Body(level: level, until: until))
    }

    /// The user's notification settings: default level, snooze, quiet hours.
    public func notificationSettings() async throws -> NotificationSettings {
        try await request(.GET, "/v1/me/notifications", as: NotificationSettings.self)
    }

    /// Replaces the user's notification settings (on every device); returns them as kept.
    ///
    /// - Throws: ``HeraldAPIError`` `invalid_request` for an unknown time zone, a malformed quiet window, a snooze
    ///   in the past or more than 366 days away.
    @discardableResult
    public func setNotificationSettings(_ settings: NotificationSettings) async throws -> NotificationSettings {
        try await request(.PUT, "/v1/me/notifications", body: settings, as: NotificationSettings.self)
    }

    /// Do not disturb until `until` (nil: no longer); returns the settings as kept.
    @discardableResult
    public func snooze(until: Date?) async throws -> NotificationSettings {
        struct Body: Encodable {
            var snoozeUntil: Date?
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(snoozeUntil, forKey: .snoozeUntil)
            }
            enum CodingKeys: String, CodingKey { case snoozeUntil }
        }
        return try await request(.PUT, "/v1/me/notifications", body: Body(snoozeUntil: until), as: NotificationSettings.self)
    }

    /// Mutes (or, with `false`, unmutes) a conversation for the user, on every device: their connected devices are
    /// told at once on the stream.
    public func setMuted(_ muted: Bool, conversationID: String) async throws {
        try await perform(muted ? .PUT : .DELETE, "/v1/conversations/\(Self.escape(conversationID))/mute")
    }

    /// Starts a conversation with `members` (the user is always one); a direct chat that already exists is returned.
    public func createConversation(kind: Conversation.Kind, title: String? = nil, members: [String]) async throws -> WireConversation {
        struct Body: Encodable {
            var kind: Conversation.Kind
            var title: String?
            var members: [String]
        }
        return try await request(.POST, "/v1/conversations", body: Body(kind: kind, title: title, members: members),
                                 as: WireConversation.self)
    }

    /// One conversation as the user's list shows it, with its members and owners.
    ///
    /// - Throws: ``HeraldAPIError`` `not_a_member` once the user was removed from it, or left it.
    public func conversation(_ conversationID: String) async throws -> WireConversationSummary {
        try await request(.GET, "/v1/conversations/\(Self.escape(conversationID))", as: WireConversationSummary.self)
    }

    /// Adds people to a group (owners only). With `history` ``HistoryAccess/none`` they see only what comes after
    /// they joined. Each person added is told at once on their devices, and pushed when away.
    @discardableResult
    public func addMembers(_ members: [String], to conversationID: String, history: HistoryAccess = .full) async throws -> WireConversation {
        struct Body: Encodable {
            var members: [String]
            var history: HistoryAccess
        }
        return try await request(.POST, "/v1/conversations/\(Self.escape(conversationID))/members",
                                 body: Body(members: members, history: history), as: WireConversation.self)
    }

    /// Removes a member from a group (owners only); with the user's own id, leaves it (anyone may): their devices
    /// get nothing more of it.
    public func removeMember(_ userID: String, from conversationID: String) async throws {
        try await perform(.DELETE, "/v1/conversations/\(Self.escape(conversationID))/members/\(Self.escape(userID))")
    }

    /// Renames a group (owners only); nil or blank removes its title.
    @discardableResult
    public func rename(_ conversationID: String, to title: String?) async throws -> WireConversation {
        try await request(.PATCH, "/v1/conversations/\(Self.escape(conversationID))", body: WireRename(title: title),
                          as: WireConversation.self)
    }

    /// Makes a member an owner, or (with `false`) an owner a member only; the last owner stays (`last_owner`).
    @discardableResult
    public func setOwner(_ userID: String, _ owner: Bool = true, in conversationID: String) async throws -> WireConversation {
        try await request(owner ? .PUT : .DELETE,
                          "/v1/conversations/\(Self.escape(conversationID))/owners/\(Self.escape(userID))",
                          as: WireConversation.self)
    }

    /// Deletes a group for everyone (owners only): its messages are gone and every member's devices learn it.
    public func deleteConversation(_ conversationID: String) async throws {
        try await perform(.DELETE, "/v1/conversations/\(Self.escape(conversationID))")
    }

    /// Messages of one conversation, oldest first: the first `limit` after `after`, else the last `limit` (before
    /// `before`, if given). The server caps `limit`.
    public func messages(in conversationID: String, after: Int64? = nil, before: Int64? = nil, limit: Int? = nil) async throws -> [WireMessage] {
        let path = "/v1/conversations/\(Self.escape(conversationID))/messages"
            + APITransport.pageQuery(after: after, before: before, limit: limit)
        return try await request(.GET, path, as: WireMessageList.self).messages
    }

    /// Posts a message to a conversation and returns it as stored, with its `seq`. The same `id` again stores nothing
    /// new and returns the message stored the first time, so a post whose answer was lost can simply be repeated;
    /// without an `id` the server makes one, and a repeat is a second message. `mentions` (members' user ids, found
    /// in the text with ``MentionText/find(in:members:)``) and `mentionsAll` (`@all`) say whom it mentions.
    ///
    /// - Throws: ``HeraldAPIError`` `invalid_mentions` for a mention of someone who is not a member, or over 50.
    @discardableResult
    public func postMessage(
        in conversationID: String, text: String?, imageURL: String? = nil, id: String? = nil,
        mentions: [String] = [], mentionsAll: Bool = false
    ) async throws -> WireMessage {
        struct Body: Encodable {
            var id: String?
            var text: String?
            var imageURL: String?
            var mentions: [String]?
            var mentionsAll: Bool?
        }
        let body = Body(id: id, text: text, imageURL: imageURL, mentions: mentions.isEmpty ? nil : mentions,
                        mentionsAll: mentionsAll ? true : nil)
        return try await request(.POST, "/v1/conversations/\(Self.escape(conversationID))/messages", body: body, as: WireMessage.self)
    }

    /// Posts the Reply to a notification under `id` (``NotificationAnswer``'s, made from the notification and the
    /// text, so a retry is stored once) and returns it as stored. Should another member already hold that id (they
    /// could guess it, and post first to block the Reply), the server answers `id_conflict` (a repeat of one's own
    /// post is answered with it instead): the Reply is posted once more under the id with 16 random hex digits after
    /// it, which no one can take ahead.
    @discardableResult
    public func postReply(in conversationID: String, text: String, id: String) async throws -> WireMessage {
        do {
            return try await postMessage(in: conversationID, text: text, id: id)
        } catch let error as HeraldAPIError where error.code == "id_conflict" {
            let suffix = String(UInt64.random(in: .min ... .max), radix: 16)
            let unguessed = id + "-" + String(repeating: "0", count: 16 - suffix.count) + suffix
            return try await postMessage(in: conversationID, text: text, id: unguessed)
        }
    }

    /// Edits the text of the user's own message `messageID` (within the server's edit window, 24 hours unless set;
    /// at most its edit limit of times) and returns it as it is now (`edited`). Every member's devices then receive
    /// a `message_edited` entry (``ClientEvent/message(_:)``; apply it with ``Message/amended(by:)``).
    ///
    /// - Throws: ``HeraldAPIError`` `not_the_sender`, `edit_window_passed`, `edit_limit`, `message_deleted`,
    ///   `message_not_found`, `text_too_long`, `invalid_request` (blank text).
    @discardableResult
    public func editMessage(
        _ messageID: String, in conversationID: String, text: String, mentions: [String] = [], mentionsAll: Bool = false
    ) async throws -> WireMessage {
        struct Body: Encodable {
            var text: String
            var mentions: [String]?
            var mentionsAll: Bool?
        }
        return try await request(
            .PATCH, "/v1/conversations/\(Self.escape(conversationID))/messages/\(Self.escape(messageID))",
            body: Body(text: text, mentions: mentions.isEmpty ? nil : mentions, mentionsAll: mentionsAll ? true : nil),
            as: WireMessage.self)
    }

    /// Deletes the message `messageID`: the user's own, or anyone's in a group they own. Returns its tombstone
    /// (`deleted`, no text); every member's devices receive a `message_deleted` entry, and its notifications go.
    ///
    /// - Throws: ``HeraldAPIError`` `not_the_sender`, `message_deleted`, `message_not_found`.
    @discardableResult
    public func deleteMessage(_ messageID: String, in conversationID: String) async throws -> WireMessage {
        try await request(
            .DELETE, "/v1/conversations/\(Self.escape(conversationID))/messages/\(Self.escape(messageID))",
            as: WireMessage.self)
    }

    /// Moves the user's read marker in a conversation up to `seq` (it never moves back). The user's other devices
    /// that were pushed the conversation's messages get a silent push clearing them (not this one,
    /// ``ClientConfiguration/deviceID``).
    public func markRead(_ conversationID: String, upTo seq: Int64) async throws {
        struct Body: Encodable {
            var upTo: Int64
            var device: String?
        }
        try await perform(
            .POST, "/v1/conversations/\(Self.escape(conversationID))/read",
            body: Body(upTo: seq, device: configuration.deviceID))
    }

    /// Registers (or updates) a device of the user for pushes: `token` as the platform issued it (APNs: the
    /// device token in hex). Call it after sign-in and whenever the platform hands the app a new token, with the
    /// system's notification `permission` when the app knows it (``DevicePermission/init(_:)``), so the
    /// troubleshooter can tell the person when notifications are off.
    ///
    /// With `keys` (APNs, FCM and Expo devices; a Web Push subscription carries its own), the server encrypts the
    /// device's pushes to them when its `HERALD_PUSH_CONTENT` is `encrypted`: make them with HeraldPresentation's
    /// `PushKeyPair` (its `registration`), and keep the pair where the Notification Service Extension reads it
    /// before registering its public half, since a push may follow at once. Without them, such a server sends what
    /// its `none` mode sends.
    ///
    /// The answer holds the device's new key (the one before stops working): keep it where the Notification Service
    /// Extension reads it (a shared keychain group), for ``pushedMessage(_:in:deviceKey:server:http:timeout:)``. It
    /// reads what a push withheld, also when the extension cannot decrypt one.
    ///
    /// - Throws: ``HeraldAPIError`` `invalid_request` for keys that are not a P-256 public key and a 16-byte secret
    ///   (or keys on a `webpush` device); `encryption_required` for a device without keys when the server requires
    ///   them (`HERALD_PUSH_REQUIRE_ENCRYPTION`).
    @discardableResult
    public func registerDevice(
        _ deviceID: String, platform: PushPlatform, token: String, permission: DevicePermission? = nil,
        keys: WirePushKeys? = nil
    ) async throws -> WireDeviceRegistration {
        struct Body: Encodable {
            var platform: PushPlatform
            var token: String
            var permission: DevicePermission?
            var keys: WirePushKeys?
        }
        return try await request(
            .PUT, "/v1/devices/\(Self.escape(deviceID))",
            body: Body(platform: platform, token: token, permission: permission, keys: keys), as: WireDeviceRegistration.self)
    }

    /// Tells the server whether the system lets the app notify on a device of the user: after registering it, and
    /// whenever the app comes back to the foreground (the person may have changed it in Settings meanwhile). The troubleshooter
    /// (``notificationCheck()``) and ``devices()`` show it.
    ///
    /// - Throws: ``HeraldAPIError`` `not_found` when the user has no such device (register it first).
    public func reportPermission(_ permission: DevicePermission, forDevice deviceID: String) async throws {
        try await perform(.PUT, "/v1/devices/\(Self.escape(deviceID))/permission",
                          body: WirePermissionReport(permission: permission))
    }

    /// Sends a test notification to a device of the user at once ("Herald" / "Test notification: notifications
    /// reach this device.", data `type` `test`) and says what the push service did with it. One that does not
    /// arrive although the outcome is ``WireTestNotification/Outcome/sent`` was stopped after the push service took
    /// it, most often on the device itself (its permission, Focus, the app's notification settings).
    ///
    /// - Throws: ``HeraldAPIError`` `not_found` when the user has no such device, `rate_limited` (status 429) after
    ///   5 test notifications of the user in a minute.
    public func sendTestNotification(toDevice deviceID: String) async throws -> WireTestNotification {
        try await request(.POST, "/v1/devices/\(Self.escape(deviceID))/test", as: WireTestNotification.self)
    }

    /// The user's troubleshooter: what could keep notifications from them, checked one by one (their devices, the
    /// permission each reported, their level, snooze and quiet hours, the last pushes, their apps' confirmations),
    /// each with what to do about it, and what the server knows of each device.
    public func notificationCheck() async throws -> WireNotificationCheck {
        try await request(.GET, "/v1/me/notifications/check", as: WireNotificationCheck.self)
    }

    /// What became of the user's own notification of one message: why they were or were not pushed, and each step
    /// of each of their devices' pushes, as far back as the server keeps it (``WireDeliveries/trailHours``).
    ///
    /// - Throws: ``HeraldAPIError`` `message_not_found` (404) when there is no such message, or the user cannot see
    ///   it; `not_a_member` (403) when the user is not a member of the conversation now.
    public func deliveries(ofMessage messageID: String, in conversationID: String) async throws -> WireDeliveries {
        let path = "/v1/me/deliveries?conversation=\(Self.escapeQuery(conversationID))&message=\(Self.escapeQuery(messageID))"
        return try await request(.GET, path, as: WireDeliveries.self)
    }

    /// A message pushed to this device, read with the device's key instead of a user's token: what a Notification
    /// Service Extension calls when the push withheld its words (`withheld` in its data, the server's
    /// `HERALD_PUSH_CONTENT`). The key reads only messages whose push was sent to its device.
    ///
    /// - Throws: ``HeraldAPIError`` `not_found` (not pushed to this device, or gone), `invalid_device_key` (the
    ///   device was registered again or removed).
    public static func pushedMessage(
        _ messageID: String, in conversationID: String, deviceKey: String, server: URL, http: any HTTPTransport,
        timeout: Duration = .seconds(10)
    ) async throws -> WirePushedMessage {
        try await APITransport(server: server, credential: deviceKey, http: http, timeout: timeout).request(
            .GET, "/v1/push/conversations/\(escape(conversationID))/messages/\(escape(messageID))",
            as: WirePushedMessage.self)
    }

    /// Removes a device of the user (at sign-out): it gets no more pushes.
    public func removeDevice(_ deviceID: String) async throws {
        try await perform(.DELETE, "/v1/devices/\(Self.escape(deviceID))")
    }

    /// People to start a chat with: known users whose name contains `query` or whose id starts with it, in id
    /// order, from those the server lets this user find (by default, the people they share a conversation with).
    /// `after` is the previous page's `next`.
    public func users(matching query: String = "", after: String? = nil, limit: Int? = nil) async throws -> WireUserList {
        var items = [URLQueryItem(name: "q", value: query)]
        if let after { items.append(URLQueryItem(name: "after", value: after)) }
        if let limit { items.append(URLQueryItem(name: "limit", value: String(limit))) }
        var components = URLComponents()
        components.path = "/v1/users"
        components.queryItems = items
        return try await request(.GET, components.string ?? "/v1/users", as: WireUserList.self)
    }

    /// The user's registered devices.
    public func devices() async throws -> [WireDevice] {
        try await request(.GET, "/v1/devices", as: WireDeviceList.self).devices
    }

    // MARK: Requests

    private func transport(_ token: String) -> APITransport {
        APITransport(server: configuration.server, credential: token, http: configuration.transport.http, timeout: timeout)
    }

    private func request<Answer: Decodable>(
        _ method: APIMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none, as answer: Answer.Type
    ) async throws -> Answer {
        try await renewing { try await transport($0).request(method, path, body: body, as: answer) }
    }

    @discardableResult
    private func perform(_ method: APIMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none) async throws -> Data {
        try await renewing { try await transport($0).perform(method, path, body: body) }
    }

    /// `call` with the current token; once more with a renewed one when the server says it expired and the
    /// configuration can renew it (``ClientConfiguration/renewToken``).
    private func renewing<Answer>(_ call: (String) async throws -> Answer) async throws -> Answer {
        let used = configuration.token
        do {
            return try await call(used)
        } catch let error as HeraldAPIError where error.code == "token_expired" {
            guard let fresh = try await configuration.tokens.renewed(replacing: used) else { throw error }
            return try await call(fresh)
        }
    }

    private static func escape(_ component: String) -> String {
        APITransport.escape(component)
    }

    /// `value` for a query: every character but the unreserved ones escaped (`&`, `=`, `+` and `#` too).
    private static func escapeQuery(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? value
    }
}
