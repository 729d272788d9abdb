import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import Logging

/// `herald explain`: a message's delivery trail, read from the database a configuration names, as words an operator
/// reads (docs/push.md, "Why a phone did not ring").
public enum DeliveryExplanation {
    /// The trail of `messageID` in `conversationID` (of `userID` alone, when given), in words.
    ///
    /// - Throws: a ``StorageError`` when the database cannot be read; an error that says so when there is no such
    ///   message.
    public static func explain(
        conversationID: String, messageID: String, userID: String?, configuration: ServerConfiguration, logger: Logger
    ) async throws -> String {
        let storage = try await OpenStorage.openForReading(configuration, logger: logger)
        do {
            let deliveries = try await DeliveryReports(store: storage.store, clock: configuration.clock)
                .deliveries(of: messageID, in: conversationID, user: userID, viewer: nil)
            await storage.close()
            return words(deliveries)
        } catch let error as APIError {
            await storage.close()
            throw StorageError("no message \(messageID) in the conversation \(conversationID): \(error.message)")
        } catch {
            await storage.close()
            throw error
        }
    }

    /// `deliveries` as lines a person reads: the message, then each member's summary and each device's steps.
    public static func words(_ deliveries: WireDeliveries) -> String {
        let message = deliveries.message
        var lines = [
            "Message \(message.id) in \(deliveries.conversation) (seq \(message.seq)), sent by \(message.sender) at \(time(message.sentAt)).",
            deliveries.trailHours > 0
                ? "The trail keeps \(deliveries.trailHours) hours (HERALD_TRAIL_HOURS)."
                : "The trail is off (HERALD_TRAIL_HOURS=0): only what is known now is shown.",
        ]
        if deliveries.members.isEmpty { lines.append("No member to show.") }
        for member in deliveries.members {
            lines.append("")
            lines.append("\(member.user): \(summary(member.summary)). \(member.read ? "Read it." : "Has not read it.")")
            for step in member.steps {
                lines.append("  all devices: \(words(step))")
            }
            for device in member.devices {
                let platform = device.platform.map { " (\($0.rawValue))" } ?? " (removed since)"
                lines.append("  \(device.id)\(platform)\(device.confirmed ? ", confirmed it live" : ""):")
                for step in device.steps {
                    lines.append("    \(words(step))")
                }
            }
        }
        return lines.map { ControlCharacters.escaped($0) }.joined(separator: "\n")
    }

    /// What a member's summary code means.
    static func summary(_ code: String) -> String {
        switch code {
        case "own": "their own message, never notified to them"
        case "silent": "a silent message, never notified"
        case "muted": "not told: the conversation is muted (level Nothing)"
        case "unmentioned": "not told: their level is Mentions and the message does not name them"
        case "snoozed": "not told: they had snoozed notifications"
        case "read": "not pushed: they read it before a push went"
        case "no_devices": "not pushed: no device was registered for notifications"
        case "pushed": "pushed: a push service took it"
        case "confirmed": "not pushed: a connected device showed it live and confirmed it"
        case "pending": "a push is waiting, or will be tried again"
        default: "not pushed (each device's steps say why)"
        }
    }

    /// One step as words: when, what, why.
    static func words(_ step: WireTrailStep) -> String {
        let what: String = switch step.step {
        case "queued": "push queued"
        case "skipped": "not pushed"
        case "confirmed": "held back: the device confirmed it live"
        case "read": "held back: read before it went"
        case "dropped": "dropped"
        case "sent": "sent: the push service took it"
        case "logged": "written to the server's log (--demo), not sent"
        case "retried": "the push service asked to try again later"
        case "refused": "refused by the push service"
        case "device_removed": "the push service said the token is dead: the device was removed"
        case "redirected": "the push service redirected; not followed"
        case "expired": "given up: not sent within HERALD_PUSH_MAX_AGE"
        case "delivered": "Expo's receipt: delivered to Apple's or Google's service"
        default: step.step
        }
        let why = step.reasons.map(reason).joined(separator: ", ")
        let detail = step.detail.map { step.step == "sent" ? " (id \($0))" : ": \($0)" } ?? ""
        return "\(time(step.at)) \(what)\(why.isEmpty ? "" : " (\(why))")\(detail)"
    }

    static func reason(_ code: String) -> String {
        switch code {
        case "quiet_hours": "quietly: their quiet hours"
        case "burst": "silently: a later message of a burst, replacing its notification"
        case "waits_for_device": "waits for this device to confirm it live"
        case "waits_for_member": "waits for any of their devices to confirm it live (one was in the foreground)"
        case "delayed": "waits HERALD_PUSH_DELAY for a read elsewhere"
        case "muted": "the conversation is muted"
        case "unmentioned": "level Mentions, not named"
        case "snoozed": "snoozed"
        case "no_provider": "this server has no push service for the device's platform"
        case "follow_up": "an edit's or a deletion's follow-up"
        default: code
        }
    }

    private static func time(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
