import Foundation

/// The answer to `POST /v1/devices/{deviceId}/test`: what the device's push service said to a test notification.
public struct WireTestNotification: Codable, Hashable, Sendable {
    /// What became of it.
    public enum Outcome: String, Codable, Hashable, Sendable, CaseIterable {
        /// The push service took it.
        case sent
        /// Written to the server's log instead (a `--demo` server sends nothing).
        case logged
        /// The push service asked to try later (rate limited, or down): nothing was sent.
        case retry
        /// The push service said the token is dead: the device was removed, and the app must register again.
        case deviceRemoved = "device_removed"
        /// The push service refused it (``reason`` says why).
        case refused
        /// The push service answered with a redirect, which is never followed.
        case redirected
        /// The server has no push service for the device's platform (``reason`` names the setting).
        case noProvider = "no_provider"
        /// An outcome this build does not know (a newer server's): ``reason`` says what happened.
        case unknown

        /// Reads an outcome, taking one this build does not know as ``unknown``.
        public init(from decoder: any Decoder) throws {
            self = Outcome(rawValue: try decoder.singleValueContainer().decode(String.self)) ?? .unknown
        }
    }

    /// The device.
    public var device: String
    /// Its push service.
    public var platform: PushPlatform
    /// What became of the test.
    public var outcome: Outcome
    /// The id the push service gave it (APNs' `apns-id`, FCM's message name, Expo's ticket, Web Push's location).
    public var providerID: String?
    /// The push service's words, or the server's, when it was not sent.
    public var reason: String?

    /// An answer.
    public init(device: String, platform: PushPlatform, outcome: Outcome, providerID: String? = nil, reason: String? = nil) {
        self.device = device
        self.platform = platform
        self.outcome = outcome
        self.providerID = providerID
        self.reason = reason
    }
}

/// One thing that happened to a message's push (docs/push.md, "Why a phone did not ring"): a step of the delivery
/// trail, as `GET /v1/me/deliveries` and the backend's `…/deliveries` list them.
public struct WireTrailStep: Codable, Hashable, Sendable {
    /// When.
    public var at: Date
    /// What happened: `queued`, `skipped`, `confirmed`, `read`, `dropped`, `sent`, `logged`, `retried`, `refused`,
    /// `device_removed`, `redirected`, `expired`, `delivered`.
    public var step: String
    /// Why, or how: `quiet_hours`, `burst`, `waits_for_device`, `waits_for_member`, `delayed`, `muted`,
    /// `unmentioned`, `snoozed`, `no_provider`, `follow_up`.
    public var reasons: [String]
    /// The push service's id or words.
    public var detail: String?

    /// A step.
    public init(at: Date, step: String, reasons: [String] = [], detail: String? = nil) {
        self.at = at
        self.step = step
        self.reasons = reasons
        self.detail = detail
    }
}

/// A message's delivery trail: for each member it concerned, what was decided and why, and for each of their
/// devices what the push service answered, whether the device confirmed it live, and whether the member read it.
public struct WireDeliveries: Codable, Hashable, Sendable {
    /// The message.
    public struct Message: Codable, Hashable, Sendable {
        /// Its id.
        public var id: String
        /// Its place in the log.
        public var seq: Int64
        /// Who sent it.
        public var sender: String
        /// When.
        public var sentAt: Date

        /// A message.
        public init(id: String, seq: Int64, sender: String, sentAt: Date) {
            self.id = id
            self.seq = seq
            self.sender = sender
            self.sentAt = sentAt
        }
    }

    /// One device of a member.
    public struct Device: Codable, Hashable, Sendable {
        /// The device's id.
        public var id: String
        /// Its push service (nil: the device is gone since).
        public var platform: PushPlatform?
        /// Whether its stream confirmed taking the message in (shown live).
        public var confirmed: Bool
        /// What happened to its push, oldest first.
        public var steps: [WireTrailStep]

        /// A device.
        public init(id: String, platform: PushPlatform?, confirmed: Bool, steps: [WireTrailStep]) {
            self.id = id
            self.platform = platform
            self.confirmed = confirmed
            self.steps = steps
        }
    }

    /// One member.
    public struct Member: Codable, Hashable, Sendable {
        /// The member.
        public var user: String
        /// In one word, why they were or were not told: `own`, `silent`, `muted`, `unmentioned`, `snoozed`,
        /// `read` (read before a push went), `no_devices`, `pushed` (a device's push service took it), `confirmed`
        /// (shown live instead), `pending` (waiting, or being tried again), `not_pushed` (anything else: each
        /// device's steps say).
        public var summary: String
        /// Whether they have read it.
        public var read: Bool
        /// Steps about the member, all their devices at once (their level, their snooze).
        public var steps: [WireTrailStep]
        /// Their devices.
        public var devices: [Device]

        /// A member.
        public init(user: String, summary: String, read: Bool, steps: [WireTrailStep], devices: [Device]) {
            self.user = user
            self.summary = summary
            self.read = read
            self.steps = steps
            self.devices = devices
        }
    }

    /// The conversation.
    public var conversation: String
    /// The message.
    public var message: Message
    /// How many hours steps are kept (`HERALD_TRAIL_HOURS`; 0: the trail is off).
    public var trailHours: Int
    /// The members, by id.
    public var members: [Member]

    /// A trail.
    public init(conversation: String, message: Message, trailHours: Int, members: [Member]) {
        self.conversation = conversation
        self.message = message
        self.trailHours = trailHours
        self.members = members
    }
}

/// The answer to `GET /v1/me/notifications/check`: the troubleshooter's checks, each with what to do, and the
/// caller's devices with their last pushes.
public struct WireNotificationCheck: Codable, Hashable, Sendable {
    /// One check.
    public struct Check: Codable, Hashable, Sendable {
        /// How it went.
        public enum State: String, Codable, Hashable, Sendable, CaseIterable {
            /// Nothing to do.
            case ok
            /// Notifications arrive, but fewer or quieter than the person may expect.
            case warning
            /// Something stops notifications.
            case problem

            /// Reads a state, taking one this build does not know as ``warning``: something to read, not to ignore.
            public init(from decoder: any Decoder) throws {
                self = State(rawValue: try decoder.singleValueContainer().decode(String.self)) ?? .warning
            }
        }

        /// Which check: `devices`, `permission`, `level`, `snooze`, `quiet_hours`, `pushes`, `confirmations`.
        public var id: String
        /// How it went.
        public var state: State
        /// What it checks, in words a person reads.
        public var title: String
        /// What it found.
        public var detail: String
        /// What to do, when there is something to do.
        public var action: String?

        /// A check.
        public init(id: String, state: State, title: String, detail: String, action: String? = nil) {
            self.id = id
            self.state = state
            self.title = title
            self.detail = detail
            self.action = action
        }
    }

    /// One push of a device, as its last pushes list it.
    public struct Push: Codable, Hashable, Sendable {
        /// When.
        public var at: Date
        /// What happened (a ``WireTrailStep/step``).
        public var step: String
        /// The push service's id or words.
        public var detail: String?
        /// The conversation.
        public var conversation: String
        /// The message, when it is still there.
        public var message: String?

        /// A push.
        public init(at: Date, step: String, detail: String?, conversation: String, message: String?) {
            self.at = at
            self.step = step
            self.detail = detail
            self.conversation = conversation
            self.message = message
        }
    }

    /// One of the caller's devices.
    public struct Device: Codable, Hashable, Sendable {
        /// Its id.
        public var id: String
        /// Its push service.
        public var platform: PushPlatform
        /// When it last registered or reported its permission.
        public var lastSeen: Date?
        /// The system permission it last reported (nil: never).
        public var permission: DevicePermission?
        /// Whether a stream of it is connected now (to any node).
        public var connected: Bool
        /// Whether its stream confirmed a message it took in (nil: it never connected one; false: one connected, but
        /// it has not confirmed anything yet).
        public var confirms: Bool?
        /// Its last pushes, newest first.
        public var lastPushes: [Push]

        /// A device.
        public init(
            id: String, platform: PushPlatform, lastSeen: Date?, permission: DevicePermission?, connected: Bool,
            confirms: Bool?, lastPushes: [Push]
        ) {
            self.id = id
            self.platform = platform
            self.lastSeen = lastSeen
            self.permission = permission
            self.connected = connected
            self.confirms = confirms
            self.lastPushes = lastPushes
        }
    }

    /// When the checks ran.
    public var checkedAt: Date
    /// The checks, in order: `devices`, `permission`, `level`, `snooze`, `quiet_hours`, `pushes`, `confirmations`.
    public var checks: [Check]
    /// The caller's devices.
    public var devices: [Device]

    /// An answer.
    public init(checkedAt: Date, checks: [Check], devices: [Device]) {
        self.checkedAt = checkedAt
        self.checks = checks
        self.devices = devices
    }
}
