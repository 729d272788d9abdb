import Foundation
import HeraldCore
import HeraldProtocol

extension NewWebhookEvent {
    /// The event an entry of the log makes, if its type is one the backend hears of: a message (`message.new`),
    /// people added (`member.added`), removed or leaving (`member.removed`), a new title
    /// (`conversation.renamed`), a deletion (`conversation.deleted`), an edit (`message.edited`) or a deleted
    /// message (`message.deleted`). Owner changes make none.
    package static func entry(_ entry: IncomingMessage) -> NewWebhookEvent? {
        let message = entry.message
        let conversation = WebhookConversation(
            id: entry.conversation.id, kind: entry.conversation.kind.rawValue, title: entry.conversation.title)
        let by = message.senderID
        let type: WebhookEventType
        var data = WebhookEventData(conversation: conversation)
        if let event = message.event {
            switch event.kind {
            case .memberAdded:
                type = .memberAdded
                data.members = event.members.map(WirePerson.init)
            case .memberRemoved:
                type = .memberRemoved
                data.members = event.members.map(WirePerson.init)
                data.reason = "removed"
            case .memberLeft:
                type = .memberRemoved
                data.members = [WirePerson(entry.sender)]
                data.reason = "left"
            case .renamed:
                type = .conversationRenamed
                data.title = event.title
            case .deleted:
                type = .conversationDeleted
            case .ownerAdded, .ownerRemoved:
                return nil
            case .messageEdited, .messageDeleted:
                // The message as it is now: the edit's text and mentions, or a tombstone.
                guard let target = event.messageID else { return nil }
                type = event.kind == .messageEdited ? .messageEdited : .messageDeleted
                // An edit is its sender's; a deletion may be an owner's (`data.by`), so its tombstone names no sender.
                let before = Message(
                    id: target, conversationID: message.conversationID,
                    senderID: event.kind == .messageEdited ? by : "", imageURL: message.imageURL,
                    sentAt: message.sentAt)
                var now = before.amended(by: message)
                now.seq = message.seq
                data.message = WireMessage(now)
            }
            data.by = by
        } else {
            type = .messageNew
            data.message = WireMessage(message)
            data.sender = WirePerson(entry.sender)
        }
        return NewWebhookEvent(type: type, conversationID: entry.conversation.id, seq: message.seq, data: data, time: message.sentAt)
    }

    /// `read`: `userID`'s read marker in `conversationID` moved to `upTo`.
    package static func read(conversationID: String, userID: String, upTo: Int64) -> NewWebhookEvent {
        NewWebhookEvent(
            type: .read, conversationID: conversationID, seq: nil, data: WebhookEventData(userId: userID, upTo: upTo))
    }

    /// `device.removed`: a push service said the device's token is dead.
    package static func deviceRemoved(userID: String, deviceID: String, platform: PushPlatform) -> NewWebhookEvent {
        NewWebhookEvent(
            type: .deviceRemoved, conversationID: nil, userID: userID, seq: nil,
            data: WebhookEventData(userId: userID, device: WebhookDevice(id: deviceID, platform: platform)))
    }
}
