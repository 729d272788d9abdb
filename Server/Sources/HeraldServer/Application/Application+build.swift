import HeraldRecords
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// What the running server is made of: its settings, storage, live connections and token authority.
///
/// Tests build one and keep it, to ask the hub about presence or the store about what it holds.
public struct ServerEnvironment: Sendable {
    /// The settings it was made with.
    public let configuration: ServerConfiguration
    /// Where everything is kept.
    public let store: any Store
    /// The node's event log: what the store commits, handed to the live streams, the push decider and the webhook
    /// feed in `seq` order.
    public let log: EventLog
    /// The live connections and presence.
    public let hub: Hub
    /// Verifies and signs tokens.
    public let tokens: TokenAuthority
    /// Push delivery: the decision, the outbox and the providers.
    public let push: PushDispatcher
    /// The server's identity towards Web Push services.
    public let vapid: VAPID
    /// Each user's allowance of posts and new conversations.
    let userLimits: UserLimits
    /// The conversations' members, in memory, kept current by the log.
    let memberships: Memberships
    /// The users seen so far, remembered in the store on their first request.
    let users: UserDirectory
    /// Webhooks to the app's backend.
    let webhooks: WebhookDispatcher
    /// Where the streams' opening and sends run.
    let streamWork: StreamWork
    let services: [any Service]

    /// Opens the database (migrating it) and resolves the token secret: SQLite, or PostgreSQL when
    /// ``ServerConfiguration/postgresURL`` is set (waiting, with back-off, for a database that cannot be reached yet).
    public static func make(_ configuration: ServerConfiguration, logger: Logger) async throws -> ServerEnvironment {
        let storage = try await OpenStorage.open(configuration, logger: logger)
        var http: PushHTTP?
        do {
            // Every node signs alike: the secret and the VAPID key are the nodes' shared ones unless given.
            let secret = try await configuration.resolveSecret(sharedBy: storage.cluster)
            let vapid = try await VAPID.shared(
                by: storage.cluster, file: configuration.push.vapidKeyFile, subject: configuration.push.vapidSubject)
            let providers: [any PushProvider]
            (providers, http) = try await PushProviders.make(
                configuration.push, vapid: vapid, demo: configuration.demo, logger: logger)
            let log = try await EventLog.attached(to: storage.store, logger: logger)
            return await ServerEnvironment(
                configuration, storage: storage, log: log, secret: secret, vapid: vapid, providers: providers, http: http,
                logger: logger)
        } catch {
            await http?.shutdown()
            await storage.close()
            throw error
        }
    }

    var messenger: Messenger {
        Messenger(
            store: store, push: push, webhooks: webhooks, limits: configuration.limits, userLimits: userLimits,
            memberships: memberships)
    }

    var authentication: AuthenticationMiddleware {
        AuthenticationMiddleware(tokens: tokens, users: users)
    }

    var streams: StreamController {
        StreamController(
            streams: StreamServices(
                store: store, hub: hub, push: push, webhooks: webhooks, messenger: messenger, userLimits: userLimits,
                rules: StreamRules(limits: configuration.limits, timeouts: configuration.timeouts),
                keepsEverything: configuration.retention == nil),
            authentication: authentication, work: streamWork)
    }
}

extension ServerEnvironment {
    /// The rest, around an open store.
    private init(
        _ configuration: ServerConfiguration, storage: OpenStorage, log: EventLog, secret: String, vapid: VAPID,
        providers: [any PushProvider], http: PushHTTP?, logger: Logger
    ) async {
        let (store, cluster) = (storage.store, storage.cluster)
        let hub = Hub(observer: { cluster.record($0) })
        let memberships = Memberships()
        let webhooks = WebhookDispatcher(
            store: store, log: log, hub: hub, memberships: memberships, cluster: cluster,
            settings: configuration.webhooks, lease: configuration.push.lease, logger: logger)
        let push = PushDispatcher(
            store: store, log: log, hub: hub, memberships: memberships, cluster: cluster, providers: providers,
            settings: configuration.push, http: http, webhooks: webhooks, clock: configuration.clock, logger: logger)
        // What the log hands on goes to this node's connections, then to the push decider and the webhook feed.
        log.add(FanOut(hub: hub, memberships: memberships, store: store, logger: logger))
        log.add(push.decider)
        log.add(webhooks.feed)
        let users = UserDirectory(store: store) { [hub] in hub.close(userID: $0, reason: APIError.Code.userErased.rawValue) }
        // An erasure made on another node is told to this one at once; an alert any node pushed, to the device's
        // streams here.
        cluster.listen(erased: { users.erased($0) }, pushed: { [hub] in hub.pushed($0) })
        // A stream given its drain time and its closing handshake to close at a stop.
        let streamWork = StreamWork(hub: hub, closeLimit: configuration.timeouts.overflowDrain + StreamHandler.closeTimeout)
        self.init(
            configuration: configuration,
            store: store,
            log: log,
            hub: hub,
            tokens: await TokenAuthority(secret: secret, openID: configuration.openID, logger: logger),
            push: push,
            vapid: vapid,
            userLimits: UserLimits(configuration.limits),
            memberships: memberships,
            users: users,
            webhooks: webhooks,
            streamWork: streamWork,
            // Stopped in reverse: the streams' work, then the webhook and push loops before the database they write to.
            services: storage.services + [push, webhooks] + (configuration.retention.map {
                [Retention(store: store, keep: $0, pushing: !providers.isEmpty, webhooks: configuration.webhooks.isOn, logger: logger)]
            } ?? []) + [streamWork]
        )
    }
}

/// Builds the Herald server application: the router, the WebSocket upgrade, and the services it runs.
///
/// - Parameter onServerRunning: called with the bound port once the server listens (useful with port 0).
public func buildApplication(
    _ environment: ServerEnvironment,
    logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> HeraldApplication<some ApplicationProtocol> {
    let router = buildRouter(environment, logger: logger)
    var application = Application(
        router: router,
        server: httpServer(streams: environment.streams, configuration: environment.configuration),
        configuration: .init(
            address: .hostname(environment.configuration.host, port: environment.configuration.port),
            serverName: "Herald"
        ),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
        logger: logger
    )
    application.addServices(environment.services)
    if environment.configuration.demo {
        // After the database service has started, before the server accepts anyone.
        application.beforeServerStarts {
            try await DemoData.seed(environment)
        }
    }
    return HeraldApplication(application: application, hub: environment.hub)
}

/// The Hummingbird application and the streams beside it: at a graceful stop, the streams (which live in their
/// channels, not in the server's tasks) are told to close at once, while the server stops accepting and answers what
/// is in flight.
public struct HeraldApplication<Inner: ApplicationProtocol>: Service {
    let application: Inner
    let hub: Hub

    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await application.run()
        } onGracefulShutdown: { [hub] in
            hub.closeAll()
        }
    }
}

/// HTTP/1.1 with the WebSocket upgrade, every connection guarded (``GuardedChildChannel``): header and idle
/// timeouts, 431 for oversized heads, 400 and a close for requests that cannot be parsed.
private func httpServer(streams: StreamController, configuration: ServerConfiguration) -> HTTPServerBuilder {
    var configuredHTTP1 = HTTP1Channel.Configuration(idleTimeout: nil)
    configuredHTTP1.httpDecoder = .init(maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 32 * 1024, maxHeaderFieldCount: 100)
    let http1 = configuredHTTP1
    let timeouts = configuration.timeouts
    let descriptors = FileDescriptorLimit.raise()
    let gate = ConnectionGate(limit: configuration.limits.maxConnections ?? max(1, descriptors - FileDescriptorLimit.reserve))
    return HTTPServerBuilder { responder in
        GuardedChildChannel(
            inner: StreamUpgradeChannel(
                responder: responder, http1: http1, maxFrameSize: configuration.limits.maxAcceptedFrameBytes,
                streams: streams),
            timeouts: timeouts,
            gate: gate
        )
    }
}

/// The routes: the web page at `/`, `/health` and `/openapi.yaml` for anyone (and the demo's sign-in with `--demo`);
/// everything else under `/v1` for callers with a valid token. `HEAD` works wherever `GET` does; every response carries
/// the security headers, and the CORS headers for the configured origins.
public func buildRouter(_ environment: ServerEnvironment, logger: Logger) -> Router<HeraldRequestContext> {
    let router = Router(context: HeraldRequestContext.self, options: .autoGenerateHeadEndpoints)
    if !environment.configuration.corsOrigins.isEmpty {
        router.add(middleware: AllowedOriginsMiddleware(environment.configuration.corsOrigins))
    }
    router.add(middleware: SecurityHeadersMiddleware())
    router.add(middleware: ErrorMiddleware())
    router.add(middleware: CompressedFilesMiddleware())
    for files in WebPage.files(logger: logger) {
        router.add(middleware: files)
    }
    SystemController(store: environment.store).addRoutes(to: router)
    if environment.configuration.demo {
        DemoController(tokens: environment.tokens).addRoutes(to: router)
    }
    environment.streams.addRoutes(to: router)
    // A device key instead of a user's token (not under `v1`'s token check).
    PushMessagesController(store: environment.store, clock: environment.configuration.clock).addRoutes(to: router)
    let v1 = router.group("v1").add(middleware: environment.authentication)
    let notifications = NotificationsController(
        store: environment.store, messenger: environment.messenger, hub: environment.hub,
        userLimits: environment.userLimits, clock: environment.configuration.clock)
    notifications.addRoutes(to: v1)
    ConversationsController(
        store: environment.store, messenger: environment.messenger, hub: environment.hub,
        userLimits: environment.userLimits, limits: environment.configuration.limits, notifications: notifications
    ).addRoutes(to: v1)
    DevicesController(
        store: environment.store, limits: environment.configuration.limits, userLimits: environment.userLimits,
        push: environment.push,
        webPushPolicy: AddressPolicy(allowPrivate: environment.configuration.push.webPushAllowPrivate),
        requireEncryption: environment.configuration.push.requireEncryption
    ).addRoutes(to: v1)
    let deliveries = DeliveriesController(
        reports: DeliveryReports(store: environment.store, clock: environment.configuration.clock), push: environment.push)
    deliveries.addRoutes(to: v1)
    WebPushController(vapid: environment.vapid).addRoutes(to: v1)
    UsersController(store: environment.store, scope: environment.configuration.userDirectory).addRoutes(to: v1)
    // The app's backend's routes: a service key instead of a user's token (their group is not under `v1`'s token
    // check).
    let service = router.group("v1/service").add(
        middleware: ServiceAuthenticationMiddleware(keys: environment.configuration.serviceKeys, logger: logger))
    ServiceController(
        store: environment.store, messenger: environment.messenger, users: environment.users,
        limits: environment.configuration.limits
    ).addRoutes(to: service)
    deliveries.addServiceRoutes(to: service)
    return router
}
