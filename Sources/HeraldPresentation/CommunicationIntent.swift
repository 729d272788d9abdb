import HeraldCore

/// Someone a communication notification names: the sender, or a recipient. A Notification Service Extension makes an
/// `INPerson` of each (`personHandle` and `customIdentifier` from ``id``, `displayName`, `isMe`).
public struct CommunicationParticipant: Hashable, Sendable {
    /// Who it is: a Herald user id, or for the stand-in of a group's other members `group:<conversation id>`. Empty
    /// for this member when the extension does not know their id (the app had not kept it yet).
    public var id: String
    /// The name shown, nil for none.
    public var displayName: String?
    /// Whether it is the person this device belongs to.
    public var isMe: Bool

    /// A participant.
    public init(id: String, displayName: String?, isMe: Bool = false) {
        self.id = id
        self.displayName = displayName
        self.isMe = isMe
    }
}

/// What the `INSendMessageIntent` of a message push says, decided from the push (``CommunicationNotification``) and
/// the notification's body: the extension copies each field into the intent and does nothing else.
///
/// iOS shows a communication notification as a group's (the group's name above the sender's) only when the intent
/// has more than one recipient and a `speakableGroupName`; with one recipient, or none, it is a direct chat's, and a
/// Reply goes to the sender alone. A push carries neither the group's members nor who it is for, so a group's
/// recipients are this member (`isMe`) and one stand-in for the group's other members, named as the group; a direct
/// chat's are this member alone (none when the extension does not know them), with no group name.
public struct CommunicationIntent: Hashable, Sendable {
    /// Who wrote it (`sender`).
    public var sender: CommunicationParticipant
    /// To whom (`recipients`): more than one for a group, at most one for a direct chat.
    public var recipients: [CommunicationParticipant]
    /// The group's name (`speakableGroupName`); nil for a direct chat.
    public var groupName: String?
    /// The conversation (`conversationIdentifier`).
    public var conversationID: String
    /// The message's words (the intent's `content`, and the notification's body once it is a communication
    /// notification): a group's body without the `<sender>: ` the plain alert starts with, since iOS now shows the
    /// sender's name beside it.
    public var text: String
    /// Whether the message names this member (`INSendMessageIntentDonationMetadata.mentionsCurrentUser`).
    public var mentionsMe: Bool

    /// How many it went to (`INSendMessageIntentDonationMetadata.recipientCount`): one for a direct chat (this
    /// member, named or not); for a group, its recipients here, at least two (the push does not say how many it has).
    public var recipientCount: Int { groupName == nil ? 1 : max(2, recipients.count) }
}

extension CommunicationNotification {
    /// The intent for this push, whose alert's body is `body` (as the extension received it, or as a private push
    /// was filled in), for the member `me` (nil when the extension does not know who is signed in).
    public func intent(body: String, me: CommunicationParticipant?) -> CommunicationIntent {
        let member = me.map { CommunicationParticipant(id: $0.id, displayName: $0.displayName, isMe: true) }
        let sender = CommunicationParticipant(id: senderID, displayName: senderName)
        guard let groupName else {
            return CommunicationIntent(
                sender: sender, recipients: member.map { [$0] } ?? [], groupName: nil, conversationID: conversationID,
                text: body, mentionsMe: mentioned)
        }
        let others = CommunicationParticipant(id: "group:\(conversationID)", displayName: groupName)
        return CommunicationIntent(
            sender: sender,
            recipients: [member ?? CommunicationParticipant(id: "", displayName: nil, isMe: true), others],
            groupName: groupName, conversationID: conversationID, text: Self.withoutSender(body, senderName),
            mentionsMe: mentioned)
    }

    /// `body` without a leading `<name>: ` (the server's group body, `HERALD_GROUP_MESSAGE`); `body` itself when it
    /// does not start so (another language's format, or a name the push clipped) or nothing would be left.
    static func withoutSender(_ body: String, _ name: String) -> String {
        let prefix = name + ": "
        guard body.hasPrefix(prefix) else { return body }
        let rest = String(body.dropFirst(prefix.count))
        return rest.isEmpty ? body : rest
    }
}
