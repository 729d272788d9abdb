import Foundation
import HeraldCore

/// An edit or a deletion of a message, as a member asks for it (docs/behaviour.md §6).
public struct MessageAmendment: Hashable, Sendable {
    /// What is done to the message.
    public enum Action: Hashable, Sendable {
        /// Its text (and the members it mentions) become these.
        case edit(text: String, mentions: [String], mentionsAll: Bool)
        /// It becomes a tombstone.
        case delete
    }

    /// The conversation.
    public var conversationID: String
    /// The message, by its id in the conversation.
    public var messageID: String
    /// Who asks.
    public var actorID: String
    /// What they ask.
    public var action: Action
    /// How long after it was sent a message may be edited.
    public var editWindow: Duration
    /// How many times a message may be edited.
    public var editLimit: Int

    /// An amendment of `messageID` in `conversationID` by `actorID`.
    public init(
        conversationID: String, messageID: String, actorID: String, action: Action,
        editWindow: Duration = AmendmentRules.defaultEditWindow, editLimit: Int = AmendmentRules.defaultEditLimit
    ) {
        self.conversationID = conversationID
        self.messageID = messageID
        self.actorID = actorID
        self.action = action
        self.editWindow = editWindow
        self.editLimit = editLimit
    }

    /// Whether it deletes.
    package var deletes: Bool { action == .delete }

    /// The event its entry carries, about the message at `seq`.
    package func event(about seq: Int64) -> ConversationEvent {
        ConversationEvent(kind: deletes ? .messageDeleted : .messageEdited, messageID: messageID, messageSeq: seq)
    }
}

/// What an amendment did: its own entry in the log, and the message as it is now.
public struct AmendOutcome: Hashable, Sendable {
    /// The edit's or the deletion's entry (``ConversationEvent/Kind/messageEdited`` or
    /// ``ConversationEvent/Kind/messageDeleted``), with its `seq`.
    public var entry: IncomingMessage
    /// The message after it: its new text, or its tombstone.
    public var message: Message

    /// One of these, member by member.
    package init(entry: IncomingMessage, message: Message) {
        self.entry = entry
        self.message = message
    }
}

/// The message an amendment is about and its amender, as the store found them inside its transaction.
package struct AmendmentTarget {
    /// The message as stored, with its conversation and sender.
    package var incoming: IncomingMessage
    /// Its edits so far.
    package var edits: Int
    /// Whether the amender is an owner of the group.
    package var actorIsOwner: Bool

    /// The message as stored.
    package var message: Message { incoming.message }

    /// The target in a row of ``Rows/incoming(_:)``'s columns, `edits` and `actor_owner` (both stores' query).
    package init(row: some StoredRow) throws {
        incoming = try Rows.incoming(row)
        edits = Int(try row.optionalInteger("edits") ?? 0)
        actorIsOwner = try row.bool("actor_owner")
    }
}

/// The rules of editing and deleting, decided once for both stores: who may, until when, how often.
public enum AmendmentRules {
    /// How long a message may be edited after it was sent, unless configured (`HERALD_EDIT_WINDOW`): 24 hours.
    public static let defaultEditWindow: Duration = .seconds(24 * 3600)
    /// How many times a message may be edited, unless configured (`HERALD_EDIT_LIMIT`).
    public static let defaultEditLimit = 20

    /// Throws the refusal of `amendment` of `target` at `now`, if any: `message_not_found` (none, or an event),
    /// `message_deleted`, `not_the_sender` (an edit by anyone but the sender; a deletion by anyone but the sender or
    /// a group's owner, and of the app backend's system messages by no member: they are the backend's word, not a
    /// member's), `edit_window_passed`, `edit_limit`.
    package static func check(_ amendment: MessageAmendment, of target: AmendmentTarget?, at now: Date) throws {
        guard let target, target.message.event == nil else { throw StoreError.messageNotFound }
        guard !target.message.deleted else { throw StoreError.messageDeleted }
        let own = target.message.senderID.utf8.elementsEqual(amendment.actorID.utf8) && !amendment.actorID.isEmpty
        switch amendment.action {
        case .delete:
            let owner = target.incoming.conversation.kind == .group && target.actorIsOwner && !target.message.isSystem
            guard own || owner else { throw StoreError.notTheSender }
        case .edit:
            guard own else { throw StoreError.notTheSender }
            let window = amendment.editWindow.seconds
            guard now.timeIntervalSince(target.message.sentAt) <= window else {
                throw StoreError.editWindowPassed(Int(window))
            }
            guard target.edits < amendment.editLimit else { throw StoreError.editLimit(amendment.editLimit) }
        }
    }

    /// The entry of `amendment` of the message `target`, by `actor`, at `seq`: an edit carries the new text and
    /// mentions; a deletion nothing.
    package static func entry(
        of amendment: MessageAmendment, about target: Int64, id: String, seq: Int64, at time: Date, by actor: Person,
        in conversation: Conversation
    ) -> IncomingMessage {
        var message = Message(
            id: id, conversationID: conversation.id, senderID: actor.id, sentAt: time, seq: seq,
            event: amendment.event(about: target))
        if case .edit(let text, let mentions, let all) = amendment.action {
            message.text = text
            message.mentions = mentions
            message.mentionsAll = all
        }
        return IncomingMessage(message: message, conversation: conversation, sender: actor)
    }
}
