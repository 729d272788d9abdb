import Foundation

/// One thing that happened to a message's push, for a member or one of their devices: what the server decided and
/// why, what became of the push, what the push service answered. A part of a message's delivery trail
/// (``WireDeliveries``) and of a device's last pushes (``WireNotificationCheck/Device/lastPushes``).
public struct WireDeliveryStep: Codable, Hashable, Sendable {
    /// What happened.
    ///
    /// A value this build does not know (a newer server's) is ``other(_:)``, kept as it came.
    public enum Kind: Hashable, Sendable {
        /// A push was queued (``WireDeliveryStep/reasons``: how it goes: quiet hours, a burst, a wait).
        case queued
        /// No push (``WireDeliveryStep/reasons``: muted, unmentioned, snoozed, or no provider for the platform).
        case skipped
        /// Held back: shown live and confirmed by a connected device.
        case confirmed
        /// Held back: read before it went.
        case read
        /// Given up before a push service saw it (``WireDeliveryStep/detail``: why).
        case dropped
        /// The push service took it (``WireDeliveryStep/detail``: the id it gave).
        case sent
        /// Written to a demo server's log instead of sent.
        case logged
        /// The push service said to try later (``WireDeliveryStep/detail``: what it said).
        case retried
        /// The push service refused it for good (``WireDeliveryStep/detail``: what it said).
        case refused
        /// The push service said the token is dead, and the device was removed (``WireDeliveryStep/detail``).
        case deviceRemoved
        /// The push service answered with a redirect, which is not followed.
        case redirected
        /// Not sent in time.
        case expired
        /// Expo's receipt: the push reached Apple's or Google's service.
        case delivered
        /// A step this build does not know, as the server wrote it.
        case other(String)
    }

    /// Why, or how, a step happened.
    ///
    /// A value this build does not know (a newer server's) is ``other(_:)``, kept as it came.
    public enum Reason: Hashable, Sendable {
        /// Sent without sound: the member's quiet hours.
        case quietHours
        /// A later message of a burst: it replaces the burst's notification silently.
        case burst
        /// Waits for the device's stream to confirm the message.
        case waitsForDevice
        /// Waits for any stream of the member to confirm the message.
        case waitsForMember
        /// Waits for a read elsewhere (the server's push delay).
        case delayed
        /// The conversation's level is nothing.
        case muted
        /// The conversation's level is mentions, and the message does not mention the member.
        case unmentioned
        /// The member snoozed notifications.
        case snoozed
        /// No push service is configured for the device's platform.
        case noProvider
        /// An edit's or a deletion's follow-up, not the message's first push.
        case followUp
        /// A reason this build does not know, as the server wrote it.
        case other(String)
    }

    /// When.
    public var at: Date
    /// What happened.
    public var step: Kind
    /// Why, or how (empty for most steps).
    public var reasons: [Reason]
    /// The push service's id or words, or why it was dropped.
    public var detail: String?

    /// A step.
    public init(at: Date, step: Kind, reasons: [Reason] = [], detail: String? = nil) {
        self.at = at
        self.step = step
        self.reasons = reasons
        self.detail = detail
    }

    private enum CodingKeys: String, CodingKey {
        case at, step, reasons, detail
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        at = try container.decode(Date.self, forKey: .at)
        step = try container.decode(Kind.self, forKey: .step)
        reasons = try container.decodeIfPresent([Reason].self, forKey: .reasons) ?? []
        detail = try container.decodeIfPresent(String.self, forKey: .detail)
    }
}

/// The answer to `GET /v1/me/deliveries?conversation=C&message=M`: what became of one message's pushes, member by
/// member and device by device, as far back as the server keeps it (``trailHours``). A person sees their own; the
/// app's backend sees every member's.
public struct WireDeliveries: Codable, Hashable, Sendable {
    /// The message the trail is about.
    public struct Message: Codable, Hashable, Sendable {
        /// Its id.
        public var id: String
        /// Its place in the conversation.
        public var seq: Int64
        /// Its sender's user id.
        public var sender: String
        /// When it was sent.
        public var sentAt: Date

        /// A message's particulars.
        public init(id: String, seq: Int64, sender: String, sentAt: Date) {
            self.id = id
            self.seq = seq
            self.sender = sender
            self.sentAt = sentAt
        }
    }

    /// In one word, why a member was or was not notified of the message.
    ///
    /// A value this build does not know (a newer server's) is ``other(_:)``, kept as it came.
    public enum Summary: Hashable, Sendable {
        /// The member sent it.
        case own
        /// A silent message (posted by the app's backend to notify no one).
        case silent
        /// The member muted the conversation.
        case muted
        /// The conversation notifies the member of mentions only, and this does not mention them.
        case unmentioned
        /// The member snoozed notifications.
        case snoozed
        /// The member read it before a push went.
        case read
        /// The member has no device registered for pushes.
        case noDevices
        /// A push went to a device of the member.
        case pushed
        /// A connected device showed it live and confirmed it, so no push went.
        case confirmed
        /// No push went, and none is waiting (the steps say why).
        case notPushed
        /// A push is still waiting to go.
        case pending
        /// A summary this build does not know, as the server wrote it.
        case other(String)
    }

    /// One member's part of the trail.
    public struct Member: Codable, Hashable, Sendable {
        /// The member's user id.
        public var user: String
        /// Why they were or were not notified, in one word.
        public var summary: Summary
        /// Whether they have read the message.
        public var read: Bool
        /// What happened for the member as a whole (all their devices at once).
        public var steps: [WireDeliveryStep]
        /// What happened on each of their devices.
        public var devices: [Device]

        /// A member's part.
        public init(user: String, summary: Summary, read: Bool, steps: [WireDeliveryStep] = [], devices: [Device] = []) {
            self.user = user
            self.summary = summary
            self.read = read
            self.steps = steps
            self.devices = devices
        }
    }

    /// One device's part of a member's trail.
    public struct Device: Codable, Hashable, Sendable, Identifiable {
        /// The device's id.
        public var id: String
        /// Its push service.
        public var platform: PushPlatform
        /// Whether its stream confirmed taking the message in.
        public var confirmed: Bool
        /// What happened to the message's push on it.
        public var steps: [WireDeliveryStep]

        /// A device's part.
        public init(id: String, platform: PushPlatform, confirmed: Bool, steps: [WireDeliveryStep] = []) {
            self.id = id
            self.platform = platform
            self.confirmed = confirmed
            self.steps = steps
        }
    }

    /// The conversation's id.
    public var conversation: String
    /// The message.
    public var message: Message
    /// How many hours the server keeps a trail: older steps are gone.
    public var trailHours: Int
    /// The members the caller may see: themselves (the app's backend: every member, or the one it asked for).
    public var members: [Member]

    /// A message's delivery trail.
    public init(conversation: String, message: Message, trailHours: Int, members: [Member]) {
        self.conversation = conversation
        self.message = message
        self.trailHours = trailHours
        self.members = members
    }
}

extension WireDeliveryStep.Kind: Codable {
    /// The step the wire's `value` names; ``other(_:)`` for one this build does not know.
    public init(rawValue value: String) {
        switch value {
        case "queued": self = .queued
        case "skipped": self = .skipped
        case "confirmed": self = .confirmed
        case "read": self = .read
        case "dropped": self = .dropped
        case "sent": self = .sent
        case "logged": self = .logged
        case "retried": self = .retried
        case "refused": self = .refused
        case "device_removed": self = .deviceRemoved
        case "redirected": self = .redirected
        case "expired": self = .expired
        case "delivered": self = .delivered
        default: self = .other(value)
        }
    }

    /// Its name on the wire.
    public var rawValue: String {
        switch self {
        case .queued: "queued"
        case .skipped: "skipped"
        case .confirmed: "confirmed"
        case .read: "read"
        case .dropped: "dropped"
        case .sent: "sent"
        case .logged: "logged"
        case .retried: "retried"
        case .refused: "refused"
        case .deviceRemoved: "device_removed"
        case .redirected: "redirected"
        case .expired: "expired"
        case .delivered: "delivered"
        case .other(let value): value
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension WireDeliveryStep.Reason: Codable {
    /// The reason the wire's `value` names; ``other(_:)`` for one this build does not know.
    public init(rawValue value: String) {
        switch value {
        case "quiet_hours": self = .quietHours
        case "burst": self = .burst
        case "waits_for_device": self = .waitsForDevice
        case "waits_for_member": self = .waitsForMember
        case "delayed": self = .delayed
        case "muted": self = .muted
        case "unmentioned": self = .unmentioned
        case "snoozed": self = .snoozed
        case "no_provider": self = .noProvider
        case "follow_up": self = .followUp
        default: self = .other(value)
        }
    }

    /// Its name on the wire.
    public var rawValue: String {
        switch self {
        case .quietHours: "quiet_hours"
        case .burst: "burst"
        case .waitsForDevice: "waits_for_device"
        case .waitsForMember: "waits_for_member"
        case .delayed: "delayed"
        case .muted: "muted"
        case .unmentioned: "unmentioned"
        case .snoozed: "snoozed"
        case .noProvider: "no_provider"
        case .followUp: "follow_up"
        case .other(let value): value
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension WireDeliveries.Summary: Codable {
    /// The summary the wire's `value` names; ``other(_:)`` for one this build does not know.
    public init(rawValue value: String) {
        switch value {
        case "own": self = .own
        case "silent": self = .silent
        case "muted": self = .muted
        case "unmentioned": self = .unmentioned
        case "snoozed": self = .snoozed
        case "read": self = .read
        case "no_devices": self = .noDevices
        case "pushed": self = .pushed
        case "confirmed": self = .confirmed
        case "not_pushed": self = .notPushed
        case "pending": self = .pending
        default: self = .other(value)
        }
    }

    /// Its name on the wire.
    public var rawValue: String {
        switch self {
        case .own: "own"
        case .silent: "silent"
        case .muted: "muted"
        case .unmentioned: "unmentioned"
        case .snoozed: "snoozed"
        case .read: "read"
        case .noDevices: "no_devices"
        case .pushed: "pushed"
        case .confirmed: "confirmed"
        case .notPushed: "not_pushed"
        case .pending: "pending"
        case .other(let value): value
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
