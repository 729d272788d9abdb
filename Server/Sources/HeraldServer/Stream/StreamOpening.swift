import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The asynchronous part of opening a stream, run on ``StreamWork``: check the token, register with the hub, catch up
/// after `after`, say `ready`. Then the stream is live, in its handler, and this work ends.
///
/// The connection registers with the hub before it reads the latest `seq`, so every message stored after that
/// reading waits in the handler's queue; the catch-up sends what is stored up to it, and the queue what came after,
/// skipping any the catch-up already sent: no gap and no duplicate. Without `after`, the catch-up starts at the
/// latest `seq` read before registering, so nothing stored while the connection was being set up is missed.
struct StreamOpening: Sendable {
    /// The upgrade request: its token, `after` and `device`.
    let asked: StreamController.StreamRequest
    let peer: StreamPeer
    let services: StreamServices
    let authentication: AuthenticationMiddleware
    let work: StreamWork
    let logger: Logger

    private var limits: ServerLimits { services.rules.limits }
    private var after: Int64? { asked.after }
    private var device: String? { asked.device }

    func run() async {
        let identity: Identity
        do {
            identity = try await authentication.authenticate(asked.request)
        } catch {
            return refuse(APIError(error))
        }
        do {
            // An `after` beyond the latest seq is taken as the latest: `ready` tells the client where it really is.
            let latest = try await services.store.latestSeq()
            let start = min(after ?? latest, latest)
            do {
                try services.userLimits.openStream(by: identity.userID)
            } catch let refusal as APIError {
                return refuse(refusal)
            }
            guard let connection = services.hub.register(
                userID: identity.userID, device: device, peer: peer, limit: limits.streamsPerUser) else {
                return refuse(APIError.rateLimited("a user has at most \(limits.streamsPerUser) streams open", retryAfter: 10))
            }
            let session = StreamHandler.Session(
                identity: identity, device: device, connection: connection, peer: peer, services: services, work: work)
            peer.withHandler { $0.start(session) }
            services.webhooks.connected(identity.userID, latest: latest)
            if let device {
                // The device has what it resumes after (nothing, without `after`), and from now on the server remembers
                // what it pushes to it, for its next catch-up's `pushed` frames.
                services.push.confirmed(userID: identity.userID, device: device, through: after == nil ? 0 : start)
            }
            logger.debug("stream opened", metadata: ["user": "\(identity.userID)", "after": "\(start)"])
            try await catchUp(identity, from: start)
        } catch let error as ChannelError {
            logger.debug("stream closed while opening", metadata: ["error": "\(error)"])
        } catch {
            logger.error("stream could not open", metadata: ["error": "\(error)"])
            peer.withHandler { $0.abort() }
        }
    }

    private func refuse(_ refusal: APIError) {
        peer.withHandler { $0.refuse(refusal) }
    }

    /// Everything stored up to the latest seq, read from the database a window of seqs at a time, so that a long
    /// catch-up is many short queries and never holds the database from other users' posts; then `ready`.
    private func catchUp(_ identity: Identity, from start: Int64) async throws {
        let through = try await services.store.latestSeq()
        var cursor = start
        var caughtUp = 0
        // What was pushed to this device meanwhile: each such message comes after a `pushed` frame, so the device
        // does not notify it a second time.
        var pushed: Set<Int64> = []
        if let device, start < through {
            pushed = try await services.store.pushedSeqs(userID: identity.userID, device: device, after: start, through: through)
        }
        while cursor < through {
            let upper = min(through, cursor + limits.catchUpWindow)
            let page = try await services.store.entries(
                for: identity.userID, after: cursor, through: upper, limit: limits.catchUpPageSize)
            try await peer.writeCatchUp(page.flatMap { entry -> [OutboundFrame] in
                let message = OutboundFrame(text: ServerFrame.message(entry).text)
                guard let seq = entry.message.seq, pushed.contains(seq) else { return [message] }
                let notice = ServerFrame.pushed(conversationID: entry.conversation.id, messageID: entry.message.id, seq: seq)
                return [OutboundFrame(text: notice.text), message]
            })
            caughtUp += page.count
            cursor = page.count == limits.catchUpPageSize ? (page.last?.message.seq ?? upper) : upper
        }
        HeraldMetrics.catchUp.record(caughtUp)
        // With retention, a catch-up from before the horizon missed entries that are gone: `ready` says so.
        var horizon: Int64?
        if !services.keepsEverything, start < through {
            let kept = try await services.store.retentionHorizon()
            if start < kept { horizon = kept }
        }
        peer.withHandler { [horizon] in $0.goLive(through: through, horizon: horizon) }
    }
}

/// What every stream uses: the entries it catches up on, the hub it registers with, the push dispatcher it confirms
/// to, the webhooks it tells of a connection, the messenger it posts with, and the limits.
///
/// One for the server, shared by every stream (a stream holds a reference, not a copy).
final class StreamServices: Sendable {
    let store: any EntryStore & PushOutbox
    let hub: Hub
    let push: PushDispatcher
    let webhooks: WebhookDispatcher
    let messenger: Messenger
    let userLimits: UserLimits
    let rules: StreamRules
    /// No retention (`HERALD_RETENTION`): a catch-up never starts before what is kept.
    let keepsEverything: Bool

    init(
        store: any EntryStore & PushOutbox, hub: Hub, push: PushDispatcher, webhooks: WebhookDispatcher,
        messenger: Messenger, userLimits: UserLimits, rules: StreamRules, keepsEverything: Bool
    ) {
        self.store = store
        self.hub = hub
        self.push = push
        self.webhooks = webhooks
        self.messenger = messenger
        self.userLimits = userLimits
        self.rules = rules
        self.keepsEverything = keepsEverything
    }
}

/// The limits and timeouts every stream keeps to, shared by all of them.
final class StreamRules: Sendable {
    let limits: ServerLimits
    let timeouts: ServerTimeouts

    init(limits: ServerLimits, timeouts: ServerTimeouts) {
        self.limits = limits
        self.timeouts = timeouts
    }
}

/// Says whether something is the first for a key, each key once, for up to `limit` keys (then never again): a
/// warning per user that cannot fill the log or memory.
final class OnceEach: Sendable {
    private let seen = NIOLockedValueBox<Set<String>>([])
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// True the first time `key` is asked about, while fewer than `limit` keys were.
    func firstWarning(for key: String) -> Bool {
        seen.withLockedValue { seen in
            guard seen.count < limit, !seen.contains(key) else { return false }
            seen.insert(key)
            return true
        }
    }
}
