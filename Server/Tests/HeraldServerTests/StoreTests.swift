import Foundation
import HeraldCore
@testable import HeraldPostgres
import HeraldProtocol
@testable import HeraldRecords
@testable import HeraldSQLite
import HeraldTestSupport
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
@testable import HeraldServer
import Testing

/// The stores the storage suite runs on: SQLite always; PostgreSQL on the server `HERALD_TEST_POSTGRES_URL` names
/// (scripts/test starts a throwaway one; `scripts/postgres start` prints a URL for running the suite by hand).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static var postgresURL: String? {
        ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The kinds this run can test.
    static var available: [StoreKind] {
        postgresURL == nil ? [.sqlite] : [.sqlite, .postgres]
    }

    var testDescription: String { self == .sqlite ? "SQLite" : "PostgreSQL" }

    /// A new, empty, migrated store of this kind, running for the length of `body`: SQLite in memory; PostgreSQL in
    /// a database of its own, dropped afterwards.
    func withStore(_ body: (any Store) async throws -> Void) async throws {
        var logger = Logger(label: "store-test")
        logger.logLevel = .critical
        switch self {
        case .sqlite:
            let store = try await SQLiteStore.open(path: ":memory:", logger: logger)
            try await withBackground({ try await store.database.run() }) { try await body(store) }
        case .postgres:
            try await StoreKind.withDatabase(logger: logger) { url in try await StoreKind.withPostgresStore(url, logger: logger, body) }
        }
    }

    /// A store on the PostgreSQL database `url`, closed after `body` however it ends.
    static func withPostgresStore(_ url: String, logger: Logger, _ body: (any Store) async throws -> Void) async throws {
        let store = try await PostgresStore.connect(url: url, retryFor: .seconds(30), queryLimit: .seconds(30), logger: logger)
        do {
            try await body(store)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    /// What a `herald serve` of this kind is started with: nothing for SQLite (its file is the server's
    /// `--database`); for PostgreSQL, `HERALD_POSTGRES_URL` naming a fresh database, dropped afterwards.
    func withServerDatabase(_ body: ([String: String?]) async throws -> Void) async throws {
        switch self {
        case .sqlite:
            try await body([:])
        case .postgres:
            var logger = Logger(label: "store-test")
            logger.logLevel = .critical
            try await StoreKind.withDatabase(logger: logger) { url in try await body(["HERALD_POSTGRES_URL": url]) }
        }
    }

    /// A fresh database on the test server, its URL given to `body`, dropped afterwards.
    static func withDatabase(logger: Logger, _ body: (String) async throws -> Void) async throws {
        try await PostgresStore.withScratchDatabase(on: try #require(postgresURL), prefix: "herald_test_", logger: logger, body)
    }
}

/// One storage suite for both stores: what the server relies on a `Store` for, run on SQLite and on PostgreSQL.
@Suite("Storage, on every store", .timeLimit(.minutes(2)))
struct StoreTests {
    static let kinds = StoreKind.available

    private func person(_ id: String) -> Person { Person(id: id, displayName: id.capitalized) }

    private func draft(_ id: String, by sender: String, in conversation: Conversation, text: String = "hello") -> MessageDraft {
        MessageDraft(id: id, conversation: conversation, sender: person(sender), text: text, imageURL: nil)
    }

    /// Users, a direct chat of alice and bob, a group of all three.
    private func setUp(_ store: any Store) async throws -> (direct: Conversation, group: Conversation) {
        for id in ["alice", "bob", "carol"] { try await store.upsertUser(person(id)) }
        let direct = try await store.createConversation(kind: .direct, title: nil, memberIDs: ["alice", "bob"]).record.conversation
        let group = try await store.createConversation(kind: .group, title: "Team", memberIDs: ["alice", "bob", "carol"]).record.conversation
        return (direct, group)
    }

    @discardableResult
    private func post(_ store: any Store, _ draft: MessageDraft) async throws -> Message {
        switch try await store.post(draft) {
        case .stored(let message), .existing(let message): message
        }
    }

    @Test("PostgreSQL is tested in CI", .enabled(if: ProcessInfo.processInfo.environment["CI"] != nil))
    func postgresInCI() {
        #expect(StoreKind.postgresURL != nil, "CI runs the storage suite on PostgreSQL too: scripts/test starts one")
    }

    @Test("a direct chat exists once; members in byte order; people are those with a name", arguments: kinds)
    func conversations(kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.upsertUser(Person(id: "Zoë", displayName: "Zoë"))
            try await store.upsertUser(Person(id: "zed", displayName: "Zed", avatarURL: URL(string: "https://example.com/z.png")))
            let first = try await store.createConversation(kind: .direct, title: nil, memberIDs: ["zed", "Zoë"])
            let again = try await store.createConversation(kind: .direct, title: nil, memberIDs: ["Zoë", "zed"])
            #expect(first.created && !again.created)
            #expect(again.record.conversation.id == first.record.conversation.id)
            #expect(first.record.memberIDs == ["Zoë", "zed"])
            #expect(first.record.people.map(\.avatarURL) == [nil, URL(string: "https://example.com/z.png")])
            // A member never seen is a member, not a person yet.
            let group = try await store.createConversation(kind: .group, title: "Ünïcode", memberIDs: ["zed", "new-one"])
            #expect(group.record.memberIDs == ["new-one", "zed"])
            #expect(group.record.people.map(\.id) == ["zed"])
            #expect(try await store.conversation(id: group.record.conversation.id)?.conversation.title == "Ünïcode")
            #expect(try await store.conversation(id: "no-such-conversation") == nil)
        }
    }

    @Test("posting: a seq each, in order; the sender's repeat is the same message; another member's use of the id is refused, another conversation's is another message", arguments: kinds)
    func posting(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let (direct, group) = try await setUp(store)
            #expect(try await store.latestSeq() == 0)
            let first = try await store.post(draft("m-1", by: "alice", in: direct))
            guard case .stored(let stored) = first else { Issue.record("not stored: \(first)"); return }
            #expect(stored.seq == 1 && stored.text == "hello")
            let repeated = try await store.post(draft("m-1", by: "alice", in: direct, text: "changed"))
            #expect(repeated == .existing(stored))
            await #expect(throws: StoreError.idTaken("m-1")) {
                _ = try await store.post(draft("m-1", by: "bob", in: direct))
            }
            // Ids are scoped to their conversation: the same id in another one is another message.
            let elsewhere = try await store.post(draft("m-1", by: "bob", in: group))
            guard case .stored(let other) = elsewhere else { Issue.record("not stored: \(elsewhere)"); return }
            #expect(other.seq == 2 && other.conversationID == group.id && other.senderID == "bob")
            #expect(try await store.post(draft("m-1", by: "bob", in: group)) == .existing(other))

            // Many at once: every one stored once, published in seq order, numbered with no gap.
            let published = NIOLockedValueBox<[Int64]>([])
            try await EventLog.attached(to: store, logger: Logger(label: "test")).add(Recorder { entries in
                published.withLockedValue { $0 += entries.compactMap(\.message.seq) }
            })
            try await withThrowingTaskGroup(of: PostOutcome.self) { posts in
                for index in 0..<60 {
                    posts.addTask {
                        try await store.post(
                            self.draft("burst-\(index)", by: index.isMultiple(of: 2) ? "alice" : "bob", in: group))
                    }
                }
                var seqs: [Int64] = []
                for try await outcome in posts {
                    guard case .stored(let message) = outcome else { Issue.record("a burst post was not new"); continue }
                    seqs.append(message.seq ?? -1)
                }
                #expect(seqs.sorted() == Array(3...62))
            }
            #expect(published.withLockedValue { $0 } == Array(3...62))
            #expect(try await store.latestSeq() == 62)
        }
    }

    @Test("reading messages: a conversation's pages, and a member's window across conversations", arguments: kinds)
    func reading(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let (direct, group) = try await setUp(store)
            for index in 1...6 {
                try await post(store, draft("d-\(index)", by: index.isMultiple(of: 2) ? "bob" : "alice", in: index <= 3 ? direct : group))
            }
            #expect(try await store.entries(in: direct.id, for: "alice", after: nil, before: nil, limit: 2).map(\.id) == ["d-2", "d-3"])
            #expect(try await store.entries(in: direct.id, for: "alice", after: nil, before: 3, limit: 10).map(\.id) == ["d-1", "d-2"])
            #expect(try await store.entries(in: group.id, for: "alice", after: 4, before: nil, limit: 10).map(\.id) == ["d-5", "d-6"])
            #expect(try await store.entries(in: group.id, for: "alice", after: 0, before: 6, limit: 1).map(\.id) == ["d-4"])
            let carols = try await store.entries(for: "carol", after: 0, through: 6, limit: 10)
            #expect(carols.map(\.message.id) == ["d-4", "d-5", "d-6"])
            #expect(carols.first?.conversation.title == "Team" && carols.first?.sender.displayName == "Bob")
            #expect(try await store.entries(for: "alice", after: 2, through: 5, limit: 10).map(\.message.seq) == [3, 4, 5])
            #expect(try await store.entries(for: "alice", after: 0, through: 6, limit: 2).count == 2)
        }
    }

    @Test("the list: newest activity first, a page at a time, unread counts, read markers, mutes", arguments: kinds)
    func list(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let (direct, group) = try await setUp(store)
            let third = try await store.createConversation(kind: .group, title: "Quiet", memberIDs: ["alice", "carol"]).record.conversation
            try await post(store, draft("a", by: "bob", in: direct))
            try await post(store, draft("b", by: "bob", in: group))
            try await post(store, draft("c", by: "carol", in: group))
            let all = try await store.conversations(of: "alice", after: nil, limit: 10, filter: .all)
            #expect(all.summaries.map(\.record.conversation.id) == [group.id, direct.id, third.id])
            #expect(all.summaries.map(\.unreadCount) == [2, 1, 0])
            #expect(all.summaries.first?.lastMessage?.id == "c")
            #expect(all.next == nil)

            let first = try await store.conversations(of: "alice", after: nil, limit: 2, filter: .all)
            let cursor = try #require(first.next)
            let rest = try await store.conversations(of: "alice", after: cursor, limit: 2, filter: .all)
            #expect(first.summaries.count == 2 && rest.summaries.map(\.record.conversation.id) == [third.id])

            // Read markers move forward only, and never past the conversation's last message.
            try await store.markRead(userID: "alice", conversationID: group.id, upTo: 99)
            try await store.markRead(userID: "alice", conversationID: group.id, upTo: 1)
            let read = try await store.conversations(of: "alice", after: nil, limit: 10, filter: .all)
            #expect(read.summaries.first { $0.record.conversation.id == group.id }.map { ($0.readUpTo, $0.unreadCount) }! == (3, 0))
            // Posting moves the sender's own marker.
            try await post(store, draft("d", by: "alice", in: direct))
            let afterOwn = try await store.conversations(of: "alice", after: nil, limit: 1, filter: .all)
            #expect(afterOwn.summaries.first.map { ($0.record.conversation.id, $0.readUpTo, $0.unreadCount) }! == (direct.id, 4, 0))

            try await store.setLevel(.muted, userID: "alice", conversationID: third.id)
            let muted = try await store.conversations(of: "alice", after: nil, limit: 10, filter: .muted)
            #expect(muted.summaries.map(\.record.conversation.id) == [third.id] && muted.summaries.first?.muted == true)
            try await store.setLevel(nil, userID: "alice", conversationID: third.id)
            #expect(try await store.conversations(of: "alice", after: nil, limit: 10, filter: .muted).summaries.isEmpty)
            // A level whose end has passed is the default again: not muted, not listed as a level of its own.
            try await store.setLevel(LevelChoice(level: .nothing, until: Date().addingTimeInterval(-1)), userID: "alice", conversationID: third.id)
            #expect(try await store.conversations(of: "alice", after: nil, limit: 10, filter: .muted).summaries.isEmpty)
            #expect(try await store.conversations(of: "alice", after: nil, limit: 10, filter: .leveled).summaries.isEmpty)
            let ended = try await store.summary(of: third.id, for: "alice")
            #expect(ended?.muted == false && ended?.level == nil)
            let hour = LevelChoice(level: .mentions, until: Date().addingTimeInterval(3600))
            try await store.setLevel(hour, userID: "alice", conversationID: third.id)
            let leveled = try await store.conversations(of: "alice", after: nil, limit: 10, filter: .leveled).summaries
            #expect(leveled.map(\.record.conversation.id) == [third.id])
            #expect(abs((leveled.first?.level?.until?.timeIntervalSince1970 ?? 0) - hour.until!.timeIntervalSince1970) < 0.001)
            // The default level: `nothing` mutes every conversation without a level of its own.
            try await store.setNotificationSettings(NotificationSettings(defaultLevel: .nothing), of: "alice")
            let byDefault = try await store.conversations(of: "alice", after: nil, limit: 10, filter: .all).summaries
            #expect(byDefault.allSatisfy { $0.muted == ($0.record.conversation.id != third.id) })
            #expect(try await store.notificationSettings(of: "alice").defaultLevel == .nothing)
        }
    }

    @Test("devices: registered, limited, a token moves to its newest device, removed with their pushes", arguments: kinds)
    func devices(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let (_, group) = try await setUp(store)
            try await store.registerDevice(DeviceRegistration(id: "phone", userID: "alice", platform: .apns, token: "aa"), limit: 2)
            try await store.registerDevice(DeviceRegistration(id: "tablet", userID: "alice", platform: .fcm, token: "bb"), limit: 2)
            await #expect(throws: StoreError.deviceLimit(2)) {
                try await store.registerDevice(DeviceRegistration(id: "third", userID: "alice", platform: .expo, token: "cc"), limit: 2)
            }
            // Updating a device it has is not a new one.
            try await store.registerDevice(DeviceRegistration(id: "phone", userID: "alice", platform: .apns, token: "a2"), limit: 2)
            #expect(try await store.devices(of: "alice").map(\.token) == ["a2", "bb"])
            // The tablet changed hands.
            try await store.registerDevice(DeviceRegistration(id: "bobs", userID: "bob", platform: .fcm, token: "bb"), limit: 2)
            #expect(try await store.devices(of: "alice").map(\.id) == ["phone"])
            #expect(try await store.devices(of: "bob").map(\.id) == ["bobs"])
            #expect(try await store.removeDevice(id: "phone", userID: "alice"))
            #expect(try await !store.removeDevice(id: "phone", userID: "alice"))
            #expect(try await store.devices(of: "alice").isEmpty)

            // Removed while its push was in flight: the receipt its send brings back is not kept for it (nothing
            // would ever lease it; the outbox would never empty).
            // Its push keys are kept with it and read with its pushes.
            let keys = PushEncryptionKeys(p256dh: Data(repeating: 4, count: 65), auth: Data(repeating: 7, count: 16))
            try await store.registerDevice(
                DeviceRegistration(id: "rn", userID: "bob", platform: .expo, token: "ExponentPushToken[r]", keys: keys), limit: 2)
            #expect(try await store.reportedDevices(of: "bob").map(\.device.keys) == [nil, keys])
            let message = try await post(store, draft("d-1", by: "alice", in: group))
            let content = PushContent(alert: IncomingMessage(message: message, conversation: group, sender: person("alice")), badge: 1)
            let now = Date()
            try await store.queuePushJobs([NewPushJob(kind: .alert, userID: "bob", deviceID: "rn", content: content, due: now)])
            let inFlight = try #require(try await store.leasePushJobs(now: now, platform: .expo, limit: 10).jobs.first)
            #expect(inFlight.device.keys == keys)
            try await store.registerDevice(DeviceRegistration(id: "rn", userID: "bob", platform: .expo, token: "ExponentPushToken[r]"), limit: 2)
            #expect(try await store.devices(of: "bob").map(\.keys) == [nil, nil], "registered again without keys, it has none")
            #expect(try await store.removeDevice(id: "rn", userID: "bob"))
            let receipt = NewPushJob(kind: .receipt, userID: "bob", deviceID: "rn", content: content, ticket: "ticket-1", due: now)
            try await store.finishPushJobs([FinishedPush(job: inFlight, followUp: receipt, sent: true)])
            #expect(try await store.pushJobCount() == 0)
        }
    }

    @Test("the push outbox: targets, unique jobs, leases per platform, retries, follow-ups, clears after a read", arguments: kinds)
    func outbox(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let (direct, group) = try await setUp(store)
            try await store.registerDevice(DeviceRegistration(id: "bob-phone", userID: "bob", platform: .apns, token: "b1"), limit: 5)
            try await store.registerDevice(DeviceRegistration(id: "bob-web", userID: "bob", platform: .fcm, token: "b2"), limit: 5)
            try await store.registerDevice(DeviceRegistration(id: "carol-phone", userID: "carol", platform: .apns, token: "c1"), limit: 5)
            try await post(store, draft("p-1", by: "alice", in: group))
            let message = try await post(store, draft("p-2", by: "alice", in: group))

            // Targets: candidates' devices, not read; each with the owner's badge (a conversation at `nothing`
            // counts towards none) and level (the policy skips `nothing`).
            try await store.setLevel(.muted, userID: "carol", conversationID: group.id)
            let all = try await store.pushTargets(conversationID: group.id, seq: 2, among: ["bob", "carol"])
            #expect(all.map(\.device.id) == ["bob-phone", "bob-web", "carol-phone"] && all.map(\.badge) == [2, 2, 0])
            #expect(all.map(\.level) == [nil, nil, .muted])
            let targets = all.filter { $0.level != .muted }
            // A round of several messages at once: candidates without a device (dave, who is no member either) change
            // nothing, and each message is decided as if alone.
            let round = try await store.pushTargets([
                PushTargetQuery(conversationID: group.id, seq: 2, candidates: ["bob", "carol", "dave"]),
                PushTargetQuery(conversationID: group.id, seq: 2, candidates: []),
                PushTargetQuery(conversationID: group.id, seq: 2, candidates: ["dave"]),
                PushTargetQuery(conversationID: group.id, seq: 1, candidates: ["carol"]),
                PushTargetQuery(conversationID: direct.id, seq: 3, candidates: ["bob", "alice"]),
            ])
            #expect(round.map { $0.map(\.device.id) } == [["bob-phone", "bob-web", "carol-phone"], [], [], ["carol-phone"], ["bob-phone", "bob-web"]])

            let content = PushContent(alert: IncomingMessage(message: message, conversation: group, sender: person("alice")), badge: 2)
            let now = Date()
            let jobs = targets.map { NewPushJob(kind: .alert, userID: $0.device.userID, deviceID: $0.device.id, content: content, due: now) }
            #expect(try await store.queuePushJobs(jobs) == 2)
            #expect(try await store.queuePushJobs(jobs) == 0)
            #expect(try await store.pushJobCount() == 2)

            // Leased per platform, once; a job not yet due is not leased, and tells when it falls due.
            let later = NewPushJob(kind: .alert, userID: "carol", deviceID: "carol-phone", content: content, due: now.addingTimeInterval(60))
            #expect(try await store.queuePushJobs([later]) == 1)
            let apns = try await store.leasePushJobs(now: now.addingTimeInterval(1), platform: .apns, limit: 10)
            #expect(apns.jobs.map(\.device.id) == ["bob-phone"] && apns.jobs.first?.device.token == "b1")
            #expect(apns.jobs.first?.content == content)
            let nextDue = try #require(apns.nextDue)
            #expect(abs(nextDue.timeIntervalSince(now.addingTimeInterval(60))) < 0.01)
            #expect(try await store.leasePushJobs(now: now.addingTimeInterval(1), platform: .apns, limit: 10).jobs.isEmpty)

            // A retry puts it back for later; a finish deletes it and queues its follow-up.
            let leased = try #require(apns.jobs.first)
            try await store.retryPushJob(id: leased.id, at: now.addingTimeInterval(5))
            #expect(try await store.leasePushJobs(now: now.addingTimeInterval(2), platform: .apns, limit: 10).jobs.isEmpty)
            let again = try await store.leasePushJobs(now: now.addingTimeInterval(6), platform: .apns, limit: 10).jobs
            #expect(again.map(\.id) == [leased.id] && again.first?.attempts == 1)
            let receipt = NewPushJob(kind: .receipt, userID: "bob", deviceID: "bob-phone", content: content,
                                     ticket: "ticket-1", due: now.addingTimeInterval(600))
            try await store.finishPushJobs([FinishedPush(job: leased, followUp: receipt)])
            #expect(try await store.pushJobCount() == 3)

            // Bob reads on the web: the phone, shown the conversation by a push, gets a clear; the reader does not;
            // the web's own alert, still waiting, is dropped.
            let read = ReadMark(
                userID: "bob", conversationID: group.id, upTo: message.seq ?? 0, device: "bob-web", clearsDue: now)
            #expect(try await store.markRead(read) == ReadOutcome(events: 0, clears: 1))
            let clears = try await store.leasePushJobs(now: now.addingTimeInterval(7), platform: .apns, limit: 10).jobs
            #expect(clears.map(\.kind) == [.clear] && clears.first?.device.id == "bob-phone")
            #expect(clears.first?.content.badge == 0)
            #expect(try await store.leasePushJobs(now: now.addingTimeInterval(7), platform: .fcm, limit: 10).jobs.isEmpty)

            // A removed device's jobs go with it.
            _ = try await store.removeDevice(id: "bob-phone", userID: "bob")
            #expect(try await store.pushJobCount() == 1)
        }
    }

    @Test("a follow-up waits for its device's alert in flight; an alert in flight when its message is deleted loses its text and is never sent again",
          arguments: kinds)
    func followUpsBehindAlerts(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let (_, group) = try await setUp(store)
            try await store.registerDevice(DeviceRegistration(id: "bob-phone", userID: "bob", platform: .apns, token: "t-1"), limit: 5)
            let message = try await post(store, draft("f-1", by: "alice", in: group, text: "the code is 1234"))
            let seq = try #require(message.seq)
            let now = Date()
            let alert = PushContent(alert: IncomingMessage(message: message, conversation: group, sender: person("alice")), badge: 1)
            try await store.queuePushJobs([NewPushJob(kind: .alert, userID: "bob", deviceID: "bob-phone", content: alert, due: now)])
            let inFlight = try #require(try await store.leasePushJobs(now: now, platform: .apns, limit: 10).jobs.first)

            // Deleted while it is being sent: its row keeps no text; the follow-up queued for the phone waits for it.
            _ = try await store.amend(MessageAmendment(conversationID: group.id, messageID: "f-1", actorID: "alice", action: .delete))
            let followUp = PushContent.followUp(.deleted, of: group.id, messageID: "f-1", seq: seq, shownAs: "herald-\(seq)", badge: 0)
            try await store.queuePushJobs([NewPushJob(kind: .follow, userID: "bob", deviceID: "bob-phone", content: followUp, due: now)])
            let waiting = try await store.leasePushJobs(now: now, platform: .apns, limit: 10)
            #expect(waiting.jobs.isEmpty, "the follow-up must not overtake the alert")
            // Nothing is due before the alert is answered (or, on PostgreSQL, its lease runs out): the sender does not spin.
            #expect(waiting.nextDue.map { $0 > now } ?? true, "next due \(String(describing: waiting.nextDue))")

            // The send failed and the server stopped: the alert is leased again, and dropped, not sent.
            try await store.retryPushJob(id: inFlight.id, at: now)
            #expect(try await store.releasePushLeases() >= 0)
            let dropped = try await store.leasePushJobs(now: now.addingTimeInterval(1), platform: .apns, limit: 10)
            #expect(dropped.jobs.isEmpty, "the alert is dropped")
            #expect(dropped.nextDue.map { $0 <= now.addingTimeInterval(1) } == true, "and the follow-up is due at once")
            let again = try await store.leasePushJobs(now: now.addingTimeInterval(1), platform: .apns, limit: 10).jobs
            #expect(again.map(\.kind) == [.follow], "only the follow-up goes: \(again.map(\.kind))")
            #expect(again.first?.content.follows == .deleted && again.first?.content.body == nil)
            #expect(try await store.pushJobCount() == 1)
        }
    }

    @Test("a follow-up replaced while it is in flight (an edit, then a delete at once) is not lost when the first send ends: it goes next",
          arguments: kinds)
    func followUpReplacedInFlight(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let (_, group) = try await setUp(store)
            try await store.registerDevice(DeviceRegistration(id: "bob-pixel", userID: "bob", platform: .fcm, token: "f-1"), limit: 5)
            let message = try await post(store, draft("r-1", by: "alice", in: group, text: "first words"))
            let seq = try #require(message.seq)
            let now = Date()
            let edit = PushContent.followUp(.edited, of: group.id, messageID: "r-1", seq: seq, shownAs: "herald-\(seq)", badge: 1)
            try await store.queuePushJobs([NewPushJob(kind: .follow, userID: "bob", deviceID: "bob-pixel", content: edit, due: now)])
            let inFlight = try #require(try await store.leasePushJobs(now: now, platform: .fcm, limit: 10).jobs.first)
            #expect(inFlight.content.follows == .edited)

            let removal = PushContent.followUp(.deleted, of: group.id, messageID: "r-1", seq: seq, shownAs: "herald-\(seq)", badge: 0)
            try await store.queuePushJobs([NewPushJob(kind: .follow, userID: "bob", deviceID: "bob-pixel", content: removal, due: now)])
            #expect(try await store.leasePushJobs(now: now, platform: .fcm, limit: 10).jobs.isEmpty, "one send at a time")
            try await store.finishPushJobs([FinishedPush(job: inFlight, sent: true)])
            let next = try await store.leasePushJobs(now: now, platform: .fcm, limit: 10).jobs
            #expect(next.map(\.content.follows) == [.deleted], "the deletion's follow-up goes after the edit's")
            try await store.finishPushJobs(next.map { FinishedPush(job: $0, sent: true) })
            #expect(try await store.pushJobCount() == 0)
        }
    }

    @Test("confirmations from streams naming no registered device keep one row for the member, not one for each made-up id; a removed device's goes",
          arguments: kinds)
    func receiptsOfUnknownDevices(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await setUp(store)
            try await store.registerDevice(DeviceRegistration(id: "bob-phone", userID: "bob", platform: .apns, token: "t-9"), limit: 5)
            let madeUp = (0..<20).map { PushConfirmation(userID: "bob", device: "made-up-\($0)", through: Int64($0 + 1)) }
            _ = try await store.recordConfirmations(madeUp + [PushConfirmation(userID: "bob", device: "bob-phone", through: 3)])
            #expect(try await Self.receipts(in: store) == ["bob/": 20, "bob/bob-phone": 3])
            _ = try await store.recordConfirmations([PushConfirmation(userID: "bob", device: "made-up-99", through: 30)])
            #expect(try await Self.receipts(in: store) == ["bob/": 30, "bob/bob-phone": 3])
            _ = try await store.removeDevice(id: "bob-phone", userID: "bob")
            #expect(try await Self.receipts(in: store) == ["bob/": 30])
        }
    }

    @Test("PostgreSQL: a deleted message's text stays in the table's file until VACUUM FULL rewrites it (docs/security.md says so)",
          arguments: kinds.filter { $0 == .postgres })
    func postgresDeletionOnDisk(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let postgres = try #require(store as? PostgresStore)
            let (_, group) = try await setUp(store)
            _ = try await post(store, draft("v-1", by: "alice", in: group, text: "zebra-walrus-4711"))
            _ = try await store.amend(MessageAmendment(conversationID: group.id, messageID: "v-1", actorID: "alice", action: .delete))
            let logger = Logger(label: "store-test")
            // The tests' server runs as the superuser, who may read the cluster's files (written out by CHECKPOINT).
            func onDisk() async throws -> Bool {
                try await postgres.database.query("CHECKPOINT", logger: logger)
                let rows = try await postgres.database.query(
                    "SELECT position('zebra-walrus-4711'::bytea IN pg_read_binary_file(pg_relation_filepath('messages'))) > 0",
                    logger: logger)
                return try rows.first?.decode(Bool.self) ?? false
            }
            #expect(try await onDisk(), "the old row version is still in the file")
            #expect(try await store.entries(in: group.id, for: "alice", after: 0, before: nil, limit: 10).allSatisfy { $0.text == nil })
            // A transaction that began before the deletion keeps the old version even through VACUUM FULL: once none
            // is left, the rewritten file holds no trace of it.
            try await eventually("the text gone from the rewritten file") {
                try await postgres.database.query("VACUUM FULL messages, push_jobs, webhook_jobs", logger: logger)
                return try await onDisk() == false
            }
        }
    }

    /// The push receipts `store` keeps, as `user/device: through`.
    static func receipts(in store: any Store) async throws -> [String: Int64] {
        if let sqlite = store as? SQLiteStore {
            return try await sqlite.database.perform { connection in
                var receipts: [String: Int64] = [:]
                for row in try connection.query("SELECT user_id, device, through FROM push_receipts") {
                    receipts["\(row.column("user_id")?.string ?? "")/\(row.column("device")?.string ?? "")"] =
                        Int64(row.column("through")?.integer ?? -1)
                }
                return receipts
            }
        }
        var receipts: [String: Int64] = [:]
        if let postgres = store as? PostgresStore {
            let rows = try await postgres.database.query(
                "SELECT user_id, device, through FROM push_receipts", logger: Logger(label: "store-test"))
            for row in rows {
                let (user, device, through) = try row.decode((String, String, Int64).self)
                receipts["\(user)/\(device)"] = through
            }
        }
        return receipts
    }

    @Test("device keys: a key reads what was leased to its device, nothing else, until its device is registered again or removed", arguments: kinds)
    func deviceKeys(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let (direct, group) = try await setUp(store)
            let (phone, tablet, carols) = (DeviceReadKey.make(), DeviceReadKey.make(), DeviceReadKey.make())
            let device = { (id: String, user: String, platform: DeviceRegistration.Platform) in
                DeviceRegistration(id: id, userID: user, platform: platform, token: "t-\(id)")
            }
            try await store.registerDevice(device("bob-phone", "bob", .apns), limit: 5, keyDigest: phone.digest)
            try await store.registerDevice(device("bob-tablet", "bob", .fcm), limit: 5, keyDigest: tablet.digest)
            try await store.registerDevice(device("carol-phone", "carol", .apns), limit: 5, keyDigest: carols.digest)
            let message = try await post(store, draft("k-1", by: "alice", in: group))
            let privately = try await post(store, draft("k-2", by: "alice", in: direct))
            let now = Date()
            let jobs = [("bob", "bob-phone", message), ("carol", "carol-phone", message), ("bob", "bob-phone", privately)].map {
                let content = PushContent(alert: IncomingMessage(message: $0.2, conversation: $0.2.conversationID == group.id ? group : direct,
                                                                 sender: person("alice")), badge: 1, mode: .none)
                return NewPushJob(kind: .alert, userID: $0.0, deviceID: $0.1, content: content, due: now)
            }
            // Every alert is granted with the lease, just before it goes (a full one too: what it said may be
            // edited or deleted, and followed there): queued is not enough.
            let full = PushContent(alert: IncomingMessage(message: message, conversation: group, sender: person("alice")), badge: 1)
            try await store.queuePushJobs([NewPushJob(kind: .alert, userID: "bob", deviceID: "bob-tablet", content: full, due: now)])
            #expect(try await store.leasePushJobs(now: now, platform: .fcm, limit: 10).jobs.count == 1)
            try await store.queuePushJobs(jobs)
            let since = now.addingTimeInterval(-60)
            func read(_ key: (key: String, digest: String), _ message: Message, in conversation: Conversation, since: Date = since) async throws -> PushGrantLookup {
                try await store.pushedMessage(keyDigest: key.digest, conversationID: conversation.id, messageID: message.id, since: since)
            }
            #expect(try await read(phone, message, in: group) == .notGranted)
            #expect(try await store.leasePushJobs(now: now, platform: .apns, limit: 10).jobs.count == 3)

            let seq = try #require(message.seq)
            #expect(try await read(phone, message, in: group) == .granted(PushGrant(userID: "bob", deviceID: "bob-phone", seq: seq)))
            #expect(try await read(carols, message, in: group) == .granted(PushGrant(userID: "carol", deviceID: "carol-phone", seq: seq)))
            #expect(try await read(tablet, message, in: group) == .granted(PushGrant(userID: "bob", deviceID: "bob-tablet", seq: seq)))
            #expect(try await read(carols, privately, in: direct) == .notGranted, "another user's push")
            #expect(try await read(phone, message, in: direct) == .notGranted, "the id names another conversation's message")
            #expect(try await read(phone, message, in: group, since: now.addingTimeInterval(60)) == .notGranted, "too old")
            #expect(try await read((key: "", digest: DeviceReadKey.make().digest), message, in: group) == .unknownKey)

            // Registered again: a new key, the old one ends; the device's grants stay its own.
            let renewed = DeviceReadKey.make()
            try await store.registerDevice(device("bob-phone", "bob", .apns), limit: 5, keyDigest: renewed.digest)
            #expect(try await read(phone, message, in: group) == .unknownKey)
            #expect(try await read(renewed, privately, in: direct) == .granted(PushGrant(userID: "bob", deviceID: "bob-phone", seq: privately.seq ?? 0)))
            // Removed: its key and grants go with it.
            #expect(try await store.removeDevice(id: "bob-phone", userID: "bob"))
            #expect(try await read(renewed, message, in: group) == .unknownKey)
            try await store.registerDevice(device("bob-phone", "bob", .apns), limit: 5, keyDigest: renewed.digest)
            #expect(try await read(renewed, message, in: group) == .notGranted, "a device registered again under the same id starts with nothing")
            // Grants that ran out are forgotten: the others stay.
            #expect(try await read(carols, message, in: group) != .notGranted)
            #expect(try await store.forgetPushGrants(before: now.addingTimeInterval(-1)) == 0)
            #expect(try await store.forgetPushGrants(before: now.addingTimeInterval(1)) == 2, "carol's and the tablet's (the phone's went with it)")
            #expect(try await read(carols, message, in: group, since: .distantPast) == .notGranted)
        }
    }

    /// The rows of a database made before message ids were scoped: two conversations, two messages, a pending alert.
    static let oldRows = [
        "INSERT INTO users (id, name) VALUES ('alice', 'Alice'), ('bob', 'Bob')",
        "INSERT INTO conversations (id, kind, title, created_at) VALUES ('c1', 'group', 'One', 0), ('c2', 'group', 'Two', 0)",
        "INSERT INTO members (conversation_id, user_id) VALUES ('c1', 'alice'), ('c1', 'bob'), ('c2', 'alice'), ('c2', 'bob')",
        "INSERT INTO messages (seq, id, conversation_id, sender_id, text, created_at) VALUES (1, 'm-1', 'c1', 'alice', 'one', 0), (2, 'm-2', 'c1', 'alice', 'two', 0)",
        "INSERT INTO devices (user_id, id, platform, token, updated_at) VALUES ('bob', 'phone', 'apns', 'aa', 0)",
        """
        INSERT INTO push_jobs (kind, job_key, user_id, device_id, conversation_id, seq, content, created_at, due_at)
        VALUES ('alert', 'm-2', 'bob', 'phone', 'c1', 2, '{"conversationID":"c1","messageID":"m-2","seq":2,"badge":1}', 0, 0)
        """,
    ]

    @Test("a database from before ids were scoped migrates: messages and seqs kept, ids per conversation, a pending alert not queued twice", arguments: kinds)
    func scopedIDsMigration(kind: StoreKind) async throws {
        let check = { (store: any Store) in
            #expect(try await store.entries(in: "c1", for: "alice", after: nil, before: nil, limit: 10).map(\.seq) == [1, 2])
            let c2 = Conversation(id: "c2", kind: .group, title: "Two")
            let moved = try await store.post(self.draft("m-1", by: "bob", in: c2))
            guard case .stored(let message) = moved else { Issue.record("not stored: \(moved)"); return }
            #expect(message.seq == 3, "the numbering goes on")
            let content = PushContent(
                alert: IncomingMessage(
                    message: Message(id: "m-2", conversationID: "c1", senderID: "alice", text: "two", seq: 2),
                    conversation: Conversation(id: "c1", kind: .group, title: "One"), sender: self.person("alice")),
                badge: 1)
            let again = NewPushJob(kind: .alert, userID: "bob", deviceID: "phone", content: content, due: Date())
            #expect(try await store.queuePushJobs([again]) == 0, "the pending alert is the same job")
            #expect(try await store.pushJobCount() == 1)
        }
        // PostgreSQL numbers messages from its counter row.
        try await kind.withOldDatabase(
            sqliteStep: 4, postgresStep: 2, rows: Self.oldRows, postgresRows: ["UPDATE message_seq SET seq = 2"], check)
    }
}
