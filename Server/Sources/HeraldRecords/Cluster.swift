import Foundation
import NIOConcurrencyHelpers

/// What the push decision knows of one user's connections on the other nodes.
public struct RemotePresence: Hashable, Sendable {
    /// Whether any of them is in the foreground.
    public var foreground: Bool
    /// The devices they said they are (the stream's `device`).
    public var devices: Set<String>

    /// One of these, member by member.
    package init(foreground: Bool, devices: Set<String>) {
        self.foreground = foreground
        self.devices = devices
    }
}

/// The connections of the other nodes, for the push decision (docs/behaviour.md, "Who gets told"): a member in the
/// foreground on node A gets no push for a message posted on node B.
public protocol ClusterPresence: Sendable {
    /// For each of `users` with a connection on another live node, what those connections say.
    func othersPresence(of users: Set<String>) async throws -> [String: RemotePresence]
}

/// What the nodes of one deployment tell each other (docs/deploy.md, "Several nodes"): who is connected where, which
/// users were erased, which alerts were pushed to a connected device, and the settings every node shares (the token
/// secret, the VAPID key). The other nodes' commits reach this node's log through its store (``CommitSink``).
///
/// One node alone is a ``SingleNode``: it tells no one, and keeps its settings in files beside its database. Nodes on
/// PostgreSQL tell each other through it (`PostgresCluster`). The server is built the same way on either.
public protocol Cluster: ClusterPresence {
    /// A connection of this node changed its presence (or closed).
    func record(_ change: PresenceChange)

    /// What this node does when another node erased a user (`erased`, with the user's id), and when any node,
    /// this one too, pushed an alert to a device (`pushed`). Set once, before the node serves.
    func listen(erased: @escaping @Sendable (String) -> Void, pushed: @escaping @Sendable (PushedNotice) -> Void)

    /// Tells every node, this one too, that `notice`'s alert was pushed: the device's streams say so.
    func announce(_ notice: PushedNotice) async

    /// The value every node shares under `name`: the one kept, or else `make()`'s, kept by whichever node asked
    /// first.
    ///
    /// - Throws: when it cannot be read or kept.
    func sharedSetting(_ name: SharedSetting, make: () -> String) async throws -> String
}

/// A value every node of a deployment shares.
public enum SharedSetting: String, Sendable, CaseIterable {
    /// The secret tokens are signed with, unless `HERALD_JWT_SECRET` gives it.
    case tokenSecret = "token_secret"
    /// The VAPID key pair (PEM), unless `HERALD_VAPID_PRIVATE_KEY_FILE` gives it.
    case vapidKey = "vapid_key"

    /// The file a single node keeps it in, beside its database: `<database>.secret`, `<database>.vapid`.
    public var fileSuffix: String {
        switch self {
        case .tokenSecret: ".secret"
        case .vapidKey: ".vapid"
        }
    }
}

/// An alert pushed to a device, as the nodes tell it on `herald_entries` (`pushed:` and its JSON): the device's
/// streams, on whichever node, say so (the `pushed` frame).
public struct PushedNotice: Codable, Hashable, Sendable {
    package var user: String
    package var device: String
    package var conversation: String
    package var message: String
    package var seq: Int64

    /// The notice of an alert (nil for another job).
    package init?(job: PushJob) {
        guard job.kind == .alert, let message = job.content.messageID else { return nil }
        self.init(user: job.device.userID, device: job.device.id, conversation: job.content.conversationID,
                  message: message, seq: job.content.seq)
    }

    package init(user: String, device: String, conversation: String, message: String, seq: Int64) {
        self.user = user
        self.device = device
        self.conversation = conversation
        self.message = message
        self.seq = seq
    }

    /// What the notification carries.
    package var payload: String {
        // Strings and a number: encoding cannot fail.
        "pushed:" + String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self)
    }

    package init?(payload: String) {
        guard payload.hasPrefix("pushed:"),
              let notice = try? JSONDecoder().decode(Self.self, from: Data(payload.utf8.dropFirst(7)))
        else { return nil }
        self = notice
    }
}

/// A callback kept where several threads read it (a lock's box): the closure inside a struct.
///
/// A closure kept directly as a generic box's value is re-abstracted at every `inout` access, and the access writes
/// the re-wrapped closure back: each read adds a thunk around it, until a call runs through hundreds of thousands
/// of them and overflows the stack (a node alone crashed after some 60,000 pushes). A struct's field keeps the
/// abstraction it was declared with, so reading the struct wraps nothing.
package struct Callback<Argument>: Sendable {
    /// The closure.
    package let call: @Sendable (Argument) -> Void

    /// Keeps `call`.
    package init(_ call: @escaping @Sendable (Argument) -> Void) {
        self.call = call
    }
}
