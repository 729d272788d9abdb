import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords

/// Which unread reminders a round of the log's entries starts (`unread.reminder`, docs/integrate.md): for each
/// message (not silent, not an event), one for each member it reached, but its sender, with no device connected on
/// any node, due ``WebhookSettings/reminder`` after the message.
struct Reminders: Sendable {
    let reach: Reach
    let settings: WebhookSettings

    /// The reminders `entries` start.
    func due(for entries: [IncomingMessage]) async throws -> [NewUnreadReminder] {
        guard settings.wants(.unreadReminder), let after = settings.reminder else { return [] }
        var asks: [(entry: IncomingMessage, members: Set<String>)] = []
        for entry in entries where entry.message.isMessage && !entry.message.silent {
            let members = try await reach.recipients(of: entry)
            if !members.isEmpty { asks.append((entry, members)) }
        }
        let streams = try await reach.streams(of: asks.reduce(into: Set<String>()) { $0.formUnion($1.members) })
        return asks.flatMap { ask in
            ask.members.filter { streams[$0]?.devices.isEmpty != false }.sorted().map {
                NewUnreadReminder(
                    userID: $0, conversationID: ask.entry.conversation.id, seq: ask.entry.message.seq ?? 0,
                    due: ask.entry.message.sentAt.addingTimeInterval(after.seconds))
            }
        }
    }
}
