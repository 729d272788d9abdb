import HeraldCore
import HeraldRecords
import NIOConcurrencyHelpers
import HeraldProtocol

/// The live connections: who is connected, what each is looking at, and the fan-out of new messages.
///
/// Presence answers the push decision's questions (docs/behaviour.md §1, rules 7 and 8): is any of this user's devices
/// in the foreground, and which of them are connected; the decision waits for those to confirm.
public final class Hub: Sendable {
    private struct Connection {
        var userID: String
        var presence: ConnectionPresence
    }

    private struct State {
        var nextID = 0
        var connections: [Int: Connection] = [:]
        /// Each user's connections with their peers (kept here only): the fan-out reads the peers without copying a
        /// connection.
        var byUser: [String: [Int: StreamPeer]] = [:]
    }

    private let state = NIOLockedValueBox(State())
    /// Told of every change of presence (with several nodes, so the others can see it).
    private let observer: (@Sendable (PresenceChange) -> Void)?
    /// The event loops' lanes that frames reach the streams by.
    let lanes = DeliveryLanes()
    /// Told when the last connection closes.
    private let emptied = WakeSignal()

    /// Creates an empty hub; `observer` is told of every connection's presence as it changes.
    public init(observer: (@Sendable (PresenceChange) -> Void)? = nil) {
        self.observer = observer
    }

    /// Adds a connection of `userID`; nil when they already have `limit` open.
    func register(userID: String, device: String? = nil, peer: StreamPeer, limit: Int) -> Int? {
        let presence = ConnectionPresence(appState: .foreground, focus: nil, device: device)
        let id = state.withLockedValue { state -> Int? in
            guard (state.byUser[userID]?.count ?? 0) < limit else { return nil }
            state.nextID += 1
            let id = state.nextID
            state.connections[id] = Connection(userID: userID, presence: presence)
            state.byUser[userID, default: [:]][id] = peer
            return id
        }
        if let id {
            HeraldMetrics.connectionsOpen.increment()
            observer?(PresenceChange(connection: id, userID: userID, presence: presence))
        }
        return id
    }

    func unregister(_ id: Int) {
        let (removed, empty) = state.withLockedValue { state -> (Connection?, Bool) in
            guard let connection = state.connections.removeValue(forKey: id) else { return (nil, false) }
            state.byUser[connection.userID]?.removeValue(forKey: id)
            if state.byUser[connection.userID]?.isEmpty == true {
                state.byUser.removeValue(forKey: connection.userID)
            }
            return (connection, state.connections.isEmpty)
        }
        if empty { emptied.notify() }
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
    /// The frame is encoded once, and only when someone is connected to receive it; it reaches the connections of each
    /// event loop in one hand-over (``DeliveryLane``).
    func publish(_ incoming: IncomingMessage, to memberIDs: [String]) {
        let peers = state.withLockedValue { state in
            var peers: [StreamPeer] = []
            peers.reserveCapacity(memberIDs.count)
            for member in memberIDs {
                // One by one: appending a dictionary's values as a sequence cost ten times as much a stream.
                guard let connections = state.byUser[member] else { continue }
                for peer in connections.values { peers.append(peer) }
            }
            return peers
        }
        guard !peers.isEmpty else { return }
        HeraldMetrics.deliveries.increment(by: peers.count)
        let frame = StreamDelivery.frame(OutboundFrame(seq: incoming.message.seq, text: ServerFrame.message(incoming).text))
        lanes.deliver(frame, to: peers)
    }

    /// The peers of `userID`'s connections (of everyone's, for nil), or of those that said they are `device`.
    private func peers(of userID: String?, device: String? = nil) -> [StreamPeer] {
        state.withLockedValue { state in
            let peers = userID.map { Array(state.byUser[$0] ?? [:]) } ?? state.byUser.values.flatMap { $0 }
            return peers.compactMap { id, peer -> StreamPeer? in
                guard device == nil || state.connections[id]?.presence.device == device else { return nil }
                return peer
            }
        }
    }

    /// Ends every stream of `userID`: each writes what is queued, then closes (1008, `reason`).
    func close(userID: String, reason: String) {
        let close = StreamDelivery.close(.init(code: .policyViolation, reason: reason, stopReading: false))
        lanes.deliver(close, to: peers(of: userID))
    }

    /// Ends every stream, at a graceful stop: each writes what is queued, then closes (1000); nothing more is queued,
    /// and nothing more its client sends is read.
    func closeAll() {
        let close = StreamDelivery.close(.init(code: .normalClosure, reason: "", stopReading: true))
        lanes.deliver(close, to: peers(of: nil))
    }

    /// Returns once no connection is open, or after `limit`.
    func waitUntilEmpty(within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while connectionCount > 0, ContinuousClock.now < deadline, !Task.isCancelled {
            await emptied.wait(timeout: ContinuousClock.now.duration(to: deadline))
        }
    }

    /// Sends `frame` to every connection of `userID`, or of its `device` only. Never waits.
    func send(_ frame: ServerFrame, toUser userID: String, device: String? = nil) {
        let peers = peers(of: userID, device: device)
        guard !peers.isEmpty else { return }
        let outbound = StreamDelivery.frame(OutboundFrame(text: frame.text))
        lanes.deliver(outbound, to: peers)
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
            (state.byUser[userID] ?? [:]).keys.sorted().compactMap { state.connections[$0]?.presence }
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
            Set((state.byUser[userID] ?? [:]).keys.compactMap { state.connections[$0]?.presence.device })
        }
    }

    /// How many connections are open.
    public var connectionCount: Int {
        state.withLockedValue { $0.connections.count }
    }
}
