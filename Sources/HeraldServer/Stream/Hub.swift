import HeraldCore
import NIOConcurrencyHelpers
import HeraldProtocol

/// What one connection tells the server about its device.
public struct ConnectionPresence: Hashable, Sendable {
    /// Foreground or background; a connection starts in the foreground.
    public var appState: AppState
    /// The conversation it has open, if any.
    public var focus: String?
    /// The app's id for the device (the stream's `device` parameter), if it said: a device with a live connection
    /// shows its own notification, and its push waits for its confirmation.
    public var device: String?
}

/// A connection's presence changed (or it ended: `presence` nil), as other nodes need to know it.
public struct PresenceChange: Sendable {
    /// The connection, unique on this node.
    public var connection: Int
    /// Its user.
    public var userID: String
    /// What it says now; nil once it closed.
    public var presence: ConnectionPresence?
}

/// The live connections: who is connected, what each is looking at, and the fan-out of new messages.
///
/// Presence answers the push decision's questions (docs/behaviour.md §1, rules 7 and 8): is any of this user's devices
/// in the foreground, and which of them are connected; the decision waits for those to confirm.
public final class Hub: Sendable {
    private struct Connection {
        var userID: String
        var outbox: Outbox
        var presence: ConnectionPresence
    }

    private struct State {
        var nextID = 0
        var connections: [Int: Connection] = [:]
        var byUser: [String: Set<Int>] = [:]
    }

    private let state = NIOLockedValueBox(State())
    /// Told of every change of presence (with several nodes, so the others can see it).
    private let observer: (@Sendable (PresenceChange) -> Void)?

    /// Creates an empty hub; `observer` is told of every connection's presence as it changes.
    public init(observer: (@Sendable (PresenceChange) -> Void)? = nil) {
        self.observer = observer
    }

    /// Adds a connection of `userID`; nil when they already have `limit` open.
    func register(userID: String, device: String? = nil, outbox: Outbox, limit: Int) -> Int? {
        let presence = ConnectionPresence(appState: .foreground, focus: nil, device: device)
        let id = state.withLockedValue { state -> Int? in
            guard (state.byUser[userID]?.count ?? 0) < limit else { return nil }
            state.nextID += 1
            let id = state.nextID
            state.connections[id] = Connection(userID: userID, outbox: outbox, presence: presence)
            state.byUser[userID, default: []].insert(id)
            return id
        }
        if let id {
            HeraldMetrics.connectionsOpen.increment()
            observer?(PresenceChange(connection: id, userID: userID, presence: presence))
        }
        return id
    }

    func unregister(_ id: Int) {
        let removed = state.withLockedValue { state -> Connection? in
            guard let connection = state.connections.removeValue(forKey: id) else { return nil }
            state.byUser[connection.userID]?.remove(id)
            if state.byUser[connection.userID]?.isEmpty == true {
                state.byUser.removeValue(forKey: connection.userID)
            }
            return connection
        }
        if let removed {
            HeraldMetrics.connectionsOpen.decrement()
            observer?(PresenceChange(connection: id, userID: removed.userID, presence: nil))
        }
    }

    func update(_ id: Int, _ change: (inout ConnectionPresence) -> Void) {
        let changed = state.withLockedValue { state -> Connection? in
            guard var connection = state.connections[id] else { return nil }
            let before = connection.presence
            change(&connection.presence)
            state.connections[id] = connection
            return connection.presence == before ? nil : connection
        }
        if let changed { observer?(PresenceChange(connection: id, userID: changed.userID, presence: changed.presence)) }
    }

    /// Sends a stored message to every connection of its conversation's members. Never waits.
    ///
    /// The frame is encoded once, and only when someone is connected to receive it.
    func publish(_ incoming: IncomingMessage, to memberIDs: [String]) {
        let outboxes = state.withLockedValue { state in
            var outboxes: [Outbox] = []
            for member in memberIDs {
                for id in state.byUser[member] ?? [] {
                    if let outbox = state.connections[id]?.outbox { outboxes.append(outbox) }
                }
            }
            return outboxes
        }
        guard !outboxes.isEmpty else { return }
        HeraldMetrics.deliveries.increment(by: outboxes.count)
        let frame = OutboundFrame(seq: incoming.message.seq, text: ServerFrame.message(incoming).text)
        for outbox in outboxes {
            outbox.send(frame)
        }
    }

    /// The outboxes of `userID`'s connections, or of those that said they are `device`.
    private func outboxes(of userID: String, device: String? = nil) -> [Outbox] {
        state.withLockedValue { state in
            (state.byUser[userID] ?? []).compactMap { id -> Outbox? in
                guard let connection = state.connections[id], device == nil || connection.presence.device == device else { return nil }
                return connection.outbox
            }
        }
    }

    /// Ends every stream of `userID`: each writes what is queued, then closes (1008, `reason`).
    func close(userID: String, reason: String) {
        for outbox in outboxes(of: userID) { outbox.finish(closing: reason) }
    }

    /// Sends `frame` to every connection of `userID`, or of its `device` only. Never waits.
    func send(_ frame: ServerFrame, toUser userID: String, device: String? = nil) {
        let outboxes = outboxes(of: userID, device: device)
        guard !outboxes.isEmpty else { return }
        let outbound = OutboundFrame(text: frame.text)
        for outbox in outboxes {
            outbox.send(outbound)
        }
    }

    /// Tells the streams of the device an alert was pushed to (the `pushed` frame), so it does not notify the
    /// message itself. Never waits.
    func pushed(_ notice: PushedNotice) {
        send(.pushed(conversationID: notice.conversation, messageID: notice.message, seq: notice.seq),
             toUser: notice.user, device: notice.device)
    }

    /// The presence of each connection of `userID`.
    public func presence(of userID: String) -> [ConnectionPresence] {
        state.withLockedValue { state in
            (state.byUser[userID] ?? []).sorted().compactMap { state.connections[$0]?.presence }
        }
    }

    /// Whether `userID` has `conversationID` open, in the foreground, on any connected device.
    public func isLooking(userID: String, at conversationID: String) -> Bool {
        presence(of: userID).contains { $0.appState == .foreground && $0.focus == conversationID }
    }

    /// Whether any connected device of `userID` is in the foreground.
    public func hasForegroundConnection(userID: String) -> Bool {
        presence(of: userID).contains { $0.appState == .foreground }
    }

    /// The devices of `userID` with a live connection (those that said which device they are).
    public func connectedDevices(of userID: String) -> Set<String> {
        state.withLockedValue { state in
            Set((state.byUser[userID] ?? []).compactMap { state.connections[$0]?.presence.device })
        }
    }

    /// How many connections are open.
    public var connectionCount: Int {
        state.withLockedValue { $0.connections.count }
    }
}
