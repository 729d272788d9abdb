import Foundation

/// How much of a conversation a member hears about (docs/behaviour.md §1).
public enum NotificationLevel: String, Codable, Hashable, Sendable, CaseIterable {
    /// Every message.
    case all
    /// Only messages that mention the member (by name or `@all`); in a direct chat every message is one.
    case mentions
    /// Nothing, mentions included: the conversation is muted.
    case nothing
}

/// A member's own level for one conversation, for ever or until an instant; past it the member's default applies.
public struct LevelChoice: Codable, Hashable, Sendable {
    /// The level.
    public var level: NotificationLevel
    /// When it ends; nil for ever.
    public var until: Date?

    /// A choice.
    public init(level: NotificationLevel, until: Date? = nil) {
        self.level = level
        self.until = until
    }

    /// Whether it still holds at `instant`.
    public func holds(at instant: Date) -> Bool {
        until.map { instant < $0 } ?? true
    }

    /// The existing mute: `nothing`, for ever.
    public static let muted = LevelChoice(level: .nothing)
}

/// A day of the week, as the API names it.
public enum Weekday: String, Codable, Hashable, Sendable, CaseIterable {
    case sun, mon, tue, wed, thu, fri, sat

    /// Its number in the Gregorian calendar (`Calendar`'s `weekday`: Sunday is 1).
    public var number: Int { Self.allCases.firstIndex(of: self)! + 1 }

    /// The day before.
    public var previous: Weekday { Self.allCases[(number + 5) % 7] }
}

/// One weekly quiet window: on `days`, from `start` to `end` (minutes after local midnight). A window whose end is
/// not after its start crosses midnight: it began on one of `days` and ends the next morning.
public struct QuietWindow: Codable, Hashable, Sendable {
    /// The days it starts on.
    public var days: [Weekday]
    /// `HH:MM`, 00:00 to 23:59.
    public var start: String
    /// `HH:MM`, 00:00 to 24:00.
    public var end: String

    /// A window.
    public init(days: [Weekday], start: String, end: String) {
        self.days = days
        self.start = start
        self.end = end
    }

    /// Minutes after midnight of an `HH:MM` time; nil when malformed or out of range (`24:00` only when allowed).
    static func minutes(_ text: String, allowingMidnightEnd: Bool) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0 >= "0" && $0 <= "9" } }),
              let hours = Int(parts[0]), let minutes = Int(parts[1]), minutes < 60
        else { return nil }
        if hours == 24 && minutes == 0 && allowingMidnightEnd { return 24 * 60 }
        return hours < 24 ? hours * 60 + minutes : nil
    }

    /// Whether local `weekday` at `minute` (after midnight) falls in it.
    func contains(weekday: Weekday, minute: Int) -> Bool {
        guard let start = Self.minutes(start, allowingMidnightEnd: false),
              let end = Self.minutes(end, allowingMidnightEnd: true)
        else { return false }
        if start < end { return days.contains(weekday) && minute >= start && minute < end }
        return (days.contains(weekday) && minute >= start) || (days.contains(weekday.previous) && minute < end)
    }
}

/// A user's notification settings, kept by the server and the same on every device (docs/behaviour.md §1).
public struct NotificationSettings: Codable, Hashable, Sendable {
    /// The level of conversations with no level of their own (or whose own has ended). `all` unless set.
    public var defaultLevel: NotificationLevel
    /// Do not disturb: until this instant nothing notifies (no banner, no notification, no push).
    public var snoozeUntil: Date?
    /// The IANA time zone quiet hours are read in (`Europe/Berlin`); nil when none was given.
    public var timeZone: String?
    /// Weekly windows in which system notifications and pushes arrive without sound (at most 7).
    public var quietHours: [QuietWindow]
    /// Whether a mention rings during quiet hours.
    public var mentionsDuringQuietHours: Bool
    /// Whether conversations at `nothing` count towards the badge and the unread total.
    public var badgeCountsMuted: Bool

    /// Settings; the defaults are a user who set nothing.
    public init(
        defaultLevel: NotificationLevel = .all, snoozeUntil: Date? = nil, timeZone: String? = nil,
        quietHours: [QuietWindow] = [], mentionsDuringQuietHours: Bool = false, badgeCountsMuted: Bool = false
    ) {
        self.defaultLevel = defaultLevel
        self.snoozeUntil = snoozeUntil
        self.timeZone = timeZone
        self.quietHours = quietHours
        self.mentionsDuringQuietHours = mentionsDuringQuietHours
        self.badgeCountsMuted = badgeCountsMuted
    }

    /// The most quiet windows a user may have.
    public static let maxQuietWindows = 7

    /// Whether snooze holds at `instant`.
    public func snoozed(at instant: Date) -> Bool {
        snoozeUntil.map { instant < $0 } ?? false
    }

    /// Whether `instant` falls in a quiet window, read in ``timeZone`` (daylight-saving time included).
    public func isQuiet(at instant: Date) -> Bool {
        guard !quietHours.isEmpty, let timeZone, let zone = TimeZone(identifier: timeZone) else { return false }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: instant)
        guard let day = parts.weekday, let hour = parts.hour, let minute = parts.minute else { return false }
        let weekday = Weekday.allCases[(day + 6) % 7]
        return quietHours.contains { $0.contains(weekday: weekday, minute: hour * 60 + minute) }
    }

    /// Why these settings cannot be kept, or nil when they can: an unknown time zone, quiet hours without one,
    /// more than ``maxQuietWindows`` windows, a window with no day, a day twice, a malformed time or an empty span.
    public var problem: String? {
        if let timeZone {
            // tzdata's `Factory` names no place, and JavaScript's Intl (browsers, Node, Hermes) refuses it: a zone
            // one engine takes and the other does not would make two devices disagree about quiet hours.
            guard Self.isZoneName(timeZone), timeZone != "Factory", TimeZone(identifier: timeZone) != nil else {
                return "timeZone \"\(timeZone.prefix(64))\" is not an IANA time zone (like Europe/Berlin)"
            }
        } else if !quietHours.isEmpty {
            return "quiet hours need a timeZone"
        }
        guard quietHours.count <= Self.maxQuietWindows else {
            return "at most \(Self.maxQuietWindows) quiet windows, not \(quietHours.count)"
        }
        for (index, window) in quietHours.enumerated() {
            let name = "quietHours[\(index)]"
            guard !window.days.isEmpty else { return "\(name) has no days" }
            guard Set(window.days).count == window.days.count else { return "\(name) names a day twice" }
            guard let start = QuietWindow.minutes(window.start, allowingMidnightEnd: false) else {
                return "\(name).start \"\(window.start.prefix(16))\" is not a time from 00:00 to 23:59"
            }
            guard let end = QuietWindow.minutes(window.end, allowingMidnightEnd: true) else {
                return "\(name).end \"\(window.end.prefix(16))\" is not a time from 00:00 to 24:00"
            }
            guard start != end else { return "\(name) starts and ends at \(window.start): it has no length" }
        }
        return nil
    }

    /// An IANA name's shape: `Area/Place` of letters, digits, `_`, `-`, `+`, or `UTC`; at most 64 bytes.
    static func isZoneName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && !name.hasPrefix("/") && !name.contains("..")
            && name.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(Character(scalar))
                    || "_-+/".unicodeScalars.contains(scalar))
            }
    }

    private enum CodingKeys: String, CodingKey {
        case defaultLevel, snoozeUntil, timeZone, quietHours, mentionsDuringQuietHours, badgeCountsMuted
    }

    /// Decodes settings; a missing field takes its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        defaultLevel = try container.decodeIfPresent(NotificationLevel.self, forKey: .defaultLevel) ?? .all
        snoozeUntil = try container.decodeIfPresent(Date.self, forKey: .snoozeUntil)
        timeZone = try container.decodeIfPresent(String.self, forKey: .timeZone)
        quietHours = try container.decodeIfPresent([QuietWindow].self, forKey: .quietHours) ?? []
        mentionsDuringQuietHours = try container.decodeIfPresent(Bool.self, forKey: .mentionsDuringQuietHours) ?? false
        badgeCountsMuted = try container.decodeIfPresent(Bool.self, forKey: .badgeCountsMuted) ?? false
    }

    /// Encodes every field (`null` for no snooze and no time zone).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(defaultLevel, forKey: .defaultLevel)
        try container.encode(snoozeUntil, forKey: .snoozeUntil)
        try container.encode(timeZone, forKey: .timeZone)
        try container.encode(quietHours, forKey: .quietHours)
        try container.encode(mentionsDuringQuietHours, forKey: .mentionsDuringQuietHours)
        try container.encode(badgeCountsMuted, forKey: .badgeCountsMuted)
    }
}
