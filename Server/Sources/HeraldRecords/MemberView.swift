import HeraldCore
import NIOConcurrencyHelpers

/// When one person was in a conversation: from the entry that added them (or the conversation's start) to the
/// entry that removed them, both included, so that each learns of their own arrival and departure.
public struct MemberSpan: Hashable, Sendable {
    /// The `seq` from which they receive its entries.
    public var added: Int64
    /// The `seq` of the entry that ended it (removed, left, deleted); nil while they are in it.
    public var removed: Int64?

    /// A span.
    public init(added: Int64, removed: Int64? = nil) {
        self.added = added
        self.removed = removed
    }

    /// Whether the entry with `seq` reaches them.
    public func covers(_ seq: Int64) -> Bool {
        added <= seq && removed.map { seq <= $0 } ?? true
    }
}

/// A conversation and who is and was in it, each with their span: what the live fan-out needs to send an entry to
/// the people it reaches, and what a post checks, kept in memory by ``Memberships``.
///
/// Every span carries the `seq`s that bound it, so a view read from the database at any moment gives the right
/// answer for any entry, and applying an event that is already in it changes nothing.
public struct MemberView: Hashable, Sendable {
    /// Id, kind and title.
    public var conversation: Conversation
    /// The `seq` of the event that gave the current title (0: the title it was created with).
    public var titleSeq: Int64
    /// Everyone who is or was a member, by user id.
    public var spans: [String: MemberSpan]
    /// The `seq` of the event that deleted it, if it was.
    public var deleted: Int64?

    /// A view.
    public init(conversation: Conversation, titleSeq: Int64 = 0, spans: [String: MemberSpan], deleted: Int64? = nil) {
        self.conversation = conversation
        self.titleSeq = titleSeq
        self.spans = spans
        self.deleted = deleted
    }

    /// Whether `userID` is a member now.
    public func isMember(_ userID: String) -> Bool {
        deleted == nil && spans[userID].map { $0.removed == nil } ?? false
    }

    /// The current members.
    public var memberIDs: [String] {
        deleted == nil ? spans.filter { $0.value.removed == nil }.map(\.key) : []
    }

    /// Who receives the entry with `seq`.
    public func recipients(of seq: Int64) -> [String] {
        spans.compactMap { $0.value.covers(seq) ? $0.key : nil }
    }

    /// Who receives `entry`: as ``recipients(of:)``, except that an edit (which carries the new text) reaches only
    /// those who were in the conversation when its message was posted; a member who came later reads the message
    /// as it is now, if their history shows it.
    public func recipients(of entry: Message) -> [String] {
        guard let seq = entry.seq else { return [] }
        guard let event = entry.event, event.kind == .messageEdited, let target = event.messageSeq else { return recipients(of: seq) }
        return spans.compactMap { $0.value.covers(seq) && $0.value.added <= target ? $0.key : nil }
    }

    /// The view after `entry` (an event of this conversation; a message changes nothing).
    public mutating func apply(_ entry: Message) {
        guard let event = entry.event, let seq = entry.seq else { return }
        switch event.kind {
        case .memberAdded:
            for member in event.members {
                // A span that is already this one's, or a later one's, stays.
                if let span = spans[member.id], span.added >= seq { continue }
                spans[member.id] = MemberSpan(added: seq)
            }
        case .memberRemoved:
            for member in event.members { end(member.id, at: seq) }
        case .memberLeft:
            end(entry.senderID, at: seq)
        case .renamed:
            if seq > titleSeq {
                conversation.title = event.title
                titleSeq = seq
            }
        case .deleted:
            deleted = deleted.map { min($0, seq) } ?? seq
            for id in Array(spans.keys) { end(id, at: seq) }
        case .ownerAdded, .ownerRemoved, .messageEdited, .messageDeleted:
            break
        }
    }

    private mutating func end(_ userID: String, at seq: Int64) {
        guard var span = spans[userID], span.added <= seq else { return }
        if span.removed == nil || span.removed! > seq { span.removed = seq }
        spans[userID] = span
    }
}
