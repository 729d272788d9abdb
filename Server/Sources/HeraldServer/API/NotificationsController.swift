import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import Hummingbird

/// Who hears what (docs/behaviour.md §1): `GET`/`PUT /v1/me/notifications` (default level, snooze, quiet hours,
/// time zone, the badge's choice) and `PUT /v1/conversations/{id}/notifications` (a conversation's level, for ever
/// or until an instant). Every change reaches the user's connected devices at once, as a stream frame.
struct NotificationsController {
    let store: any ReadStateStore
    let messenger: Messenger
    let hub: Hub
    let userLimits: UserLimits
    let clock: WallClock

    /// The furthest an `until` or a snooze may reach: a year and a day. Further is a mistake, not a choice ("for
    /// ever" is no `until`).
    static let furthest: TimeInterval = 366 * 86_400

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.get("me/notifications", use: settings)
        group.put("me/notifications", use: changeSettings)
        group.put("conversations/:id/notifications", use: setLevel)
    }

    @Sendable func settings(_ request: Request, context: HeraldRequestContext) async throws -> WireNotificationSettings {
        let identity = try context.requireIdentity()
        return WireNotificationSettings(settings: try await store.notificationSettings(of: identity.userID))
    }

    /// Changes the fields given (a field left out stays as it was; `null` clears `snoozeUntil` and `timeZone`),
    /// checks the whole, keeps it, tells the user's devices and answers with the settings now.
    @Sendable func changeSettings(_ request: Request, context: HeraldRequestContext) async throws -> WireNotificationSettings {
        let identity = try context.requireIdentity()
        let change = try await request.decodeJSON(as: SettingsChange.self, context: context)
        try userLimits.change(by: identity.userID)
        var settings = try await store.notificationSettings(of: identity.userID)
        if let level = change.defaultLevel { settings.defaultLevel = try Self.level(level, field: "defaultLevel") }
        if let snooze = change.snoozeUntil {
            settings.snoozeUntil = try snooze.map { try until($0, field: "snoozeUntil") }
        }
        if let zone = change.timeZone { settings.timeZone = zone }
        if let windows = change.quietHours { settings.quietHours = windows }
        if let ring = change.mentionsDuringQuietHours { settings.mentionsDuringQuietHours = ring }
        if let counts = change.badgeCountsMuted { settings.badgeCountsMuted = counts }
        if let problem = settings.problem { throw APIError.invalidRequest(problem) }
        try await store.setNotificationSettings(settings, of: identity.userID)
        hub.send(.notifications(settings), toUser: identity.userID)
        return WireNotificationSettings(settings: settings)
    }

    struct LevelRequest: Decodable {
        var level: String?
        var until: String?
    }

    /// Sets the caller's level for a conversation (`null`: back to their default), and tells their devices.
    @Sendable func setLevel(_ request: Request, context: HeraldRequestContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let id = try context.parameters.id("id")
        let body = try await request.decodeJSON(as: LevelRequest.self, context: context)
        var choice: LevelChoice?
        if let level = body.level {
            choice = LevelChoice(
                level: try Self.level(level, field: "level"), until: try body.until.map { try until($0, field: "until") })
        } else if body.until != nil {
            throw APIError.invalidRequest("`until` needs a `level`")
        }
        try await apply(choice, to: id, for: identity)
        return .noContent
    }

    /// Keeps `choice` as `identity`'s level for `conversationID` and tells their connected devices.
    func apply(_ choice: LevelChoice?, to conversationID: String, for identity: Identity) async throws {
        _ = try await messenger.conversation(conversationID, for: identity)
        try userLimits.change(by: identity.userID)
        try await store.setLevel(choice, userID: identity.userID, conversationID: conversationID)
        hub.send(.level(conversationID: conversationID, choice), toUser: identity.userID)
    }

    static func level(_ text: String, field: String) throws -> NotificationLevel {
        guard let level = NotificationLevel(rawValue: text) else {
            throw APIError.invalidRequest(
                "`\(field)` must be all, mentions or nothing, not \"\(ControlCharacters.escaped(String(text.prefix(32))))\"")
        }
        return level
    }

    /// An instant from the future up to ``furthest``, written as ISO 8601.
    func until(_ text: String, field: String) throws -> Date {
        guard let date = WireJSON.date(text) else {
            throw APIError.invalidRequest("`\(field)` must be an ISO 8601 instant, like 2026-11-25T08:00:00Z")
        }
        let now = clock.now()
        guard date > now else { throw APIError.invalidRequest("`\(field)` is in the past") }
        guard date.timeIntervalSince(now) <= Self.furthest else {
            throw APIError.invalidRequest("`\(field)` is more than 366 days away (leave it out for ever)")
        }
        return date
    }
}

/// A change to a user's settings: each field present replaces what was; `snoozeUntil` and `timeZone` may be `null`
/// (outer nil: not given; inner nil: cleared).
struct SettingsChange: Decodable {
    var defaultLevel: String?
    var snoozeUntil: String??
    var timeZone: String??
    var quietHours: [QuietWindow]?
    var mentionsDuringQuietHours: Bool?
    var badgeCountsMuted: Bool?

    private enum CodingKeys: String, CodingKey {
        case defaultLevel, snoozeUntil, timeZone, quietHours, mentionsDuringQuietHours, badgeCountsMuted
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        defaultLevel = try container.decodeIfPresent(String.self, forKey: .defaultLevel)
        if container.contains(.snoozeUntil) { snoozeUntil = .some(try container.decodeIfPresent(String.self, forKey: .snoozeUntil)) }
        if container.contains(.timeZone) { timeZone = .some(try container.decodeIfPresent(String.self, forKey: .timeZone)) }
        quietHours = try container.decodeIfPresent([QuietWindow].self, forKey: .quietHours)
        mentionsDuringQuietHours = try container.decodeIfPresent(Bool.self, forKey: .mentionsDuringQuietHours)
        badgeCountsMuted = try container.decodeIfPresent(Bool.self, forKey: .badgeCountsMuted)
    }
}

/// `GET /v1/me/notifications`'s answer: the settings, every field present.
struct WireNotificationSettings: ResponseEncodable {
    var settings: NotificationSettings

    func encode(to encoder: any Encoder) throws {
        try settings.encode(to: encoder)
    }
}
