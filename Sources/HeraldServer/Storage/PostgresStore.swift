import Foundation
import HeraldCore
import HeraldProtocol
import Logging
import NIOConcurrencyHelpers
import NIOSSL
import PostgresNIO
import ServiceLifecycle

/// The store for several nodes: PostgreSQL through postgres-nio's connection pool (`PostgresClient`), migrated at
/// start.
///
/// Sequence numbers come from one counter row (`message_seq`) that every post updates inside its transaction: a
/// second post, on any node, waits for the first to commit before it gets its number, so posts commit in `seq`
/// order and a reader never sees seq 6 before seq 5 (a PostgreSQL sequence would hand out numbers that can commit
/// out of order). Posts arriving together on one node share one transaction, as with SQLite (group commit), which is
/// what keeps the counter from being a queue of single commits under load.
public final class PostgresStore: Store, Service {
    /// The pool.
    let client: PostgresClient
    /// The pool with every wait bounded: what requests use.
    let database: BoundedPostgres
    /// The pool's own task: it runs from ``connect(url:leaseDuration:retryFor:logger:)`` until the store's service
    /// stops (after the HTTP server, so the pool closes last).
    private let pool: Task<Void, Never>
    let logger: Logger
    /// Posts waiting for the next group commit.
    private let waiting = NIOLockedValueBox(WaitingPosts())
    /// How long a node keeps a leased push job before another may take it over.
    let leaseDuration: TimeInterval
    /// Every stored message, this node's and the others', handed to this node's connections in seq order.
    let feed: MessageFeed
    /// This node's connections as the other nodes see them, and theirs.
    let presence: PostgresPresence

    /// The most posts committed in one transaction.
    static let maxGroup = 256

    private init(client: PostgresClient, leaseDuration: TimeInterval, presenceExpiry: Duration, logger: Logger) {
        self.client = client
        self.database = BoundedPostgres(client: client)
        self.pool = Task { await client.run() }
        self.leaseDuration = leaseDuration
        self.logger = logger
        self.feed = MessageFeed(client: client, logger: logger)
        self.presence = PostgresPresence(client: client, expiry: presenceExpiry, logger: logger)
    }

    /// Hands the messages other nodes store to `sink` (this node's hub), in seq order with this node's own.
    public func publishOtherNodes(to sink: @escaping @Sendable (FeedMessage) -> Void) async {
        await feed.setSink(sink)
    }

    /// Connects to the database `url` names (`postgres://user:password@host:port/database?sslmode=…`) and migrates
    /// it. A database that cannot be reached is tried again with back-off (1 s doubling to 30 s), each failure
    /// logged, for up to `retryFor`; then the last error is thrown. `leaseDuration`: how long a leased push job is
    /// this node's; `presenceExpiry`: how long after its last heartbeat a node's connections still count.
    public static func connect(
        url: String, leaseDuration: TimeInterval = 120, presenceExpiry: Duration = .seconds(30),
        retryFor: Duration = .seconds(600), logger: Logger
    ) async throws -> PostgresStore {
        let configuration = try configuration(url)
        // The pool's own notes (each connection it could not make) only from warnings up: the store says what matters.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .warning)
        let store = PostgresStore(
            client: PostgresClient(configuration: configuration, backgroundLogger: poolLogger),
            leaseDuration: leaseDuration, presenceExpiry: presenceExpiry, logger: logger)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: retryFor)
        var wait = Duration.seconds(1)
        while true {
            do {
                // The pool waits for a connection as long as it is asked to, so each try is bounded: a first
                // answer within 5 s (the database is there), then the set-up within 60 s (migrations on a busy
                // server can take longer than the first answer should).
                try await BoundedPostgres(client: store.client, limit: .seconds(5)).query("SELECT 1", logger: logger)
                try await BoundedPostgres(client: store.client, limit: .seconds(60)).run {
                    try await PostgresMigrations.migrate(store.client, logger: logger)
                    await store.feed.start(after: try await store.latestSeq())
                    try await store.presence.join()
                }
                return store
            } catch {
                let reason = describe(error)
                guard clock.now.advanced(by: wait) < deadline, !Task.isCancelled else {
                    await store.close()
                    throw StorageError("cannot use the PostgreSQL database at \(Self.redacted(url)): \(reason)")
                }
                logger.warning("the database cannot be reached; trying again", metadata: [
                    "database": "\(Self.redacted(url))", "error": "\(reason)", "retry_in": "\(wait)"])
                try? await Task.sleep(for: wait)
                wait = min(wait * 2, .seconds(30))
            }
        }
    }

    /// The URL without its password, for logs and errors.
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.percentEncodedPassword = "***"
        return components.string ?? url
    }

    /// What went wrong, in PostgreSQL's words where it said any.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            return "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
        }
        return String(describing: error)
    }

    /// Listens for the other nodes' messages until the graceful shutdown, then closes the pool: listed before the
    /// HTTP server's users of it, the store stops after them.
    public func run() async throws {
        let listening = Task { await listen() }
        let present = Task { await presence.run() }
        try? await gracefulShutdown()
        listening.cancel()
        present.cancel()
        await listening.value
        await present.value
        await close()
    }

    /// `LISTEN herald_messages` on a connection of its own, handing each notified seq to the feed; when the
    /// connection drops, listens again (back-off 1 s doubling to 30 s) and catches up from the table.
    private func listen() async {
        var wait = Duration.seconds(1)
        while !Task.isCancelled {
            do {
                // The pool itself, not its bounded face: this connection listens for as long as the node runs.
                try await client.withConnection { connection in
                    try await connection.listen(on: "herald_messages") { notifications in
                        // Listening: what committed before is read from the table (on another connection; this one
                        // only listens).
                        await self.feed.notified(try await self.latestSeq())
                        wait = .seconds(1)
                        for try await notification in notifications {
                            if let seq = Int64(notification.payload) { await self.feed.notified(seq) }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("listening for other nodes' messages failed; listening again", metadata: [
                    "error": "\(Self.describe(error))", "retry_in": "\(wait)"])
            }
            try? await Task.sleep(for: wait)
            wait = min(wait * 2, .seconds(30))
        }
    }

    /// Closes the pool.
    func close() async {
        pool.cancel()
        await pool.value
    }

    /// Reachable when `SELECT 1` answers within `timeout`. A full disk on the database server is not seen here
    /// (its writes answer `storage_full`); watching the database server's disk is its operator's part.
    public func health(within timeout: Duration) async -> StoreHealth {
        let reachable = await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await self.client.query("SELECT 1", logger: self.logger).collect()) != nil }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        return reachable ? .ok : .unreachable
    }

    /// A value every node shares, kept in the database: the one stored under `name`, or `make()`'s, stored there
    /// by whichever node asked first (the token secret and the VAPID key, so that every node signs alike).
    public func sharedSetting(_ name: String, make: () -> String) async throws -> String {
        let candidate = make()
        try await database.query(
            "INSERT INTO herald_settings (name, value) VALUES (\(name), \(candidate)) ON CONFLICT (name) DO NOTHING",
            logger: logger)
        let rows = try await database.query("SELECT value FROM herald_settings WHERE name = \(name)", logger: logger).collect()
        return try rows.first.map { try $0.decode(String.self) } ?? candidate
    }

    /// The pool's settings from a `postgres://` (or `postgresql://`) URL. `sslmode=disable` turns TLS off,
    /// `require` (or `verify-full`) requires it; otherwise it is used when the server offers it.
    static func configuration(_ url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
              let host = components.host, !host.isEmpty
        else {
            throw StorageError("the PostgreSQL URL must look like postgres://user:password@host:5432/database")
        }
        let mode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        default: throw StorageError("sslmode=\(mode) is not one of disable, prefer, require, verify-full")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.maximumConnections = 20
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// Runs `body` in a transaction; an error it throws comes out as itself (a ``StoreError`` stays one).
    func transaction<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await database.withTransaction(logger: logger, body)
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error.commitError ?? error.beginError ?? error
        }
    }

    // MARK: Users and conversations

    public func upsertUser(_ person: Person) async throws {
        try await database.query(
            """
            INSERT INTO users (id, name, picture, known) VALUES (\(person.id), \(person.displayName), \(person.avatarURL?.absoluteString), true)
            ON CONFLICT (id) DO UPDATE SET name = excluded.name, picture = excluded.picture, known = true
            """, logger: logger)
    }

    public func unknownUsers(among ids: [String]) async throws -> [String] {
        guard !ids.isEmpty else { return [] }
        let rows = try await database.query(
            "SELECT id FROM users WHERE known AND id = ANY(\(Array(Set(ids)))::text[])", logger: logger).collect()
        let known = try Set(rows.map { try $0.decode(String.self) })
        return HeraldID.sorted(Set(ids).subtracting(known))
    }

    public func findUsers(_ search: UserSearch) async throws -> [Person] {
        let pattern = "%" + UserSearch.escapedForLike(search.query.lowercased()) + "%"
        let idPattern = UserSearch.escapedForLike(search.query) + "%"
        let everyone = search.scope == .everyone
        let rows = try await database.query(
            """
            SELECT u.id, u.name, u.picture FROM users u
            WHERE u.known AND u.id <> \(search.userID) AND u.id > \(search.after ?? "")
              AND (\(everyone) OR u.id IN (SELECT b.user_id FROM members a JOIN members b ON b.conversation_id = a.conversation_id
                                           WHERE a.user_id = \(search.userID)))
              AND (lower(u.name) LIKE \(pattern) ESCAPE '\\' OR u.id LIKE \(idPattern) ESCAPE '\\')
            ORDER BY u.id LIMIT \(search.limit)
            """, logger: logger).collect()
        return try rows.compactMap { row in
            let (id, name, picture) = try row.decode((String, String, String?).self)
            guard !name.isEmpty else { return nil }
            return Person(id: id, displayName: name, avatarURL: picture.flatMap(URL.init(string:)))
        }
    }

    public func createConversation(
        kind: Conversation.Kind, title: String?, memberIDs: [String]
    ) async throws -> (record: ConversationRecord, created: Bool) {
        let members = HeraldID.sorted(Set(memberIDs))
        let directKey: String? = kind == .direct ? SQLiteStore.directKey(members) : nil
        let id = UUID().uuidString.lowercased()
        let now = Date().timeIntervalSince1970
        return try await transaction { connection in
            try await connection.query(
                "INSERT INTO users (id) SELECT unnest(\(members)::text[]) ON CONFLICT DO NOTHING", logger: self.logger)
            // A direct chat that two nodes create at once is created once: the second finds the first's.
            let inserted = try await connection.query(
                """
                INSERT INTO conversations (id, kind, title, direct_key, created_at)
                VALUES (\(id), \(kind.rawValue), \(title), \(directKey), \(now))
                ON CONFLICT (direct_key) DO NOTHING RETURNING id
                """, logger: self.logger).collect()
            if inserted.isEmpty, let directKey {
                let existing = try await connection.query(
                    "SELECT id FROM conversations WHERE direct_key = \(directKey)", logger: self.logger).collect()
                let existingID = try existing.first.map { try $0.decode(String.self) } ?? ""
                guard let record = try await Self.conversation(id: existingID, on: connection, logger: self.logger) else {
                    throw StoreError.damaged("a direct conversation vanished")
                }
                return (record, false)
            }
            // A new conversation stands in its members' lists where the newest message of the server stands.
            try await connection.query(
                """
                INSERT INTO members (conversation_id, user_id, activity)
                SELECT \(id), unnest(\(members)::text[]), (SELECT seq FROM message_seq WHERE id = 1)
                """, logger: self.logger)
            guard let record = try await Self.conversation(id: id, on: connection, logger: self.logger) else {
                throw StoreError.damaged("a new conversation vanished")
            }
            return (record, true)
        }
    }

    public func conversation(id: String) async throws -> ConversationRecord? {
        try await database.withConnection { connection in
            try await Self.conversation(id: id, on: connection, logger: self.logger)
        }
    }

    private static func conversation(id: String, on connection: PostgresConnection, logger: Logger) async throws -> ConversationRecord? {
        let rows = try await connection.query(
            "SELECT id, kind, title FROM conversations WHERE id = \(id)", logger: logger).collect()
        guard let row = rows.first else { return nil }
        let members = try await Self.members(of: [id], on: connection, logger: logger)[id] ?? ([], [])
        return ConversationRecord(conversation: try conversation(from: row), memberIDs: members.ids, people: members.people)
    }

    /// The members of each of `conversationIDs` (ids in byte order, and the people among them who have a name).
    private static func members(
        of conversationIDs: [String], on connection: PostgresConnection, logger: Logger
    ) async throws -> [String: (ids: [String], people: [Person])] {
        guard !conversationIDs.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT m.conversation_id, u.id, u.name, u.picture FROM members m JOIN users u ON u.id = m.user_id
            WHERE m.conversation_id = ANY(\(conversationIDs)::text[]) ORDER BY m.conversation_id, u.id
            """, logger: logger)
        var members: [String: (ids: [String], people: [Person])] = [:]
        for try await (conversationID, id, name, picture) in rows.decode((String, String, String, String?).self) {
            members[conversationID, default: ([], [])].ids.append(id)
            if !name.isEmpty {
                members[conversationID, default: ([], [])].people.append(
                    Person(id: id, displayName: name, avatarURL: picture.flatMap(URL.init(string:))))
            }
        }
        return members
    }

    public func conversations(
        of userID: String, after cursor: ConversationCursor?, limit: Int, mutedOnly: Bool
    ) async throws -> ConversationPage {
        try await database.withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT c.id, c.kind, c.title, me.muted, me.read_seq, me.activity,
                       (SELECT count(*) FROM (SELECT 1 FROM messages m
                          WHERE m.conversation_id = c.id AND m.seq > me.read_seq AND m.sender_id <> \(userID)
                          LIMIT \(ConversationSummary.unreadLimit)) AS u) AS unread,
                       last.seq, last.id AS message_id, last.sender_id, last.text, last.image_url, last.created_at
                FROM members me
                JOIN conversations c ON c.id = me.conversation_id
                LEFT JOIN messages last ON last.seq = me.activity AND last.conversation_id = me.conversation_id
                WHERE me.user_id = \(userID) AND (NOT \(mutedOnly) OR me.muted)
                  AND (me.activity, me.conversation_id) < (\(cursor?.activity ?? Int64.max), \(cursor?.conversationID ?? ""))
                ORDER BY me.activity DESC, me.conversation_id DESC
                LIMIT \(limit)
                """, logger: self.logger).collect()
            let conversations = try rows.map(Self.conversation(from:))
            let members = try await Self.members(of: conversations.map(\.id), on: connection, logger: self.logger)
            let summaries = try zip(rows, conversations).map { row, conversation in
                let columns = row.makeRandomAccess()
                let seq = try columns["seq"].decode(Int64?.self)
                let lastMessage: Message? = try seq.map { seq in
                    Message(
                        id: try columns["message_id"].decode(String.self), conversationID: conversation.id,
                        senderID: try columns["sender_id"].decode(String.self), text: try columns["text"].decode(String?.self),
                        imageURL: try columns["image_url"].decode(String?.self).flatMap(URL.init(string:)),
                        sentAt: SQLiteStore.date(try columns["created_at"].decode(Double.self)), seq: seq)
                }
                let (ids, people) = members[conversation.id] ?? ([], [])
                return ConversationSummary(
                    record: ConversationRecord(conversation: conversation, memberIDs: ids, people: people),
                    lastMessage: lastMessage,
                    unreadCount: Int(try columns["unread"].decode(Int64.self)),
                    readUpTo: try columns["read_seq"].decode(Int64.self),
                    muted: try columns["muted"].decode(Bool.self),
                    activity: try columns["activity"].decode(Int64.self)
                )
            }
            let next = summaries.count == limit ? summaries.last.map(ConversationCursor.init(after:)) : nil
            return ConversationPage(summaries: summaries, next: next)
        }
    }

    // MARK: Messages

    public func messages(in conversationID: String, after: Int64?, before: Int64?, limit: Int) async throws -> [Message] {
        let rows: [PostgresRow]
        if let after {
            rows = try await database.query(
                """
                SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages
                WHERE conversation_id = \(conversationID) AND seq > \(after) AND seq < \(before ?? Int64.max)
                ORDER BY seq LIMIT \(limit)
                """, logger: logger).collect()
        } else {
            rows = try await database.query(
                """
                SELECT * FROM (
                    SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages
                    WHERE conversation_id = \(conversationID) AND seq < \(before ?? Int64.max) ORDER BY seq DESC LIMIT \(limit)
                ) AS page ORDER BY seq
                """, logger: logger).collect()
        }
        return try rows.map(Self.message(from:))
    }

    public func messages(for userID: String, after: Int64, through: Int64, limit: Int) async throws -> [IncomingMessage] {
        let rows = try await database.query(
            """
            SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at,
                   c.kind, c.title, u.name AS sender_name, u.picture AS sender_picture
            FROM messages m
            JOIN members me ON me.conversation_id = m.conversation_id AND me.user_id = \(userID)
            JOIN conversations c ON c.id = m.conversation_id
            JOIN users u ON u.id = m.sender_id
            WHERE m.seq > \(after) AND m.seq <= \(through)
            ORDER BY m.seq
            LIMIT \(limit)
            """, logger: logger).collect()
        return try rows.map { row in
            let message = try Self.message(from: row)
            let columns = row.makeRandomAccess()
            return IncomingMessage(
                message: message,
                conversation: Conversation(
                    id: message.conversationID,
                    kind: Conversation.Kind(rawValue: try columns["kind"].decode(String.self)) ?? .group,
                    title: try columns["title"].decode(String?.self)),
                sender: Person(
                    id: message.senderID, displayName: try columns["sender_name"].decode(String.self),
                    avatarURL: try columns["sender_picture"].decode(String?.self).flatMap(URL.init(string:))))
        }
    }

    public func latestSeq() async throws -> Int64 {
        let rows = try await database.query("SELECT seq FROM message_seq WHERE id = 1", logger: logger).collect()
        return try rows.first.map { try $0.decode(Int64.self) } ?? 0
    }

    public func markRead(userID: String, conversationID: String, upTo seq: Int64) async throws {
        try await database.query(
            """
            UPDATE members SET read_seq = greatest(read_seq,
                least(\(seq), coalesce((SELECT max(seq) FROM messages WHERE conversation_id = \(conversationID)), 0)))
            WHERE conversation_id = \(conversationID) AND user_id = \(userID)
            """, logger: logger)
    }

    public func setMuted(_ muted: Bool, userID: String, conversationID: String) async throws {
        try await database.query(
            "UPDATE members SET muted = \(muted) WHERE conversation_id = \(conversationID) AND user_id = \(userID)",
            logger: logger)
    }

    // MARK: Posting: group commit

    public func post(_ draft: MessageDraft, onStored: @escaping @Sendable (IncomingMessage) -> Void) async throws -> PostOutcome {
        try await withCheckedThrowingContinuation { continuation in
            let post = WaitingPosts.Post(draft: draft, onStored: onStored, continuation: continuation)
            let start = waiting.withLockedValue { waiting in
                waiting.posts.append(post)
                defer { waiting.scheduled = true }
                return !waiting.scheduled
            }
            // One committer at a time takes what waits, group by group, until nothing does.
            if start { Task { await self.commitWaiting() } }
        }
    }

    private func commitWaiting() async {
        while true {
            let group = waiting.withLockedValue { waiting -> [WaitingPosts.Post] in
                let group = Array(waiting.posts.prefix(Self.maxGroup))
                waiting.posts.removeFirst(group.count)
                if group.isEmpty { waiting.scheduled = false }
                return group
            }
            guard !group.isEmpty else { return }
            do {
                await finish(group, with: try await store(group.map(\.draft)))
            } catch where StorageFailure.isUnavailable(error) {
                // The database is away: every post of the group fails alike, at once.
                await finish(group, with: group.map { _ in .failure(error) })
            } catch {
                // The group failed as a whole: each post alone, so one bad post never fails the others.
                for post in group {
                    do {
                        await finish([post], with: try await store([post.draft]))
                    } catch {
                        await finish([post], with: [.failure(error)])
                    }
                }
            }
        }
    }

    /// Hands what the group stored to the feed (which publishes it in seq order, after anything of other nodes'
    /// before it), then answers each post.
    private func finish(_ group: [WaitingPosts.Post], with outcomes: [Result<PostOutcome, any Error>]) async {
        var publishers: [Int64: @Sendable () -> Void] = [:]
        for (post, outcome) in zip(group, outcomes) {
            guard case .success(.stored(let message)) = outcome, let seq = message.seq else { continue }
            let incoming = IncomingMessage(message: message, conversation: post.draft.conversation, sender: post.draft.sender)
            let onStored = post.onStored
            publishers[seq] = { onStored(incoming) }
        }
        if let first = publishers.keys.min(), let last = publishers.keys.max() {
            await feed.committed(first...last, publishers: publishers)
        }
        WaitingPosts.finish(group, with: outcomes, counting: waiting, publishing: false)
    }

    /// Stores `drafts` in one transaction: the counter row locked (and with it every other node's posts held until
    /// this commits), the ids already used looked up, the new messages inserted with the next numbers, the counter
    /// moved past them. An outcome for each draft, in order; throws if the transaction as a whole failed.
    private func store(_ drafts: [MessageDraft]) async throws -> [Result<PostOutcome, any Error>] {
        let createdAt = Date().timeIntervalSince1970
        let messages: [MessageKey: (message: Message, new: Bool)]
        do {
            messages = try await storeGroup(drafts, createdAt: createdAt)
        } catch {
            // Rolled back: the seqs it took are given again, and the feed goes on past them.
            await feed.release()
            throw error
        }
        return WaitingPosts.outcomes(of: drafts, messages: messages)
    }

    private func storeGroup(
        _ drafts: [MessageDraft], createdAt: Double
    ) async throws -> [MessageKey: (message: Message, new: Bool)] {
        try await transaction { connection -> [MessageKey: (message: Message, new: Bool)] in
            let counter = try await connection.query(
                "SELECT seq FROM message_seq WHERE id = 1 FOR UPDATE", logger: self.logger).collect()
            var seq = try counter.first.map { try $0.decode(Int64.self) } ?? 0
            var messages: [MessageKey: (message: Message, new: Bool)] = [:]
            let used = try await connection.query(
                """
                SELECT m.seq, m.id, m.conversation_id, m.sender_id, m.text, m.image_url, m.created_at
                FROM messages m JOIN unnest(\(drafts.map(\.conversation.id))::text[], \(drafts.map(\.id))::text[]) AS d(c, i)
                    ON m.conversation_id = d.c AND m.id = d.i
                """, logger: self.logger).collect()
            for row in used {
                let message = try Self.message(from: row)
                messages[MessageKey(conversationID: message.conversationID, id: message.id)] = (message, false)
            }
            var rows: [MessageRow] = []
            for draft in drafts where messages[draft.key] == nil {
                seq += 1
                let message = Message(
                    id: draft.id, conversationID: draft.conversation.id, senderID: draft.sender.id, text: draft.text,
                    imageURL: draft.imageURL, sentAt: SQLiteStore.date(createdAt), seq: seq)
                messages[draft.key] = (message, true)
                rows.append(MessageRow(
                    seq: seq, id: draft.id, conversation_id: draft.conversation.id, sender_id: draft.sender.id,
                    text: draft.text, image_url: draft.imageURL?.absoluteString, created_at: createdAt))
            }
            guard let first = rows.first?.seq else { return messages }
            // Until this commits (or rolls back), the feed hands over nothing past these seqs.
            await self.feed.reserve(first...seq)
            let json = String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
            try await connection.query(
                """
                INSERT INTO messages (seq, id, conversation_id, sender_id, text, image_url, created_at)
                SELECT seq, id, conversation_id, sender_id, text, image_url, created_at
                FROM jsonb_to_recordset(\(json)::jsonb) AS m(seq bigint, id text, conversation_id text, sender_id text,
                    text text, image_url text, created_at double precision)
                ORDER BY seq
                """, logger: self.logger)
            try await connection.query("UPDATE message_seq SET seq = \(seq) WHERE id = 1", logger: self.logger)
            // Delivered at commit, to every node listening (the payload is the last seq, never the message).
            try await connection.query("SELECT pg_notify('herald_messages', \(String(seq)))", logger: self.logger)
            return messages
        }
    }

    // MARK: Devices

    public func registerDevice(_ device: DeviceRegistration, limit: Int) async throws {
        let now = Date().timeIntervalSince1970
        try await transaction { connection in
            // One registration of a user at a time, so two new devices at once cannot both pass the limit.
            try await connection.query(
                "SELECT 1 FROM users WHERE id = \(device.userID) FOR UPDATE", logger: self.logger)
            let existing = try await connection.query(
                "SELECT 1 FROM devices WHERE user_id = \(device.userID) AND id = \(device.id)", logger: self.logger).collect()
            if existing.isEmpty {
                let count = try await connection.query(
                    "SELECT count(*) FROM devices WHERE user_id = \(device.userID)", logger: self.logger).collect()
                if try count.first.map({ try $0.decode(Int64.self) }) ?? 0 >= limit {
                    throw StoreError.deviceLimit(limit)
                }
            }
            // The token moves to this device, from whichever user or device held it before.
            let previous = try await connection.query(
                """
                DELETE FROM devices WHERE platform = \(device.platform.rawValue) AND token = \(device.token)
                    AND NOT (user_id = \(device.userID) AND id = \(device.id))
                RETURNING user_id, id
                """, logger: self.logger)
            var moved: [(String, String)] = []
            for try await (userID, id) in previous.decode((String, String).self) { moved.append((userID, id)) }
            for (userID, id) in moved {
                try await Self.forgetPushes(userID: userID, deviceID: id, on: connection, logger: self.logger)
            }
            try await connection.query(
                """
                INSERT INTO devices (user_id, id, platform, token, updated_at)
                VALUES (\(device.userID), \(device.id), \(device.platform.rawValue), \(device.token), \(now))
                ON CONFLICT (user_id, id) DO UPDATE SET platform = excluded.platform, token = excluded.token,
                    updated_at = excluded.updated_at
                """, logger: self.logger)
        }
    }

    public func removeDevice(id: String, userID: String) async throws -> Bool {
        try await transaction { connection in
            let rows = try await connection.query(
                "DELETE FROM devices WHERE user_id = \(userID) AND id = \(id) RETURNING id", logger: self.logger).collect()
            try await Self.forgetPushes(userID: userID, deviceID: id, on: connection, logger: self.logger)
            return !rows.isEmpty
        }
    }

    /// A removed device's pushes go with it.
    private static func forgetPushes(userID: String, deviceID: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("DELETE FROM push_jobs WHERE user_id = \(userID) AND device_id = \(deviceID)", logger: logger)
        try await connection.query("DELETE FROM push_shown WHERE user_id = \(userID) AND device_id = \(deviceID)", logger: logger)
    }

    public func devices(of userID: String) async throws -> [DeviceRegistration] {
        let rows = try await database.query(
            "SELECT id, platform, token FROM devices WHERE user_id = \(userID) ORDER BY id", logger: logger)
        var devices: [DeviceRegistration] = []
        for try await (id, platform, token) in rows.decode((String, String, String).self) {
            guard let platform = DeviceRegistration.Platform(rawValue: platform) else { continue }
            devices.append(DeviceRegistration(id: id, userID: userID, platform: platform, token: token))
        }
        return devices
    }

    // MARK: Rows

    private static func conversation(from row: PostgresRow) throws -> Conversation {
        let columns = row.makeRandomAccess()
        guard let kind = Conversation.Kind(rawValue: try columns["kind"].decode(String.self)) else {
            throw StoreError.damaged("a conversation row")
        }
        return Conversation(id: try columns["id"].decode(String.self), kind: kind, title: try columns["title"].decode(String?.self))
    }

    /// The message in a row of `seq, id, conversation_id, sender_id, text, image_url, created_at`.
    static func message(from row: PostgresRow) throws -> Message {
        let columns = row.makeRandomAccess()
        return Message(
            id: try columns["id"].decode(String.self),
            conversationID: try columns["conversation_id"].decode(String.self),
            senderID: try columns["sender_id"].decode(String.self),
            text: try columns["text"].decode(String?.self),
            imageURL: try columns["image_url"].decode(String?.self).flatMap(URL.init(string:)),
            sentAt: SQLiteStore.date(try columns["created_at"].decode(Double.self)),
            seq: try columns["seq"].decode(Int64.self))
    }
}

/// A new message's row, as the insert reads it from JSON.
private struct MessageRow: Encodable {
    var seq: Int64
    var id: String
    var conversation_id: String
    var sender_id: String
    var text: String?
    var image_url: String?
    var created_at: Double
}
