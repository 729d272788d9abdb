import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import NIOConcurrencyHelpers

/// Who is pushed what for a round of the log's entries (docs/push.md, "Who gets a push"): the rule, apart from the
/// machinery that reads the log, keeps the decider's place and writes the jobs (``PushDispatcher``).
///
/// For each message, each member it reached but the sender; for the event that added people, those added. Muted →
/// nothing; otherwise a job for each registered device of a platform there is a provider for. A device no stream
/// holds gets its job when due (after ``PushSettings/delay``); one whose stream is connected, and every device of a
/// member with a stream in the foreground, gets a job that waits ``PushSettings/confirmWithin`` and is dropped if the
/// confirmation that covers it (``PushCover``) comes first.
struct PushDecisions: Sendable {
    let store: any PushOutbox
    /// Who an entry reached, and their streams.
    let reach: Reach
    let settings: PushSettings
    let clock: WallClock
    /// The platforms there is a provider for: devices of others get no job.
    let platforms: Set<DeviceRegistration.Platform>
    /// Whether the decisions' steps of the delivery trail are made.
    let trail: TrailSwitch
    /// One interruption per burst, per member and conversation (``PushSettings/burstWindow``): kept by this node's
    /// decider in memory (a restart, or another node taking over, starts fresh bursts: at worst one more sound).
    private let bursts: NIOLockedValueBox<NotificationBursts>

    init(
        store: any PushOutbox, reach: Reach, settings: PushSettings, clock: WallClock,
        platforms: Set<DeviceRegistration.Platform>, trail: TrailSwitch = TrailSwitch()
    ) {
        self.store = store
        self.trail = trail
        self.reach = reach
        self.settings = settings
        self.clock = clock
        self.platforms = platforms
        bursts = NIOLockedValueBox(NotificationBursts(window: settings.burstWindow))
    }

    /// Who `entry` may be pushed to: for a message, the members it reached but the sender; for the event that added
    /// people, those added (not who added them); no one for other events, a silent message, or an entry older than
    /// ``PushSettings/maxAge``.
    private func candidates(of entry: IncomingMessage) async throws -> Set<String> {
        guard entry.message.seq != nil, !entry.message.silent,
              clock.now().timeIntervalSince(entry.message.sentAt) < settings.maxAge.seconds
        else { return [] }
        guard let event = entry.message.event else { return try await reach.recipients(of: entry) }
        guard event.kind == .memberAdded else { return [] }
        return Set(event.members.map(\.id)).subtracting([entry.message.senderID])
    }

    /// What tells one member's push from another's of the same message.
    private struct ContentKey: Hashable {
        var badge: Int
        var quiet: Bool
        var mentioned: Bool
        var mode: PushContentMode
        var burst: NotificationBursts.Decision
    }

    /// The jobs for a round's `entries`: one for each registered device of each member told (waiting for a
    /// confirmation where a stream covers it), unless their level or snooze holds it back
    /// (``NotificationPolicy/interruption(for:in:to:level:settings:)``, quietly in their quiet hours) or they read it
    /// meanwhile. The devices and badges of the whole round are
    /// read in one trip to the database.
    func jobs(for entries: [IncomingMessage]) async throws -> [NewPushJob] {
        try await decide(entries).jobs
    }

    /// The jobs for a round's `entries` (``jobs(for:)``), and, when the trail is on, the steps that say why each
    /// member's devices got a job or none (``TrailStep``).
    func decide(_ entries: [IncomingMessage]) async throws -> (jobs: [NewPushJob], trail: [TrailStep]) {
        guard !platforms.isEmpty else { return ([], []) }
        var asks: [(entry: IncomingMessage, candidates: Set<String>)] = []
        var followUps: [NewPushJob] = []
        for entry in entries {
            if let event = entry.message.event, event.isAmendment {
                followUps += try await self.followUps(of: entry)
                continue
            }
            let candidates = try await candidates(of: entry)
            if !candidates.isEmpty { asks.append((entry, candidates)) }
        }
        var steps = trail.isOn ? followUps.map {
            TrailStep(
                conversationID: $0.content.conversationID, seq: $0.content.seq, userID: $0.userID, deviceID: $0.deviceID,
                at: $0.due, kind: .queued, reasons: [.followUp])
        } : []
        guard !asks.isEmpty else { return (followUps, steps) }
        let alerts = try await alerts(for: asks, steps: &steps)
        return (alerts + followUps, steps)
    }

    /// The follow-ups of an edit or a deletion (`amendment`): one for each device whose notification still shows
    /// the message (``PushOutbox/pushedDevices(of:messageID:)``), at once, with the new words (as each member reads
    /// them, never with a sound) or the word to remove it.
    ///
    /// An edit's words go only to a member who still reads the message (not one removed since, nor one added back
    /// without the history). A notification that also stands for an earlier message of its burst, perhaps another
    /// sender's, is not removed by a deletion: it goes back to that message's words.
    private func followUps(of amendment: IncomingMessage) async throws -> [NewPushJob] {
        guard let event = amendment.message.event, let target = event.messageID else { return [] }
        let pushed = try await store.pushedDevices(of: amendment.conversation.id, messageID: target)
        let now = clock.now()
        return pushed.compactMap { shown -> NewPushJob? in
            guard platforms.contains(shown.device.platform) else { return nil }
            let content: PushContent
            if event.kind == .messageEdited {
                guard shown.readable else { return nil }
                var edited = amendment
                edited.message = Message(
                    id: target, conversationID: amendment.conversation.id, senderID: amendment.message.senderID,
                    text: amendment.message.text, seq: shown.seq, mentions: amendment.message.mentions,
                    mentionsAll: amendment.message.mentionsAll, edited: true)
                content = PushContent.followUp(
                    .edited, of: amendment.conversation.id, messageID: target, seq: shown.seq, shownAs: shown.shownAs,
                    badge: shown.badge, words: words(of: edited, for: shown))
            } else if let earlier = shown.earlier, shown.readable {
                // Queued under the deleted message's seq (its job key): it waits for that message's alert in flight,
                // and replaces a follow-up of it still waiting, so nothing with the deleted words lands after it.
                content = PushContent.followUp(
                    .edited, of: amendment.conversation.id, messageID: earlier.message.id, seq: shown.seq,
                    shownAs: shown.shownAs, badge: shown.badge, words: words(of: earlier, for: shown))
            } else {
                content = PushContent.followUp(
                    .deleted, of: amendment.conversation.id, messageID: target, seq: shown.seq, shownAs: shown.shownAs,
                    badge: shown.badge)
            }
            return NewPushJob(kind: .follow, userID: shown.device.userID, deviceID: shown.device.id, content: content, due: now)
        }
    }

    /// An alert's content for `incoming` as `shown`'s owner reads it (quiet: a follow-up is never news).
    private func words(of incoming: IncomingMessage, for shown: PushedDevice) -> PushContent {
        PushContent(
            alert: incoming, badge: shown.badge, viewer: shown.device.userID, quiet: true,
            mode: shown.device.platform == .webpush ? .full : settings.content)
    }

    /// The alerts of `asks`' entries (``jobs(for:)``).
    private func alerts(
        for asks: [(entry: IncomingMessage, candidates: Set<String>)], steps: inout [TrailStep]
    ) async throws -> [NewPushJob] {
        let keepsTrail = trail.isOn
        let targets = try await store.pushTargets(asks.map {
            PushTargetQuery(conversationID: $0.entry.conversation.id, seq: $0.entry.message.seq ?? 0, candidates: $0.candidates)
        })
        // The streams of those with a device to push to only (most members of a busy chat have none); with several
        // nodes, the connections on the others count as this node's do.
        let streams = try await reach.streams(of: Set(targets.joined().lazy
            .filter { platforms.contains($0.device.platform) }.map(\.device.userID)))
        let now = clock.now()
        let due = now.addingTimeInterval(settings.delay.seconds)
        let waiting = now.addingTimeInterval(max(settings.delay, settings.confirmWithin).seconds)
        let formatter = ContentFormatter()
        var jobs: [NewPushJob] = []
        let instant = Duration.seconds(now.timeIntervalSince1970)
        for (ask, targets) in zip(asks, targets) {
            var contents: [ContentKey: PushContent] = [:]
            // Each member's place in their burst of this conversation, decided once for all their devices.
            var members: [String: NotificationBursts.Decision] = [:]
            var skipped: Set<String> = []
            for target in targets {
                let userID = target.device.userID
                func step(_ kind: TrailStep.Kind, _ reasons: [TrailStep.Reason], device: String) {
                    steps.append(TrailStep(
                        conversationID: ask.entry.conversation.id, seq: ask.entry.message.seq ?? 0, userID: userID,
                        deviceID: device, at: now, kind: kind, reasons: reasons))
                }
                guard platforms.contains(target.device.platform) else {
                    if keepsTrail { step(.skipped, [.noProvider], device: target.device.id) }
                    continue
                }
                let live = streams[userID] ?? Reach.Streams()
                // A stream in the foreground shows a banner, one in the background a notification of its own: each
                // holds back the push only once it confirmed the message (rule 8).
                let cover: PushCover? = live.foreground ? .member : live.devices.contains(target.device.id) ? .device : nil
                // The member's level, snooze and quiet hours, as every device of theirs decides.
                let interruption = NotificationPolicy.interruption(
                    for: ask.entry.message, in: ask.entry.conversation.kind, to: userID, level: target.level,
                    settings: target.settings)
                if case .skip(let reason) = interruption {
                    // Once for the member: their level or snooze holds back every device of theirs.
                    if keepsTrail, skipped.insert(userID).inserted {
                        step(.skipped, TrailStep.Reason(rawValue: reason.rawValue).map { [$0] } ?? [], device: "")
                    }
                    continue
                }
                let burst = members[userID] ?? bursts.withLockedValue {
                    $0.decide(
                        "\(userID)\u{0}\(ask.entry.conversation.id)",
                        identifier: LocalNotification.identifier(
                            seq: ask.entry.message.seq, conversationID: ask.entry.conversation.id, messageID: ask.entry.message.id),
                        namesMember: ask.entry.message.names(userID), at: instant, readMarker: target.readMarker)
                }
                members[userID] = burst
                // The words are the same for every member told (an event's are written to the people it added).
                let key = ContentKey(
                    badge: target.badge, quiet: interruption == .quietly || !burst.alerts,
                    mentioned: ask.entry.message.isMention(of: userID, in: ask.entry.conversation.kind),
                    // Web Push is encrypted to the browser: the push service reads none of it.
                    mode: target.device.platform == .webpush ? .full : settings.content, burst: burst)
                var content = contents[key] ?? PushContent(
                    alert: ask.entry, badge: target.badge, viewer: userID, quiet: key.quiet, formatter: formatter,
                    mode: key.mode)
                content.timeSensitive = settings.timeSensitiveMentions && !key.quiet && key.mentioned
                    && ask.entry.conversation.kind == .group
                if burst.count > 1 {
                    // A later message of the burst: it replaces the first's notification, silently unless it names
                    // the member.
                    content.replaces = burst.identifier
                    content.count = burst.count
                }
                contents[key] = content
                jobs.append(NewPushJob(
                    kind: .alert, userID: userID, deviceID: target.device.id, content: content,
                    due: cover == nil ? due : waiting, coveredBy: cover))
                if keepsTrail {
                    var reasons: [TrailStep.Reason] = []
                    if interruption == .quietly { reasons.append(.quietHours) }
                    if !burst.alerts { reasons.append(.burst) }
                    switch cover {
                    case .device: reasons.append(.waitsForDevice)
                    case .member: reasons.append(.waitsForMember)
                    case nil: if settings.delay > .zero { reasons.append(.delayed) }
                    }
                    step(.queued, reasons, device: target.device.id)
                }
            }
        }
        return jobs
    }
}
