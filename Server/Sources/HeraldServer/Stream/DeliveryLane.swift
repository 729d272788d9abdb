import NIOConcurrencyHelpers
import NIOCore

/// A stream as the hub sees it: its handler, reached on its channel's event loop through the loop's lane.
final class StreamPeer: Sendable {
    private let handler: NIOLoopBound<StreamHandler>
    let lane: DeliveryLane

    /// A peer for `handler`, which must be in a pipeline on `lane`'s event loop.
    init(_ handler: StreamHandler, lane: DeliveryLane) {
        self.handler = NIOLoopBound(handler, eventLoop: lane.eventLoop)
        self.lane = lane
    }

    /// Runs `body` with the handler on its event loop (at once when called there).
    func withHandler(_ body: @escaping @Sendable (StreamHandler) -> Void) {
        if lane.eventLoop.inEventLoop {
            body(handler.value)
        } else {
            lane.eventLoop.execute { [handler] in body(handler.value) }
        }
    }

    /// The handler; on the event loop only.
    fileprivate var onLoop: StreamHandler { handler.value }
}

/// What the hub hands the streams of one event loop: everything handed over before the loop gets to it goes in one
/// trip, and each stream is flushed once per trip, however many frames it took.
///
/// So a message for a thousand streams spread over four loops is four hand-overs, not a thousand wake-ups, and its
/// frame is one buffer that all of them write.
final class DeliveryLane: Sendable {
    private struct Pending {
        var items: [(StreamPeer, StreamDelivery)] = []
        var scheduled = false

        /// Whether a trip must be scheduled for what is pending (none is yet); notes that one will be.
        mutating func needsRun() -> Bool {
            guard !scheduled, !items.isEmpty else { return false }
            scheduled = true
            return true
        }
    }

    let eventLoop: any EventLoop
    private let pending = NIOLockedValueBox(Pending())

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Hands `items` to their streams on the loop. Never waits.
    func add(_ items: some Sequence<(StreamPeer, StreamDelivery)>) {
        schedule(pending.withLockedValue { pending -> Bool in
            pending.items.append(contentsOf: items)
            return pending.needsRun()
        })
    }

    /// Hands `items` to their streams on the loop; when nothing is waiting, the list itself becomes what waits (the
    /// usual case: a trip runs before the next message comes). Never waits.
    func add(_ items: [(StreamPeer, StreamDelivery)]) {
        schedule(pending.withLockedValue { pending -> Bool in
            if pending.items.isEmpty { pending.items = items } else { pending.items.append(contentsOf: items) }
            return pending.needsRun()
        })
    }

    private func schedule(_ needed: Bool) {
        if needed { eventLoop.execute { self.run() } }
    }

    private func run() {
        let items = pending.withLockedValue { pending -> [(StreamPeer, StreamDelivery)] in
            pending.scheduled = false
            defer { pending.items = [] }
            return pending.items
        }
        // Each stream once, in the order it was first touched: a handler notes that it is in this trip.
        var touched: [StreamHandler] = []
        touched.reserveCapacity(items.count)
        for (peer, delivery) in items {
            let handler = peer.onLoop
            handler.deliver(delivery)
            if !handler.inTrip {
                handler.inTrip = true
                touched.append(handler)
            }
        }
        for handler in touched {
            handler.inTrip = false
            handler.flush()
        }
    }
}

/// One lane per event loop, made as streams open on it.
final class DeliveryLanes: Sendable {
    private let lanes = NIOLockedValueBox<[ObjectIdentifier: DeliveryLane]>([:])

    /// The lane of `eventLoop`.
    func lane(for eventLoop: any EventLoop) -> DeliveryLane {
        lanes.withLockedValue { lanes in
            let key = ObjectIdentifier(eventLoop as AnyObject)
            if let lane = lanes[key] { return lane }
            let lane = DeliveryLane(eventLoop: eventLoop)
            lanes[key] = lane
            return lane
        }
    }

    /// Hands `delivery` to each of `peers`' streams, one hand-over per loop.
    func deliver(_ delivery: StreamDelivery, to peers: [StreamPeer]) {
        // A loop or two per hand-over, rarely more than the cores: lanes found by identity in a short list, each
        // lane's list made in one pass (it is what the lane keeps until its trip).
        var byLane: [(lane: DeliveryLane, items: [(StreamPeer, StreamDelivery)])] = []
        byLane.reserveCapacity(4)
        for peer in peers {
            if let index = byLane.firstIndex(where: { $0.lane === peer.lane }) {
                byLane[index].items.append((peer, delivery))
            } else {
                var items: [(StreamPeer, StreamDelivery)] = []
                items.reserveCapacity(peers.count)
                items.append((peer, delivery))
                byLane.append((peer.lane, items))
            }
        }
        for group in byLane { group.lane.add(group.items) }
    }
}

extension StreamPeer {
    /// Writes a page of the catch-up; returns once the socket can take more.
    ///
    /// - Throws: `ChannelError.ioOnClosedChannel` once the stream is closed or closing.
    func writeCatchUp(_ frames: [OutboundFrame]) async throws {
        let loop = lane.eventLoop
        try await loop.flatSubmit { [self] in
            onLoop.writeCatchUp(frames) ?? loop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }.get()
    }
}
