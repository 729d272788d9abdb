import Foundation
import HeraldProtocol
import HeraldRecords

/// The limits that keep one client from hurting the others. Every one is a setting of `herald serve`
/// (`HERALD_LIMIT_*`); the defaults are out of reach of a person and within reach of a script.
public struct ServerLimits: Hashable, Sendable {
    /// The longest message text, in characters.
    public var maxTextLength = 4_000
    /// The longest message text, in bytes of UTF-8 (beside the characters: one character may be many code points).
    public var maxTextBytes = 32 * 1024
    /// The largest request body or stream frame Herald handles, in bytes; larger ones get `too_large`.
    public var maxFrameBytes = 64 * 1024
    /// The largest frame the WebSocket layer reads before closing the connection (code 1009).
    public var maxAcceptedFrameBytes = 1024 * 1024
    /// How many frames may wait for one connection before it is dropped as too slow.
    public var streamBufferFrames = 4_096
    /// How many bytes of frames may wait for one connection before it is dropped as too slow.
    public var streamBufferBytes = 2 * 1024 * 1024
    /// How many messages one catch-up query reads.
    public var catchUpPageSize = 500
    /// How many sequence numbers one catch-up query looks through, so a long catch-up is many short queries.
    public var catchUpWindow: Int64 = 2_000
    /// Messages a user may post a second, sustained (`HERALD_LIMIT_POSTS_PER_SECOND`).
    public var postsPerSecond: Double = 5
    /// Messages a user may post at once before the sustained rate applies (`HERALD_LIMIT_POST_BURST`).
    public var postBurst = 30
    /// Conversations a user may create an hour (`HERALD_LIMIT_CONVERSATIONS_PER_HOUR`).
    public var conversationsPerHour = 100
    /// Changes to groups a user may make an hour, in bursts of as many (`HERALD_LIMIT_CHANGES_PER_HOUR`): each add
    /// (of any number of people), removal, leave, rename, owner change or deletion is one; so is each change of a
    /// notification level (a mute too) or of the notification settings.
    public var changesPerHour = 600
    /// Members a group may have, its creator included (`HERALD_LIMIT_GROUP_MEMBERS`).
    public var maxGroupMembers = 1_000
    /// How long after it was sent a message may be edited (`HERALD_EDIT_WINDOW`, seconds; 0: never).
    public var editWindow: Duration = AmendmentRules.defaultEditWindow
    /// How many times a message may be edited (`HERALD_EDIT_LIMIT`; 0: never).
    public var editLimit = AmendmentRules.defaultEditLimit
    /// Stream connections a user may have open at once (`HERALD_LIMIT_STREAMS`).
    public var streamsPerUser = 20
    /// Streams a user may open a minute, sustained, in bursts of as many (`HERALD_LIMIT_STREAM_OPENS_PER_MINUTE`):
    /// a stream closed for flooding cannot simply come back at once.
    public var streamOpensPerMinute = 60
    /// Frames a stream may send a second, sustained, of every type (`HERALD_LIMIT_STREAM_FRAMES_PER_SECOND`).
    public var streamFramesPerSecond: Double = 20
    /// Frames a stream may send at once before the sustained rate applies (`HERALD_LIMIT_STREAM_FRAME_BURST`); as
    /// many refused in a row close it.
    public var streamFrameBurst = 100
    /// Push devices a user may have registered (`HERALD_LIMIT_DEVICES`).
    public var devicesPerUser = 100
    /// The most conversations one page of `GET /v1/conversations` holds.
    public var maxConversationPage = 100
    /// The most connections open at once (`HERALD_MAX_CONNECTIONS`); nil: the process's descriptor limit, raised
    /// to its hard limit, less ``FileDescriptorLimit/reserve``. Beyond it a connection gets 503 `server_busy`.
    public var maxConnections: Int?

    /// The defaults.
    public init() {}
}

/// How long the server waits for slow or silent clients.
public struct ServerTimeouts: Hashable, Sendable {
    /// How long a new connection, or a request whose first bytes have arrived, may take to send its whole head
    /// (`HERALD_HEADER_TIMEOUT`).
    public var header: Duration = .seconds(10)
    /// How long a kept-alive connection may wait for its next request, or a request body stall
    /// (`HERALD_IDLE_TIMEOUT`).
    public var idle: Duration = .seconds(60)
    /// How long a graceful stop may take before the remaining connections are cut (`HERALD_SHUTDOWN_TIMEOUT`).
    public var shutdown: Duration = .seconds(10)
    /// How long a stream whose queue overflowed may take to drain it and read the 1008 close before the connection
    /// is cut: a client that stopped reading altogether would otherwise hold a blocked write.
    public var overflowDrain: Duration = .seconds(1)
    /// How often a stream is pinged; a stream that sends nothing at all (not even the pong) for that long after a
    /// ping is closed (`HERALD_PING_INTERVAL`).
    public var ping: Duration = .seconds(30)

    /// The defaults.
    public init() {}
}

/// Everything `herald serve` can be told: flags, else `HERALD_*` environment variables, else defaults.
public struct ServerConfiguration: Hashable, Sendable {
    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port to listen on; 0 picks a free one.
    public var port = 8080
    /// The SQLite file, or `:memory:`.
    public var databasePath = "herald.sqlite"
    /// A PostgreSQL database (`postgres://user:password@host:5432/database`) to use instead of SQLite: the store for
    /// several nodes.
    public var postgresURL: String?
    /// With PostgreSQL, how long after its last heartbeat a node's connections still count for the push decision
    /// (`HERALD_PRESENCE_EXPIRY`, default 30 s): a node that died stops counting within this.
    public var presenceExpiry: Duration = .seconds(30)
    /// The HS256 secret tokens are signed with; nil means the one kept beside the database (made on first start; with
    /// PostgreSQL, in the database, shared by every node).
    public var jwtSecret: String?
    /// Whether SQLite syncs every commit to disk (survives power loss, slower) rather than only to the OS.
    public var fullSync = false
    /// Under load, how long after a commit began SQLite's next waits, to take every post that comes meanwhile in one
    /// commit (`HERALD_SQLITE_COMMIT_WINDOW`, in milliseconds, 0 to 100; default 5; 0: no wait). Posts sent on a
    /// stream only; a post after a quiet spell, or by the sender the last commit was for, is committed at once.
    public var commitWindow: Duration = .milliseconds(5)
    /// Whether to create the demo users, conversations and messages.
    public var demo = false
    /// The limits.
    public var limits = ServerLimits()
    /// The timeouts.
    public var timeouts = ServerTimeouts()
    /// The web origins (`https://app.example.com`) whose pages may call the API from a browser (CORS); `*` allows
    /// any. None by default: only the page Herald serves itself.
    public var corsOrigins: [String] = []
    /// Whom a user may find with `GET /v1/users` (`HERALD_USER_DIRECTORY`): the people they share a conversation with
    /// (`contacts`, the default), or every user who signed in (`everyone`).
    public var userDirectory: DirectoryScope = .contacts
    /// Push delivery: timing, bounds and each provider's credentials.
    public var push = PushSettings()
    /// Webhooks to the app's backend.
    public var webhooks = WebhookSettings()
    /// Identity providers whose ID tokens are taken beside the server's own (`HERALD_OIDC_*`).
    public var openID = OpenIDSettings()
    /// How long messages and events are kept (`HERALD_RETENTION`: seconds, or a number with `s`, `m`, `h` or `d`);
    /// nil (the default): for ever. For apps whose own store is the record, Herald only relaying.
    public var retention: Duration?
    /// How many hours the delivery trail keeps what became of each message's pushes (`HERALD_TRAIL_HOURS`, 0 to
    /// 720; default 24; 0: no trail is kept). docs/push.md, "Why a phone did not ring".
    public var trailHours = 24
    /// The app's backend's keys (`HERALD_SERVICE_KEY`, several separated by commas); none by default, and then the
    /// service routes refuse every call.
    public var serviceKeys = ServiceKeys.none
    /// The wall clock entries are stamped with and `until`s are checked against (tests move it).
    public var clock = WallClock()
    /// How long one use of PostgreSQL may take before the request is answered `database_unavailable` (503). Tests
    /// on a loaded machine lengthen it; the bound itself is tested on `herald serve` processes.
    public var databaseQueryLimit: Duration = .seconds(5)

    /// The defaults: 127.0.0.1:8080, `./herald.sqlite`.
    public init() {}

    /// The defaults overridden by the environment: `HERALD_HOST`, `HERALD_PORT`, `HERALD_DATABASE`, `HERALD_POSTGRES_URL`,
    /// `HERALD_JWT_SECRET`, `HERALD_SQLITE_SYNC` (`full` or `normal`), `HERALD_SQLITE_COMMIT_WINDOW` (milliseconds),
    /// `HERALD_DEMO` (`1` or `0`), `HERALD_CORS_ORIGINS` (origins separated by commas, or `*`), `HERALD_SERVICE_KEY`, the limits
    /// (`HERALD_LIMIT_*`) and the timeouts (`HERALD_*_TIMEOUT`, in seconds). An empty variable counts as unset.
    ///
    /// - Throws: ``ConfigurationError`` naming the variable when a value cannot be used: a setting is never
    ///   silently ignored.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Self {
        let settings = EnvironmentSettings(environment)
        var configuration = ServerConfiguration()
        configuration.host = settings.string("HERALD_HOST") ?? configuration.host
        configuration.port = try settings.integer("HERALD_PORT", in: 0...65_535) ?? configuration.port
        configuration.databasePath = settings.string("HERALD_DATABASE") ?? configuration.databasePath
        configuration.postgresURL = settings.string("HERALD_POSTGRES_URL")
        configuration.presenceExpiry = try settings.number("HERALD_PRESENCE_EXPIRY", in: 1...3_600)
            .map { .milliseconds(Int64(($0 * 1000).rounded())) } ?? configuration.presenceExpiry
        configuration.jwtSecret = settings.string("HERALD_JWT_SECRET")
        configuration.fullSync = try settings.choice("HERALD_SQLITE_SYNC", ["normal": false, "full": true]) ?? false
        configuration.commitWindow = try settings.integer("HERALD_SQLITE_COMMIT_WINDOW", in: 0...100)
            .map { .milliseconds($0) } ?? configuration.commitWindow
        configuration.demo = try settings.choice("HERALD_DEMO", ["0": false, "1": true]) ?? false
        configuration.corsOrigins = try settings.origins("HERALD_CORS_ORIGINS") ?? []
        configuration.userDirectory = try settings.choice(
            "HERALD_USER_DIRECTORY", ["contacts": DirectoryScope.contacts, "everyone": .everyone]) ?? .contacts

        var limits = ServerLimits()
        limits.postsPerSecond = try settings.number("HERALD_LIMIT_POSTS_PER_SECOND", in: 0.001...1_000_000) ?? limits.postsPerSecond
        limits.postBurst = try settings.integer("HERALD_LIMIT_POST_BURST", in: 1...1_000_000) ?? limits.postBurst
        limits.conversationsPerHour = try settings.integer("HERALD_LIMIT_CONVERSATIONS_PER_HOUR", in: 1...1_000_000)
            ?? limits.conversationsPerHour
        limits.changesPerHour = try settings.integer("HERALD_LIMIT_CHANGES_PER_HOUR", in: 1...1_000_000)
            ?? limits.changesPerHour
        limits.maxGroupMembers = try settings.integer("HERALD_LIMIT_GROUP_MEMBERS", in: 2...100_000)
            ?? limits.maxGroupMembers
        limits.editWindow = try settings.integer("HERALD_EDIT_WINDOW", in: 0...31_536_000).map { .seconds($0) }
            ?? limits.editWindow
        limits.editLimit = try settings.integer("HERALD_EDIT_LIMIT", in: 0...1_000) ?? limits.editLimit
        limits.streamsPerUser = try settings.integer("HERALD_LIMIT_STREAMS", in: 1...100_000) ?? limits.streamsPerUser
        limits.streamOpensPerMinute = try settings.integer("HERALD_LIMIT_STREAM_OPENS_PER_MINUTE", in: 1...1_000_000)
            ?? limits.streamOpensPerMinute
        limits.streamFramesPerSecond = try settings.number("HERALD_LIMIT_STREAM_FRAMES_PER_SECOND", in: 0.001...1_000_000)
            ?? limits.streamFramesPerSecond
        limits.streamFrameBurst = try settings.integer("HERALD_LIMIT_STREAM_FRAME_BURST", in: 1...1_000_000)
            ?? limits.streamFrameBurst
        limits.devicesPerUser = try settings.integer("HERALD_LIMIT_DEVICES", in: 1...100_000) ?? limits.devicesPerUser
        limits.maxConnections = try settings.integer("HERALD_MAX_CONNECTIONS", in: 1...10_000_000)
        configuration.limits = limits

        var timeouts = ServerTimeouts()
        timeouts.header = try settings.seconds("HERALD_HEADER_TIMEOUT") ?? timeouts.header
        timeouts.idle = try settings.seconds("HERALD_IDLE_TIMEOUT") ?? timeouts.idle
        timeouts.shutdown = try settings.seconds("HERALD_SHUTDOWN_TIMEOUT") ?? timeouts.shutdown
        timeouts.ping = try settings.seconds("HERALD_PING_INTERVAL") ?? timeouts.ping
        configuration.timeouts = timeouts
        configuration.push = try settings.push()
        configuration.webhooks = try settings.webhooks()
        configuration.openID = try settings.openID()
        configuration.retention = try settings.span("HERALD_RETENTION")
        configuration.trailHours = try settings.integer("HERALD_TRAIL_HOURS", in: 0...720) ?? configuration.trailHours
        configuration.serviceKeys = try ServiceKeys(
            (settings.string("HERALD_SERVICE_KEY") ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        return configuration
    }

    /// The server's token secret: ``jwtSecret`` if set, else the one the nodes share (``SharedSetting/tokenSecret``:
    /// made on first start; a single node keeps it beside its database in `<database>.secret`, readable by the owner
    /// only, nodes on PostgreSQL in the database; a fresh one for `:memory:`).
    ///
    /// The file holds the key and nothing else: 64 hexadecimal characters, no newline (a JWT library reading the
    /// file as it is gets exactly the key). White space around it, as an editor may add, is not part of the key.
    ///
    /// - Throws: ``ConfigurationError`` if the secret is shorter than 32 bytes (HS256 needs a key at least as long
    ///   as its hash) or cannot be kept.
    public func resolveSecret(sharedBy cluster: any Cluster) async throws -> String {
        if jwtSecret != nil, let secret = try existingSecret() { return secret }
        let secret = try await cluster.sharedSetting(.tokenSecret, make: Self.randomSecret)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard secret.utf8.count >= 32 else {
            throw ConfigurationError("the token secret the server keeps must be at least 32 bytes; delete it to make a new one")
        }
        return secret
    }

    /// The server's token secret as a tool finds it, never making one: ``jwtSecret`` if set, else the file beside
    /// the database; nil when neither is there.
    ///
    /// - Throws: ``ConfigurationError`` for a secret shorter than 32 bytes.
    public func existingSecret() throws -> String? {
        if let jwtSecret {
            guard jwtSecret.utf8.count >= 32 else {
                throw ConfigurationError("HERALD_JWT_SECRET must be at least 32 bytes (it is \(jwtSecret.utf8.count))")
            }
            return jwtSecret
        }
        guard databasePath != ":memory:" else { return nil }
        let path = databasePath + ".secret"
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard secret.utf8.count >= 32 else {
            throw ConfigurationError("the secret in \(path) must be at least 32 bytes; delete it to make a new one")
        }
        return secret
    }

    /// The secret a tool (`herald token`, `herald chat --as`) signs with: the server's, which it never makes.
    ///
    /// - Throws: ``ConfigurationError`` saying where it looked and how to point it at the server's secret.
    public func secretForTools() throws -> String {
        if let secret = try existingSecret() { return secret }
        if postgresURL != nil {
            throw ConfigurationError(
                "a server on PostgreSQL keeps its token secret in the database: set HERALD_JWT_SECRET to it here (and on the server)")
        }
        if databasePath == ":memory:" {
            throw ConfigurationError("an in-memory server's secret is its own; set HERALD_JWT_SECRET for both")
        }
        let path = URL(fileURLWithPath: databasePath + ".secret").standardizedFileURL.path
        throw ConfigurationError(
            "no token secret here: HERALD_JWT_SECRET is not set and there is no \(path) (the server makes it on its first start, beside its database). Run this where the server's database is, give --database the server's file, or set HERALD_JWT_SECRET to the server's secret. Nothing was created.")
    }

    static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// A setting that cannot be used.
public struct ConfigurationError: Error, CustomStringConvertible {
    /// What is wrong.
    public var description: String

    /// An error that says `description`.
    public init(_ description: String) {
        self.description = description
    }

    /// The server cannot listen where `settings` say, for `reason` ("address already in use").
    public init(listening settings: ServerConfiguration, reason: String) {
        self.init("cannot listen on \(settings.host):\(settings.port): \(reason)")
    }
}

/// Reads `HERALD_*` variables strictly: a value that is set must be one the setting takes.
private struct EnvironmentSettings {
    let environment: [String: String]

    init(_ environment: [String: String]) {
        self.environment = environment
    }

    func string(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }

    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(text)\"")
        }
        return value
    }

    func number(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let text = string(name) else { return nil }
        guard let value = Double(text), range.contains(value) else {
            throw ConfigurationError("\(name) must be a number from \(range.lowerBound) to \(Int(range.upperBound)), not \"\(text)\"")
        }
        return value
    }

    /// The push settings: `HERALD_PUSH_*`, and each provider's, which must be complete when any of them is set.
    func push() throws -> PushSettings {
        var push = PushSettings()
        push.delay = try number("HERALD_PUSH_DELAY", in: 0...86_400).map { .milliseconds(Int64(($0 * 1000).rounded())) } ?? push.delay
        push.maxAge = try seconds("HERALD_PUSH_MAX_AGE") ?? push.maxAge
        push.burstWindow = try number("HERALD_PUSH_BURST_WINDOW", in: 0...3_600)
            .map { .milliseconds(Int64(($0 * 1000).rounded())) } ?? push.burstWindow
        push.confirmWithin = try number("HERALD_CONFIRM_WITHIN", in: PushSettings.confirmWithinRange)
            .map { .milliseconds(Int64(($0 * 1000).rounded())) } ?? push.confirmWithin
        push.lease = try number("HERALD_PUSH_LEASE", in: 1...86_400).map { .milliseconds(Int64(($0 * 1000).rounded())) } ?? push.lease
        push.decisionInterval = try number("HERALD_PUSH_DECISION_INTERVAL", in: 0...60)
            .map { .milliseconds(Int64(($0 * 1000).rounded())) } ?? push.decisionInterval
        push.concurrency = try integer("HERALD_PUSH_CONCURRENCY", in: 1...1_000) ?? push.concurrency
        push.receiptDelay = try seconds("HERALD_EXPO_RECEIPT_DELAY") ?? push.receiptDelay
        push.caFile = try file("HERALD_PUSH_CA_FILE")
        let apns = ["HERALD_APNS_KEY_FILE", "HERALD_APNS_KEY_ID", "HERALD_APNS_TEAM_ID", "HERALD_APNS_TOPIC"]
        let given = apns.filter { string($0) != nil }
        if !given.isEmpty {
            let missing = apns.filter { string($0) == nil }
            guard missing.isEmpty else {
                throw ConfigurationError("APNs needs \(apns.joined(separator: ", ")); \(missing.joined(separator: ", ")) not set")
            }
            push.apns = APNsProvider.Settings(
                keyFile: try file("HERALD_APNS_KEY_FILE")!, keyID: string("HERALD_APNS_KEY_ID")!,
                teamID: string("HERALD_APNS_TEAM_ID")!, topic: string("HERALD_APNS_TOPIC")!,
                url: try url("HERALD_APNS_URL") ?? APNsProvider.Settings.production)
        } else if string("HERALD_APNS_URL") != nil {
            throw ConfigurationError("HERALD_APNS_URL is set but APNs is not: set \(apns.joined(separator: ", "))")
        }
        push.fcmServiceAccount = try file("HERALD_FCM_SERVICE_ACCOUNT")
        push.fcmURL = try url("HERALD_FCM_URL") ?? push.fcmURL
        push.expoURL = try url("HERALD_EXPO_URL")
        push.expoAccessToken = string("HERALD_EXPO_ACCESS_TOKEN")
        push.vapidKeyFile = try file("HERALD_VAPID_PRIVATE_KEY_FILE")
        push.webPushAllowPrivate = try choice("HERALD_WEBPUSH_ALLOW_PRIVATE", ["0": false, "1": true]) ?? false
        push.timeSensitiveMentions = try choice("HERALD_PUSH_TIME_SENSITIVE_MENTIONS", ["0": false, "1": true]) ?? false
        push.localizationKeys = try choice("HERALD_PUSH_LOC_KEYS", ["0": false, "1": true]) ?? false
        push.content = try choice(
            "HERALD_PUSH_CONTENT", ["full": .full, "sender": .sender, "none": .none, "encrypted": .encrypted]) ?? .full
        push.requireEncryption = try choice("HERALD_PUSH_REQUIRE_ENCRYPTION", ["0": false, "1": true]) ?? false
        if push.requireEncryption, push.content != .encrypted {
            throw ConfigurationError("HERALD_PUSH_REQUIRE_ENCRYPTION=1 needs HERALD_PUSH_CONTENT=encrypted")
        }
        if let subject = string("HERALD_VAPID_SUBJECT") {
            guard let url = URL(string: subject), ["mailto", "https"].contains(url.scheme ?? ""), subject.count > 7 else {
                throw ConfigurationError("HERALD_VAPID_SUBJECT must be a mailto: or https: URL, not \"\(subject)\"")
            }
            push.vapidSubject = subject
        }
        return push
    }

    /// The identity providers: issuers (https on a public host; on this machine or a private network, over http
    /// too, with `HERALD_OIDC_ALLOW_PRIVATE=1`) and the audiences their tokens must name.
    func openID() throws -> OpenIDSettings {
        var openID = OpenIDSettings()
        let list = { (name: String) in
            (self.string(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        // `prefix=https://issuer`: that issuer's users are `prefix:sub` (OpenIDSettings.userPrefixes).
        for entry in list("HERALD_OIDC_ISSUER") {
            let parts = entry.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let prefixed = parts.count == 2 && !parts[0].contains(":")
            let issuer = prefixed ? parts[1] : entry
            if prefixed {
                guard OpenIDSettings.isUsablePrefix(parts[0]) else {
                    throw ConfigurationError(
                        "HERALD_OIDC_ISSUER: \"\(parts[0])\" is not a user id prefix (1 to 16 of a-z, 0-9, _ and -)")
                }
                guard !openID.userPrefixes.values.contains(parts[0]) else {
                    throw ConfigurationError("HERALD_OIDC_ISSUER: the prefix \"\(parts[0])\" is given to two issuers")
                }
                openID.userPrefixes[issuer] = parts[0]
            }
            openID.issuers.append(issuer)
        }
        openID.audiences = list("HERALD_OIDC_AUDIENCE")
        if openID.issuers.count - openID.userPrefixes.count > 1 {
            throw ConfigurationError("""
                HERALD_OIDC_ISSUER names \(openID.issuers.count) issuers: each but one needs a user id prefix \
                (`apple=https://appleid.apple.com`), or one issuer's user could sign in as another's with the same sub
                """)
        }
        openID.jwksURL = string("HERALD_OIDC_JWKS_URL")
        openID.allowPrivate = try choice("HERALD_OIDC_ALLOW_PRIVATE", ["0": false, "1": true]) ?? false
        for issuer in openID.issuers {
            if let problem = openID.problem(withURL: issuer) {
                throw ConfigurationError("HERALD_OIDC_ISSUER \"\(issuer)\": \(problem)")
            }
        }
        if let url = openID.jwksURL {
            if let problem = openID.problem(withURL: url) {
                throw ConfigurationError("HERALD_OIDC_JWKS_URL \"\(url)\": \(problem)")
            }
            guard openID.issuers.count == 1 else {
                throw ConfigurationError("HERALD_OIDC_JWKS_URL names the keys of one issuer: set exactly one HERALD_OIDC_ISSUER")
            }
        }
        guard openID.issuers.isEmpty == openID.audiences.isEmpty else {
            throw ConfigurationError(
                "HERALD_OIDC_ISSUER and HERALD_OIDC_AUDIENCE go together: the issuers whose ID tokens are taken, and the audiences (your app's client id, or the Firebase project id) they must name")
        }
        return openID
    }

    /// The webhook settings: all of them checked, and a secret required with a URL.
    func webhooks() throws -> WebhookSettings {
        var webhooks = WebhookSettings()
        webhooks.allowPrivate = try choice("HERALD_WEBHOOK_ALLOW_PRIVATE", ["0": false, "1": true]) ?? false
        webhooks.reminder = try seconds("HERALD_UNREAD_REMINDER")
        webhooks.maxAge = try seconds("HERALD_WEBHOOK_MAX_AGE") ?? webhooks.maxAge
        if let text = string("HERALD_WEBHOOK_EVENTS") {
            var events = Set<WebhookEventType>()
            for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
                guard let type = WebhookEventType(rawValue: name) else {
                    let known = WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ConfigurationError("HERALD_WEBHOOK_EVENTS: \"\(name)\" is no event type (they are \(known))")
                }
                events.insert(type)
            }
            webhooks.events = events
        }
        guard let url = try self.url("HERALD_WEBHOOK_URL") else {
            if string("HERALD_WEBHOOK_SECRET") != nil {
                throw ConfigurationError("HERALD_WEBHOOK_SECRET is set but HERALD_WEBHOOK_URL is not")
            }
            return webhooks
        }
        if !webhooks.allowPrivate, let host = URL(string: url)?.host,
           let problem = AddressPolicy(allowPrivate: false).problem(withHost: host) {
            throw ConfigurationError(
                "HERALD_WEBHOOK_URL: the host \(problem); set HERALD_WEBHOOK_ALLOW_PRIVATE=1 if the backend is meant to be there")
        }
        guard let secret = string("HERALD_WEBHOOK_SECRET"), secret.utf8.count >= 32 else {
            throw ConfigurationError("HERALD_WEBHOOK_URL needs HERALD_WEBHOOK_SECRET, at least 32 bytes, to sign deliveries with")
        }
        webhooks.url = url
        webhooks.secret = secret
        return webhooks
    }

    /// A path to a file that exists.
    func file(_ name: String) throws -> String? {
        guard let path = string(name) else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ConfigurationError("\(name): cannot read \(path)")
        }
        return path
    }

    /// An http or https URL with a host, and no query or fragment.
    func url(_ name: String) throws -> String? {
        guard let text = string(name) else { return nil }
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false,
              url.query == nil, url.fragment == nil
        else { throw ConfigurationError("\(name) must be an http or https URL with a host and no query or fragment, not \"\(text)\"") }
        return text
    }

    /// A span of time: seconds, or a number followed by `s`, `m`, `h` or `d` (`30d`), at least a second.
    func span(_ name: String) throws -> Duration? {
        guard let text = string(name)?.trimmingCharacters(in: .whitespaces).lowercased() else { return nil }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var number = Substring(text)
        var unit = 1.0
        if let last = text.last, let factor = units[last] {
            number = number.dropLast()
            unit = factor
        }
        guard let value = Double(number), value.isFinite, value * unit >= 1, value * unit <= 100 * 365 * 86_400 else {
            throw ConfigurationError("\(name) must be a span of at least a second, like 3600, 90m, 12h or 30d, not \"\(text)\"")
        }
        return .milliseconds(Int64((value * unit * 1000).rounded()))
    }

    func seconds(_ name: String) throws -> Duration? {
        try number(name, in: 0.001...86_400).map { .milliseconds(Int64(($0 * 1000).rounded())) }
    }

    func choice<Value>(_ name: String, _ choices: KeyValuePairs<String, Value>) throws -> Value? {
        guard let text = string(name) else { return nil }
        guard let value = choices.first(where: { $0.key == text.lowercased() })?.value else {
            let allowed = choices.map { "\"\($0.key)\"" }.joined(separator: " or ")
            throw ConfigurationError("\(name) must be \(allowed), not \"\(text)\"")
        }
        return value
    }

    /// Web origins separated by commas (`https://app.example.com, http://localhost:3000`), or `*`. Each must be a
    /// scheme, a host and an optional port, exactly as a browser sends it in `Origin`: no path, no trailing slash.
    func origins(_ name: String) throws -> [String]? {
        guard let text = string(name) else { return nil }
        let origins = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if origins == ["*"] { return origins }
        for origin in origins {
            guard let url = URL(string: origin), let scheme = url.scheme, ["http", "https"].contains(scheme),
                  let host = url.host, !host.isEmpty, url.path.isEmpty, url.query == nil, url.fragment == nil,
                  url.user == nil, origin == origin.lowercased()
            else {
                throw ConfigurationError(
                    "\(name) must list origins like https://app.example.com (lower case, no path), or *, not \"\(origin)\"")
            }
        }
        return origins
    }
}
