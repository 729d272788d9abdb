import Foundation
import HeraldCore

/// A parsed trace: who the device belongs to, the engine's options, and the timed inputs.
///
/// The format (JSON Lines) is specified in `docs/replay.md`.
public struct Trace: Hashable, Sendable {
    /// One line of the trace, at its instant.
    public struct Step: Hashable, Sendable {
        /// What the line does.
        public enum Action: Hashable, Sendable {
            /// An input to the notifier.
            case input(NotifierInput)
            /// Advance time to this line's instant, firing what is due, and stop.
            case end
        }

        /// The instant, from the start of the trace.
        public var at: Duration
        /// What happens then.
        public var action: Action
    }

    /// The signed-in user (`configure`'s `me`).
    public var userID: String
    /// The banner options (`configure`'s `capacity`, `duration`, `gap`, `coalesce`).
    public var config: BannerConfig
    /// How long a system notification waits for a `pushed` line (`configure`'s `localHold`, in seconds; 0 by default).
    public var localHold: Duration
    /// How long after a conversation's system notification the next ones replace it silently (`configure`'s
    /// `burstWindow`, in seconds; 60 by default, 0 turns bursts off).
    public var burstWindow: Duration
    /// The steps, in order.
    public var steps: [Step]

    /// Parses a trace, one JSON object a line; blank lines are allowed.
    ///
    /// - Throws: ``ReplayError`` naming the first line that is not valid JSON, not a known event, has a field of
    ///   the wrong type or an unknown field, goes back in time, or comes after `end`; or a trace with no `configure`.
    public init(parsing text: String) throws {
        var userID: String?
        var config = BannerConfig.standard
        var localHold = Duration.zero
        var burstWindow = NotificationBursts.defaultWindow
        var steps: [Step] = []
        var last = Duration.zero
        var ended = false
        let decoder = JSONDecoder()

        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            guard !rawLine.allSatisfy(\.isWhitespace) else { continue }
            guard let value = try? decoder.decode(JSONValue.self, from: Data(rawLine.utf8)) else {
                throw ReplayError(line: line, message: "not valid JSON")
            }
            guard case .object(let values) = value else {
                throw ReplayError(line: line, message: "must be a JSON object, not \(value.kind)")
            }
            let fields = TraceFields(line: line, values: values)
            if ended { throw fields.error("nothing may follow `end`") }

            let seconds = try fields.number("at")
            guard seconds >= 0 else { throw fields.error("`at` must not be negative") }
            guard seconds <= TraceFields.maxSeconds else {
                throw fields.error("`at` must be at most \(Int(TraceFields.maxSeconds)) seconds")
            }
            let at = Duration(seconds: seconds)
            guard at >= last else { throw fields.error("`at` goes back in time (\(seconds) after \(last.roundedSeconds))") }
            last = at

            let event = try fields.string("event")
            if event == "configure" {
                guard userID == nil, steps.isEmpty else {
                    throw fields.error("`configure` must come once, before every other event")
                }
                try fields.rejectUnknown(["at", "event", "me", "capacity", "duration", "gap", "coalesce", "localHold", "burstWindow"], in: event)
                userID = try fields.string("me")
                config = try Self.config(from: fields)
                localHold = try fields.seconds("localHold", allowZero: true) ?? .zero
                burstWindow = try fields.seconds("burstWindow", allowZero: true) ?? NotificationBursts.defaultWindow
                continue
            }
            guard userID != nil else { throw fields.error("the trace must begin with `configure` (who is `me`?)") }
            if event == "end" {
                try fields.rejectUnknown(["at", "event"], in: event)
                steps.append(Step(at: at, action: .end))
                ended = true
            } else {
                steps.append(Step(at: at, action: .input(try Self.input(event, from: fields))))
            }
        }
        guard let userID else { throw ReplayError(line: 1, message: "the trace is empty: it needs `configure`") }
        self.userID = userID
        self.config = config
        self.localHold = localHold
        self.burstWindow = burstWindow
        self.steps = steps
    }

    private static func config(from fields: TraceFields) throws -> BannerConfig {
        let standard = BannerConfig.standard
        var capacity = standard.capacity
        if let value = try fields.optionalNumber("capacity") {
            guard value >= 0, value == value.rounded(), value <= 1_000_000 else {
                throw fields.error("`capacity` must be a whole number from 0 to 1000000")
            }
            capacity = Int(value)
        }
        return BannerConfig(
            capacity: capacity,
            duration: try fields.seconds("duration", allowZero: false) ?? standard.duration,
            gap: try fields.seconds("gap", allowZero: true) ?? standard.gap,
            coalesce: try fields.optionalBool("coalesce") ?? standard.coalesce,
            swipeThreshold: standard.swipeThreshold
        )
    }

    private static func input(_ event: String, from fields: TraceFields) throws -> NotifierInput {
        switch event {
        case "app":
            try fields.rejectUnknown(["at", "event", "state"], in: event)
            return .app(try fields.choice("state", of: AppState.self))
        case "permission":
            try fields.rejectUnknown(["at", "event", "granted"], in: event)
            return .permission(granted: try fields.bool("granted"))
        case "open":
            try fields.rejectUnknown(["at", "event", "conversation"], in: event)
            return .open(conversationID: try fields.nullableString("conversation"))
        case "mute":
            try fields.rejectUnknown(["at", "event", "conversation"], in: event)
            return .mute(conversationID: try fields.string("conversation"))
        case "unmute":
            try fields.rejectUnknown(["at", "event", "conversation"], in: event)
            return .unmute(conversationID: try fields.string("conversation"))
        case "level":
            try fields.rejectUnknown(["at", "event", "conversation", "level", "until"], in: event)
            let conversationID = try fields.string("conversation")
            guard fields.has("level"), try fields.optionalString("level") != nil else {
                return .level(conversationID: conversationID, nil)
            }
            return .level(conversationID: conversationID, LevelChoice(
                level: try fields.choice("level", of: NotificationLevel.self), until: try fields.optionalDate("until")))
        case "settings":
            try fields.rejectUnknown(
                ["at", "event", "defaultLevel", "snoozeUntil", "timeZone", "quietHours", "mentionsDuringQuietHours",
                 "badgeCountsMuted"], in: event)
            return .settings(try settings(from: fields))
        case "message":
            return .message(try message(from: fields))
        case "show":
            try fields.rejectUnknown(["at", "event", "id", "message", "tone", "icon", "duration"], in: event)
            let tones = BannerTone.allCases.filter { $0 != .message }
            return .show(
                Banner.general(
                    id: try fields.string("id"),
                    message: try fields.string("message"),
                    tone: try fields.choice("tone", of: BannerTone.self, among: tones),
                    icon: try fields.optionalString("icon"),
                    duration: try fields.seconds("duration", allowZero: false) ?? .seconds(5)
                )
            )
        case "tap":
            try fields.rejectUnknown(["at", "event"], in: event)
            return .gesture(.tap)
        case "close":
            try fields.rejectUnknown(["at", "event"], in: event)
            return .gesture(.close)
        case "swipe":
            try fields.rejectUnknown(["at", "event", "dy"], in: event)
            return .gesture(.swipe(dy: try fields.number("dy")))
        case "touch":
            try fields.rejectUnknown(["at", "event", "phase"], in: event)
            return try fields.choice("phase", of: TouchPhase.self) == .down ? .gesture(.touchDown) : .gesture(.touchUp)
        case "dismissAll":
            try fields.rejectUnknown(["at", "event"], in: event)
            return .dismissAll
        case "pushed":
            try fields.rejectUnknown(["at", "event", "conversation", "message"], in: event)
            return .pushed(conversationID: try fields.string("conversation"), messageID: try fields.string("message"))
        default:
            throw fields.error("unknown event `\(event)`")
        }
    }

    /// A `settings` line: the fields of `PUT /v1/me/notifications`, every one optional, checked as the server does.
    private static func settings(from fields: TraceFields) throws -> NotificationSettings {
        var values = fields.values
        values["at"] = nil
        values["event"] = nil
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let settings: NotificationSettings
        do {
            settings = try decoder.decode(NotificationSettings.self, from: JSONEncoder().encode(JSONValue.object(values)))
        } catch {
            throw fields.error("settings that are not valid: \(error)")
        }
        if let problem = settings.problem { throw fields.error(problem) }
        return settings
    }

    private enum TouchPhase: String, CaseIterable {
        case down, up
    }

    /// A message line's `change`: the event it is, if it is one (`{"type", "members": [{"id", "name"}], "title"}`).
    private static func change(from fields: TraceFields) throws -> ConversationEvent? {
        guard fields.has("change") else { return nil }
        let change = try fields.object("change")
        try change.rejectUnknown(["type", "members", "title", "messageId"], in: "change")
        let members = try change.objects("members").map { member in
            try member.rejectUnknown(["id", "name"], in: "member")
            return Person(id: try member.string("id"), displayName: try member.string("name"))
        }
        return ConversationEvent(
            kind: try change.choice("type", of: ConversationEvent.Kind.self), members: members,
            title: try change.optionalString("title"), messageID: try change.optionalString("messageId"))
    }

    /// A message's optional `seq`: a whole number from 1.
    private static func seq(from fields: TraceFields) throws -> Int64? {
        guard let number = try fields.optionalNumber("seq") else { return nil }
        guard let seq = Int64(exactly: number), seq > 0 else { throw fields.error("`seq` must be a whole number from 1") }
        return seq
    }

    private static func message(from fields: TraceFields) throws -> IncomingMessage {
        try fields.rejectUnknown(
            ["at", "event", "id", "conversation", "sender", "text", "imageURL", "change", "sentAt", "mentions", "mentionsAll", "seq"],
            in: "message")
        let conversation = try fields.object("conversation")
        try conversation.rejectUnknown(["id", "kind", "title"], in: "message")
        let sender = try fields.object("sender")
        try sender.rejectUnknown(["id", "name", "avatarURL"], in: "message")
        let conversationID = try conversation.string("id")
        let senderID = try sender.string("id")
        let seconds = try fields.number("at")
        return IncomingMessage(
            message: Message(
                id: try fields.string("id"),
                conversationID: conversationID,
                senderID: senderID,
                text: try fields.optionalString("text"),
                imageURL: try fields.optionalURL("imageURL"),
                sentAt: try fields.optionalDate("sentAt") ?? Date(timeIntervalSinceReferenceDate: seconds),
                seq: try seq(from: fields),
                event: try change(from: fields),
                mentions: try fields.strings("mentions"),
                mentionsAll: try fields.optionalBool("mentionsAll") ?? false
            ),
            conversation: Conversation(
                id: conversationID,
                kind: try conversation.choice("kind", of: Conversation.Kind.self),
                title: try conversation.optionalString("title")
            ),
            sender: Person(
                id: senderID,
                displayName: try sender.string("name"),
                avatarURL: try sender.optionalURL("avatarURL")
            )
        )
    }
}
