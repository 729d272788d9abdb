import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords

/// What the delivery trail and the devices' reports answer (docs/push.md, "Why a phone did not ring"): a message's
/// deliveries, member by member and device by device, and a person's troubleshooter.
struct DeliveryReports: Sendable {
    let store: any TrailStore & DeviceStore & ReadStateStore & EntryStore
    let clock: WallClock

    /// How many of each device's last pushes the troubleshooter lists.
    static let lastPushes = 5
    /// The most members one answer lists: beyond, the backend names one (`?user=`).
    static let memberLimit = 1_000

    // MARK: A message's deliveries

    /// The trail of `messageID` in `conversationID`: for the app's backend (`viewer` nil) every member it reached (or
    /// `user` alone); for a member (`viewer`), theirs alone, and only of a message they can see.
    ///
    /// - Throws: ``APIError`` `not_a_member` (the viewer is not a member now: asked first, so it learns nothing of
    ///   which messages exist), `message_not_found` (no such message, or not one the viewer sees), `invalid_request`
    ///   (the backend asked for every member of a message that reached more than ``memberLimit``).
    func deliveries(of messageID: String, in conversationID: String, user: String?, viewer: String?) async throws -> WireDeliveries {
        if let viewer {
            _ = try await store.entries(in: conversationID, for: viewer, after: nil, before: nil, limit: 1)
        }
        guard let subject = try await store.trailSubject(conversationID: conversationID, messageID: messageID),
              let seq = subject.message.message.seq
        else { throw Self.messageNotFound }
        if let viewer {
            // What the member's own history shows (throws not_a_member for someone who never was one).
            let seen = try await store.entries(in: conversationID, for: viewer, after: seq - 1, before: nil, limit: 1)
            guard seen.first?.id == messageID else { throw Self.messageNotFound }
        }
        let only = viewer ?? user
        let steps = try await store.trail(of: conversationID, seq: seq, userID: only)
        var users = Set(subject.readMarkers.keys).union(steps.map(\.userID))
        if let only { users = users.intersection([only]) }
        guard users.count <= Self.memberLimit else {
            throw APIError.invalidRequest(
                "the message reached \(users.count) members, more than \(Self.memberLimit) an answer lists: name one with `user`")
        }
        var members: [WireDeliveries.Member] = []
        for userID in HeraldID.sorted(users) {
            members.append(try await member(
                userID, steps: steps.filter { $0.userID == userID }, subject: subject, seq: seq))
        }
        let message = subject.message.message
        return WireDeliveries(
            conversation: conversationID,
            message: .init(id: message.id, seq: seq, sender: message.senderID, sentAt: message.sentAt),
            trailHours: store.trailSwitch.hours, members: members)
    }

    private static let messageNotFound = APIError(.notFound, .messageNotFound, "no message of this conversation that you can see has that id")

    private func member(_ userID: String, steps: [TrailStep], subject: TrailSubject, seq: Int64) async throws -> WireDeliveries.Member {
        let registered = try await store.reportedDevices(of: userID)
        let confirmed = steps.contains { !$0.deviceID.isEmpty } ? try await store.confirmations(of: userID) : [:]
        let platforms = Dictionary(registered.map { ($0.device.id, $0.device.platform) }, uniquingKeysWith: { first, _ in first })
        var devices: [WireDeliveries.Device] = []
        let byDevice = Dictionary(grouping: steps.filter { !$0.deviceID.isEmpty }, by: \.deviceID)
        for deviceID in HeraldID.sorted(Set(byDevice.keys)) {
            devices.append(WireDeliveries.Device(
                id: deviceID, platform: platforms[deviceID], confirmed: (confirmed[deviceID] ?? 0) >= seq,
                steps: (byDevice[deviceID] ?? []).map(Self.wire)))
        }
        let read = (subject.readMarkers[userID] ?? 0) >= seq
        return WireDeliveries.Member(
            user: userID,
            summary: Self.summary(
                of: userID, message: subject.message.message, steps: steps, read: read, hasDevices: !registered.isEmpty),
            read: read, steps: steps.filter { $0.deviceID.isEmpty }.map(Self.wire), devices: devices)
    }

    /// In one word, why `userID` was or was not told of `message` (``WireDeliveries/Member/summary``).
    static func summary(of userID: String, message: Message, steps: [TrailStep], read: Bool, hasDevices: Bool) -> String {
        if message.senderID == userID { return "own" }
        if message.silent { return "silent" }
        if let skip = steps.first(where: { $0.deviceID.isEmpty && $0.kind == .skipped }), let reason = skip.reasons.first {
            return reason.rawValue
        }
        let kinds = Set(steps.map(\.kind))
        if !kinds.isDisjoint(with: [.sent, .logged, .delivered]) { return "pushed" }
        if kinds.contains(.confirmed) { return "confirmed" }
        if kinds.contains(.read) || (steps.isEmpty && read) { return "read" }
        // A device whose last step leaves its push waiting (queued, or to be tried again).
        let last = Dictionary(grouping: steps.filter { !$0.deviceID.isEmpty }, by: \.deviceID).compactMap(\.value.last?.kind)
        if last.contains(where: { $0 == .queued || $0 == .retried }) { return "pending" }
        if steps.isEmpty, !hasDevices { return "no_devices" }
        return "not_pushed"
    }

    private static func wire(_ step: TrailStep) -> WireTrailStep {
        WireTrailStep(at: step.at, step: step.kind.rawValue, reasons: step.reasons.map(\.rawValue), detail: step.detail)
    }

    // MARK: The troubleshooter

    /// The checks of `userID`'s notifications now (``WireNotificationCheck``), with `push`'s providers and the
    /// streams it knows of.
    func check(for userID: String, push: PushDispatcher) async throws -> WireNotificationCheck {
        let now = clock.now()
        let devices = try await store.reportedDevices(of: userID)
        let recent = try await store.recentTrail(of: userID, limit: Self.lastPushes)
        let confirmations = try await store.confirmations(of: userID)
        let settings = try await store.notificationSettings(of: userID)
        let streams = try await push.reach.streams(of: [userID])[userID] ?? Reach.Streams()
        let pushes = Dictionary(grouping: recent, by: \.deviceID)
        let wired = devices.map { reported in
            WireNotificationCheck.Device(
                id: reported.device.id, platform: reported.device.platform, lastSeen: reported.lastSeen,
                permission: reported.permission, connected: streams.devices.contains(reported.device.id),
                confirms: confirmations[reported.device.id].map { $0 > 0 },
                lastPushes: (pushes[reported.device.id] ?? []).map {
                    WireNotificationCheck.Push(
                        at: $0.at, step: $0.kind.rawValue, detail: $0.detail, conversation: $0.conversationID,
                        message: $0.messageID)
                })
        }
        let checks = NotificationChecks(
            devices: devices, pushes: pushes, confirmed: Set(confirmations.filter { $0.value > 0 }.keys), connected: streams.devices,
            settings: settings, trailHours: store.trailSwitch.hours, providers: Set(push.providers.keys), now: now)
        return WireNotificationCheck(checkedAt: now, checks: checks.all, devices: wired)
    }
}

/// The troubleshooter's checks, in words a person reads, from what the server knows of them now.
struct NotificationChecks {
    let devices: [ReportedDevice]
    /// Each device's last steps, newest first.
    let pushes: [String: [TrailStep]]
    /// The devices that confirmed a message their stream took in (a stream that names its device starts at 0, or
    /// at what it resumes after).
    let confirmed: Set<String>
    /// The devices with a stream now.
    let connected: Set<String>
    let settings: NotificationSettings
    let trailHours: Int
    let providers: Set<DeviceRegistration.Platform>
    let now: Date

    typealias Check = WireNotificationCheck.Check

    /// Every check, in order.
    var all: [Check] {
        [registered, permission, level, snooze, quietHours, lastPushes, confirmations]
    }

    private func named(_ device: ReportedDevice) -> String {
        "\(device.device.id) (\(Self.platformName(device.device.platform)))"
    }

    static func platformName(_ platform: DeviceRegistration.Platform) -> String {
        switch platform {
        case .apns: "iPhone or iPad"
        case .fcm: "Android"
        case .expo: "Expo app"
        case .webpush: "browser"
        }
    }

    var registered: Check {
        guard !devices.isEmpty else {
            return Check(
                id: "devices", state: .problem, title: "Devices that get notifications",
                detail: "No device is registered for notifications, so nothing can reach you while the app is closed.",
                action: "Turn on notifications in the app or on this page, on each device you want them on.")
        }
        let without = devices.filter { !providers.contains($0.device.platform) }
        if !without.isEmpty {
            return Check(
                id: "devices", state: .problem, title: "Devices that get notifications",
                detail: "This server cannot send to \(without.map(named).joined(separator: ", ")): it has no push service for that kind of device.",
                action: "Ask the server's operator to configure it.")
        }
        return Check(
            id: "devices", state: .ok, title: "Devices that get notifications",
            detail: "\(devices.count) registered: \(devices.map(named).joined(separator: ", ")).")
    }

    var permission: Check {
        let title = "Permission to notify"
        let denied = devices.filter { $0.permission == .denied }
        if !denied.isEmpty {
            return Check(
                id: "permission", state: .problem, title: title,
                detail: "Notifications are turned off in the system settings of \(denied.map(named).joined(separator: ", ")).",
                action: "Allow notifications for the app in the device's settings (a browser: the site's settings).")
        }
        let quiet = devices.filter { $0.permission == .provisional }
        let unasked = devices.filter { $0.permission == .notAsked }
        let unknown = devices.filter { $0.permission == nil || $0.permission == .unknown }
        if !unasked.isEmpty {
            return Check(
                id: "permission", state: .warning, title: title,
                detail: "\(unasked.map(named).joined(separator: ", ")) never asked you whether it may notify.",
                action: "Turn on notifications in the app on that device.")
        }
        if !quiet.isEmpty {
            return Check(
                id: "permission", state: .warning, title: title,
                detail: "\(quiet.map(named).joined(separator: ", ")) delivers notifications quietly, to the list only: no sound, no banner.",
                action: "Choose “Deliver Prominently” for the app in the device's notification settings.")
        }
        if devices.isEmpty {
            return Check(id: "permission", state: .warning, title: title, detail: "No device has said whether it may notify.")
        }
        if !unknown.isEmpty {
            return Check(
                id: "permission", state: .warning, title: title,
                detail: "\(unknown.map(named).joined(separator: ", ")) has not said whether its system lets the app notify.",
                action: "Open the app on that device: it tells the server when it starts.")
        }
        return Check(id: "permission", state: .ok, title: title, detail: "Every device allows notifications.")
    }

    var level: Check {
        let title = "What notifies you"
        switch settings.defaultLevel {
        case .nothing:
            return Check(
                id: "level", state: .problem, title: title,
                detail: "Your default level is Nothing: conversations without a level of their own never notify you.",
                action: "Set the default level to All messages or Mentions in Settings.")
        case .mentions:
            return Check(
                id: "level", state: .warning, title: title,
                detail: "Your default level is Mentions: in groups, only messages that name you notify you (direct messages always do).",
                action: "Set the default level to All messages if you want every message.")
        case .all:
            return Check(
                id: "level", state: .ok, title: title,
                detail: "Your default level is All messages. A conversation with a level of its own (muted, or mentions only) follows that.")
        }
    }

    var snooze: Check {
        guard settings.snoozed(at: now), let until = settings.snoozeUntil else {
            return Check(id: "snooze", state: .ok, title: "Snooze", detail: "Notifications are not snoozed.")
        }
        return Check(
            id: "snooze", state: .problem, title: "Snooze",
            detail: "Notifications are snoozed until \(Self.time(until)): nothing notifies you until then.",
            action: "End the snooze in Settings.")
    }

    var quietHours: Check {
        let title = "Quiet hours"
        guard !settings.quietHours.isEmpty else {
            return Check(id: "quiet_hours", state: .ok, title: title, detail: "You have no quiet hours.")
        }
        let windows = settings.quietHours.map { "\($0.start)–\($0.end)" }.joined(separator: ", ")
        let zone = settings.timeZone ?? "UTC"
        guard settings.isQuiet(at: now) else {
            return Check(
                id: "quiet_hours", state: .ok, title: title,
                detail: "Quiet hours (\(windows), \(zone)) are not in force now.")
        }
        return Check(
            id: "quiet_hours", state: .warning, title: title,
            detail: "Quiet hours (\(windows), \(zone)) are in force now: notifications arrive without sound"
                + (settings.mentionsDuringQuietHours ? ", except mentions." : "."),
            action: "Change your quiet hours in Settings if this is not what you want.")
    }

    var lastPushes: Check {
        let title = "Recent notifications"
        guard trailHours > 0 else {
            return Check(
                id: "pushes", state: .warning, title: title,
                detail: "This server keeps no record of its notifications (HERALD_TRAIL_HOURS is 0).")
        }
        let failing: Set<TrailStep.Kind> = [.refused, .deviceRemoved, .redirected, .expired]
        var problems: [String] = []
        var waiting: [String] = []
        for device in devices {
            guard let last = pushes[device.device.id]?.first else { continue }
            if failing.contains(last.kind) {
                problems.append("\(named(device)): \(last.kind.rawValue)\(last.detail.map { " (\($0))" } ?? "")")
            } else if last.kind == .retried {
                waiting.append(named(device))
            }
        }
        let removed = pushes.values.joined().filter { $0.kind == .deviceRemoved }
        if !problems.isEmpty || !removed.isEmpty {
            let gone = Set(removed.map(\.deviceID)).subtracting(devices.map(\.device.id))
            let lines = problems + gone.sorted().map { "\($0): removed, its push service said it is gone" }
            return Check(
                id: "pushes", state: .problem, title: title,
                detail: "The last notification did not reach: \(lines.joined(separator: "; ")).",
                action: "Open the app on that device and turn notifications on again: it registers anew.")
        }
        if !waiting.isEmpty {
            return Check(
                id: "pushes", state: .warning, title: title,
                detail: "The push service asked to try again later for \(waiting.joined(separator: ", ")): it will be tried again.")
        }
        let sent = pushes.values.joined().filter { [.sent, .logged, .delivered].contains($0.kind) }.count
        return Check(
            id: "pushes", state: .ok, title: title,
            detail: sent == 0
                ? "No notification was sent to your devices in the last \(trailHours) hours."
                : "\(sent) notifications reached your devices' push services lately; none failed.")
    }

    var confirmations: Check {
        let title = "Messages shown live"
        let silent = devices.filter { connected.contains($0.device.id) && !confirmed.contains($0.device.id) }
        if !silent.isEmpty {
            return Check(
                id: "confirmations", state: .warning, title: title,
                detail: "\(silent.map(named).joined(separator: ", ")) is connected but has not confirmed a message it showed yet: "
                    + "until it does, its messages also come by push while it is open.",
                action: "If this stays so after a message arrives, update the app on that device.")
        }
        let live = devices.filter { connected.contains($0.device.id) }
        return Check(
            id: "confirmations", state: .ok, title: title,
            detail: live.isEmpty
                ? "No device is connected now."
                : "\(live.map(named).joined(separator: ", ")) shows messages live and confirms them, so it is not pushed what it already showed.")
    }

    private static func time(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }
}
