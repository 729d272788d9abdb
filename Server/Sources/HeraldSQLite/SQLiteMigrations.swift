import HeraldRecords
import Logging

/// The schema, as numbered steps; a database records how many it has applied in `PRAGMA user_version`.
package enum SQLiteMigrations {
    /// Storing a message moves its conversation to the top of every member's list and the sender's read marker to
    /// it, in the same statement: a group of posts is one INSERT, so one transaction, one sync. Events move nothing
    /// here (the change that makes one moves what it must), and former members are left where they were.
    package static let moveMembersBeforeEvents = """
        CREATE TRIGGER messages_move_members AFTER INSERT ON messages BEGIN
            UPDATE members SET activity = NEW.seq,
                read_seq = CASE WHEN user_id = NEW.sender_id THEN max(read_seq, NEW.seq) ELSE read_seq END
            WHERE conversation_id = NEW.conversation_id;
        END
        """

    /// The same once entries may be events and members may leave.
    package static let moveMembers = """
        CREATE TRIGGER messages_move_members AFTER INSERT ON messages WHEN NEW.event IS NULL BEGIN
            UPDATE members SET activity = NEW.seq,
                read_seq = CASE WHEN user_id = NEW.sender_id THEN max(read_seq, NEW.seq) ELSE read_seq END
            WHERE conversation_id = NEW.conversation_id AND removed_seq IS NULL;
        END
        """

    /// The list order without a write per member: storing a message moves its conversation's `activity` (a member's
    /// place in the list is the later of it and the member's own, which marks when they joined) and the sender's read
    /// marker. One row each, whatever the group's size; the conversation's only when its activity moves on.
    package static let moveConversation = """
        CREATE TRIGGER messages_move_conversation AFTER INSERT ON messages WHEN NEW.event IS NULL BEGIN
            UPDATE conversations SET activity = NEW.seq WHERE id = NEW.conversation_id AND activity < NEW.seq;
            UPDATE members SET read_seq = max(read_seq, NEW.seq)
            WHERE conversation_id = NEW.conversation_id AND user_id = NEW.sender_id AND removed_seq IS NULL;
        END
        """

    package static let steps: [[String]] = [
        [
            """
            CREATE TABLE users (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL DEFAULT '',
                picture TEXT
            )
            """,
            """
            CREATE TABLE conversations (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('direct', 'group')),
                title TEXT,
                direct_key TEXT UNIQUE,
                created_at REAL NOT NULL
            )
            """,
            """
            CREATE TABLE members (
                conversation_id TEXT NOT NULL REFERENCES conversations(id),
                user_id TEXT NOT NULL REFERENCES users(id),
                read_seq INTEGER NOT NULL DEFAULT 0,
                muted INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (conversation_id, user_id)
            )
            """,
            "CREATE INDEX members_by_user ON members(user_id)",
            """
            CREATE TABLE messages (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                conversation_id TEXT NOT NULL REFERENCES conversations(id),
                sender_id TEXT NOT NULL REFERENCES users(id),
                text TEXT,
                image_url TEXT,
                created_at REAL NOT NULL
            )
            """,
            "CREATE INDEX messages_by_conversation ON messages(conversation_id, seq)",
            """
            CREATE TABLE devices (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                platform TEXT NOT NULL,
                token TEXT NOT NULL,
                updated_at REAL NOT NULL
            )
            """,
            "CREATE INDEX devices_by_user ON devices(user_id)",
        ],
        [
            // A direct chat is found by its two members, each prefixed by its length in bytes: no separator that a
            // user id could contain.
            """
            UPDATE conversations SET direct_key = (
                SELECT length(CAST(min(user_id) AS BLOB)) || ':' || min(user_id)
                    || length(CAST(max(user_id) AS BLOB)) || ':' || max(user_id)
                FROM members WHERE conversation_id = conversations.id)
            WHERE kind = 'direct'
            """,
            // Each member's list is ordered by activity (the conversation's latest seq) and read a page at a time.
            "ALTER TABLE members ADD COLUMN activity INTEGER NOT NULL DEFAULT 0",
            "UPDATE members SET activity = coalesce((SELECT max(seq) FROM messages WHERE conversation_id = members.conversation_id), 0)",
            "CREATE INDEX members_by_activity ON members(user_id, activity, conversation_id)",
            "CREATE INDEX members_muted ON members(user_id, conversation_id) WHERE muted = 1",
            // Unread counts from the index alone.
            "DROP INDEX messages_by_conversation",
            "CREATE INDEX messages_by_conversation ON messages(conversation_id, seq, sender_id)",
            // Devices belong to their user (keyed by user and id); a push token belongs to one device, the newest.
            """
            CREATE TABLE devices_by_owner (
                user_id TEXT NOT NULL REFERENCES users(id),
                id TEXT NOT NULL,
                platform TEXT NOT NULL,
                token TEXT NOT NULL,
                updated_at REAL NOT NULL,
                PRIMARY KEY (user_id, id)
            )
            """,
            """
            INSERT INTO devices_by_owner (user_id, id, platform, token, updated_at)
            SELECT user_id, id, platform, token, updated_at FROM devices
            WHERE rowid IN (SELECT rowid FROM (SELECT rowid, max(updated_at) FROM devices GROUP BY platform, token))
            """,
            "DROP TABLE devices",
            "ALTER TABLE devices_by_owner RENAME TO devices",
            "CREATE UNIQUE INDEX devices_by_token ON devices(platform, token)",
            // Whether a server has the database open: set at start, cleared at a clean stop (see SQLiteStore.open).
            "CREATE TABLE server_state (id INTEGER PRIMARY KEY CHECK (id = 1), running INTEGER NOT NULL)",
            "INSERT INTO server_state (id, running) VALUES (1, 0)",
        ],
        [
            moveMembersBeforeEvents,
        ],
        [
            // The push outbox: one row per push to one device, written before it is sent, kept until it is
            // answered. Unique by what it is about, so nothing is queued twice; `leased` marks a job being sent
            // (cleared at start: a job in flight when the server died is sent again, with the same collapse id).
            """
            CREATE TABLE push_jobs (
                id INTEGER PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('alert', 'clear', 'receipt')),
                job_key TEXT NOT NULL,
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                content TEXT NOT NULL,
                ticket TEXT,
                created_at REAL NOT NULL,
                due_at REAL NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                leased INTEGER NOT NULL DEFAULT 0,
                UNIQUE (kind, job_key, user_id, device_id)
            )
            """,
            "CREATE INDEX push_jobs_due ON push_jobs(leased, due_at)",
            "CREATE INDEX push_jobs_by_device ON push_jobs(user_id, device_id)",
            // Which devices were shown a conversation's messages by a push, up to which seq: reading the
            // conversation on one device clears them on these (a silent push), and only on these.
            """
            CREATE TABLE push_shown (
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                PRIMARY KEY (user_id, conversation_id, device_id)
            )
            """,
        ],
        [
            // Message ids are scoped to their conversation: an id used in a conversation one cannot see is neither
            // revealed (409) nor taken from anyone. SQLite cannot drop a constraint, so the table is made again,
            // keeping its seqs and its AUTOINCREMENT counter.
            """
            CREATE TABLE messages_scoped (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL,
                conversation_id TEXT NOT NULL REFERENCES conversations(id),
                sender_id TEXT NOT NULL REFERENCES users(id),
                text TEXT,
                image_url TEXT,
                created_at REAL NOT NULL,
                UNIQUE (conversation_id, id)
            )
            """,
            """
            INSERT INTO messages_scoped (seq, id, conversation_id, sender_id, text, image_url, created_at)
            SELECT seq, id, conversation_id, sender_id, text, image_url, created_at FROM messages ORDER BY seq
            """,
            """
            UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0))
            WHERE name = 'messages_scoped'
            """,
            "DROP TABLE messages",
            "ALTER TABLE messages_scoped RENAME TO messages",
            "CREATE INDEX messages_by_conversation ON messages(conversation_id, seq, sender_id)",
            moveMembersBeforeEvents,
            // An alert job is unique by its message's seq (an id names a message only within its conversation).
            "UPDATE OR IGNORE push_jobs SET job_key = CAST(seq AS TEXT) WHERE kind = 'alert'",
        ],
        [
            // A user is known once they signed in (or the app's backend made them); a member added before that is a
            // row with an id only. Only known users may be added to a conversation, or found.
            "ALTER TABLE users ADD COLUMN known INTEGER NOT NULL DEFAULT 0",
            "UPDATE users SET known = 1 WHERE name <> ''",
            "CREATE INDEX users_known ON users(known, id)",
        ],
        [
            // The event log: an entry is a message, or an event (its JSON in `event`: members added or removed, a
            // new title, ...) with a seq of the same sequence, so members learn both in one order.
            "ALTER TABLE messages ADD COLUMN event TEXT",
            // Members change: each row says from which seq the member receives entries (`added_seq`), until which
            // (`removed_seq`, NULL while a member), from which they may read the past (`visible_from`), and whether
            // they own the group. Every member of an existing group owns it: nobody knows who made it.
            "ALTER TABLE members ADD COLUMN added_seq INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE members ADD COLUMN removed_seq INTEGER",
            "ALTER TABLE members ADD COLUMN visible_from INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE members ADD COLUMN owner INTEGER NOT NULL DEFAULT 0",
            "UPDATE members SET owner = 1 WHERE conversation_id IN (SELECT id FROM conversations WHERE kind = 'group')",
            // A deleted group keeps its row and its members' (so their devices learn of it on resume); its
            // messages go.
            "ALTER TABLE conversations ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE conversations ADD COLUMN title_seq INTEGER NOT NULL DEFAULT 0",
            // The push decider's place in the log, kept across restarts: what it has decided on. It starts at the
            // log's end: what was stored before had its decisions.
            "CREATE TABLE log_cursors (name TEXT PRIMARY KEY, seq INTEGER NOT NULL)",
            "INSERT INTO log_cursors (name, seq) SELECT 'push', coalesce(max(seq), 0) FROM messages",
            "DROP TRIGGER messages_move_members",
            moveMembers,
        ],
        [
            // The app's backend: messages that notify nobody, system messages (their sender is the user row with
            // the empty id, which no token can name), and erased users, whose id never comes back.
            "ALTER TABLE messages ADD COLUMN silent INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE users ADD COLUMN erased INTEGER NOT NULL DEFAULT 0",
            "INSERT OR IGNORE INTO users (id, name, known) VALUES ('', '', 0)",
        ],
        [
            // The webhook outbox: an event for the app's backend from when it is written (with what it tells) until
            // the backend answers 2xx. Events of one conversation (or, without one, of one user: `ordering_key`)
            // go out one at a time in (seq, rank, id) order: an entry's own event (rank 0) before the others at its
            // seq. `leased_until` marks one being sent.
            """
            CREATE TABLE webhook_jobs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                type TEXT NOT NULL,
                ordering_key TEXT NOT NULL,
                conversation_id TEXT,
                seq INTEGER NOT NULL,
                rank INTEGER NOT NULL,
                data TEXT NOT NULL,
                created_at REAL NOT NULL,
                due_at REAL NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                leased_until REAL NOT NULL DEFAULT 0
            )
            """,
            "CREATE INDEX webhook_jobs_order ON webhook_jobs(ordering_key, seq, rank, id)",
            // Reminders of unread messages, one per member and conversation: checked when due, dropped when a device
            // of the member connects.
            """
            CREATE TABLE unread_reminders (
                user_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                created_at REAL NOT NULL,
                due_at REAL NOT NULL,
                PRIMARY KEY (user_id, conversation_id)
            )
            """,
            "CREATE INDEX unread_reminders_due ON unread_reminders(due_at)",
            // The feed's place in the log, from the log's end: what was stored before is not told.
            """
            INSERT INTO log_cursors (name, seq) SELECT 'webhook', max(
                coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0), coalesce((SELECT max(seq) FROM messages), 0))
            """,
        ],
        [
            // Retention's horizon: the highest seq it deleted.
            "INSERT INTO log_cursors (name, seq) VALUES ('horizon', 0)",
            "CREATE INDEX messages_by_time ON messages(created_at)",
        ],
        [
            // Who hears what: a member's own level for a conversation (NULL: the default), until an instant (NULL:
            // for ever); a mute was `nothing` for ever. A user's settings (JSON in `body`, the two the badge's SQL
            // reads beside it). A message's mentions (JSON `{"ids", "all"}`, NULL for none).
            "ALTER TABLE members ADD COLUMN level TEXT",
            "ALTER TABLE members ADD COLUMN level_until REAL",
            "UPDATE members SET level = 'nothing' WHERE muted = 1",
            "DROP INDEX members_muted",
            "ALTER TABLE members DROP COLUMN muted",
            "CREATE INDEX members_leveled ON members(user_id, conversation_id) WHERE level IS NOT NULL",
            """
            CREATE TABLE notification_settings (
                user_id TEXT PRIMARY KEY,
                default_level TEXT NOT NULL DEFAULT 'all',
                badge_counts_muted INTEGER NOT NULL DEFAULT 0,
                body TEXT NOT NULL
            )
            """,
            "ALTER TABLE messages ADD COLUMN mentions TEXT",
        ],
        [
            // Nothing of an erased user's is written again: their devices, settings and memberships are refused by
            // the database itself, whatever a request in flight at the erasure still believes.
            """
            CREATE TRIGGER devices_of_the_living BEFORE INSERT ON devices
            WHEN EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id AND erased) BEGIN SELECT RAISE(ABORT, 'user_erased'); END
            """,
            """
            CREATE TRIGGER devices_of_the_living_changed BEFORE UPDATE ON devices
            WHEN EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id AND erased) BEGIN SELECT RAISE(ABORT, 'user_erased'); END
            """,
            """
            CREATE TRIGGER settings_of_the_living BEFORE INSERT ON notification_settings
            WHEN EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id AND erased) BEGIN SELECT RAISE(ABORT, 'user_erased'); END
            """,
            """
            CREATE TRIGGER settings_of_the_living_changed BEFORE UPDATE ON notification_settings
            WHEN EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id AND erased) BEGIN SELECT RAISE(ABORT, 'user_erased'); END
            """,
            """
            CREATE TRIGGER members_of_the_living BEFORE INSERT ON members
            WHEN NEW.removed_seq IS NULL AND EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id AND erased)
            BEGIN SELECT RAISE(ABORT, 'user_erased'); END
            """,
            """
            CREATE TRIGGER members_of_the_living_again BEFORE UPDATE ON members
            WHEN NEW.removed_seq IS NULL AND OLD.removed_seq IS NOT NULL
                AND EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id AND erased)
            BEGIN SELECT RAISE(ABORT, 'user_erased'); END
            """,
        ],
        [
            // A connected device holds back a push only for what it confirmed taking in (docs/behaviour.md, rule
            // 8): an alert it would have held back waits out the grace period and goes unless a receipt covers it,
            // the device's own (`device`) or any of the member's (`member`: they were in the foreground).
            "ALTER TABLE push_jobs ADD COLUMN covered_by TEXT CHECK (covered_by IN ('member', 'device'))",
            // How far each device (the stream's `device`, '' for a stream without one) confirmed taking messages in.
            """
            CREATE TABLE push_receipts (
                user_id TEXT NOT NULL,
                device TEXT NOT NULL,
                through INTEGER NOT NULL,
                PRIMARY KEY (user_id, device)
            )
            """,
            // The alerts pushed to a device that has a stream, until it confirms past them: a catch-up tells the
            // device which of its messages it was pushed, so it notifies them once.
            """
            CREATE TABLE push_sent (
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                sent_at REAL NOT NULL,
                PRIMARY KEY (user_id, device_id, seq)
            )
            """,
        ],
        [
            // Private pushes (docs/push.md): a device's key (its SHA-256: the key itself is never stored) reads the
            // messages whose alerts were leased to it, and nothing else.
            "ALTER TABLE devices ADD COLUMN key_digest TEXT",
            "CREATE UNIQUE INDEX devices_by_key ON devices(key_digest) WHERE key_digest IS NOT NULL",
            """
            CREATE TABLE push_grants (
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                granted_at REAL NOT NULL,
                PRIMARY KEY (user_id, device_id, seq)
            )
            """,
        ],
        [
            // Edits and deletions (docs/behaviour.md §6): how many times a message was edited, whether it is a
            // tombstone, and for an edit's or a deletion's own entry the id of the message it is about.
            "ALTER TABLE messages ADD COLUMN edits INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE messages ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE messages ADD COLUMN about TEXT",
            "CREATE INDEX messages_about ON messages(conversation_id, about) WHERE about IS NOT NULL",
            // Every alert leased to a device is remembered (as a grant, for 7 days) with the identifier it is shown
            // under, so that an edit or a deletion of its message follows it there, and only there.
            "ALTER TABLE push_grants ADD COLUMN shown_as TEXT",
            "CREATE INDEX push_grants_by_seq ON push_grants(seq)",
            // Follow-ups ('follow': an edited or deleted message's notification changed on the devices that show
            // it). SQLite cannot change a CHECK, so the outbox is made again with what it holds.
            """
            CREATE TABLE push_jobs_next (
                id INTEGER PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('alert', 'clear', 'receipt', 'follow')),
                job_key TEXT NOT NULL,
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                content TEXT NOT NULL,
                ticket TEXT,
                created_at REAL NOT NULL,
                due_at REAL NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                leased INTEGER NOT NULL DEFAULT 0,
                covered_by TEXT CHECK (covered_by IN ('member', 'device')),
                UNIQUE (kind, job_key, user_id, device_id)
            )
            """,
            """
            INSERT INTO push_jobs_next (id, kind, job_key, user_id, device_id, conversation_id, seq, content, ticket,
                created_at, due_at, attempts, leased, covered_by)
            SELECT id, kind, job_key, user_id, device_id, conversation_id, seq, content, ticket, created_at, due_at,
                attempts, leased, covered_by FROM push_jobs
            """,
            "DROP TABLE push_jobs",
            "ALTER TABLE push_jobs_next RENAME TO push_jobs",
            "CREATE INDEX push_jobs_due ON push_jobs(leased, due_at)",
            "CREATE INDEX push_jobs_by_device ON push_jobs(user_id, device_id)",
        ],
        [
            // What a device last reported of its system's permission, and when it was last seen (registered or
            // reported): the troubleshooter reads them.
            "ALTER TABLE devices ADD COLUMN permission TEXT",
            "ALTER TABLE devices ADD COLUMN seen_at REAL",
            "UPDATE devices SET seen_at = updated_at",
            // The delivery trail (docs/push.md, "Why a phone did not ring"): what became of each message's pushes,
            // member by member and device by device ('' for the member), kept HERALD_TRAIL_HOURS.
            """
            CREATE TABLE delivery_trail (
                id INTEGER PRIMARY KEY,
                at REAL NOT NULL,
                conversation_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                step TEXT NOT NULL,
                reasons TEXT,
                detail TEXT
            )
            """,
            "CREATE INDEX delivery_trail_by_seq ON delivery_trail(seq)",
            "CREATE INDEX delivery_trail_by_conversation ON delivery_trail(conversation_id)",
            "CREATE INDEX delivery_trail_by_user ON delivery_trail(user_id, at)",
            "CREATE INDEX delivery_trail_by_time ON delivery_trail(at)",
        ],
        [
            // A device's push keys (`{"p256dh", "auth"}`): with HERALD_PUSH_CONTENT=encrypted its pushes are
            // encrypted to them.
            "ALTER TABLE devices ADD COLUMN push_keys TEXT",
        ],
        [
            // A message moves its conversation, not each member's row (`moveConversation`): a group of ten was ten
            // index writes per message. A member's `activity` now moves only when they join (in a database from
            // before, it holds the last message's seq as well, which comes to the same place); the list orders by
            // the later of the two (`ListPlan`), walking `conversations_by_activity` for a member of most
            // conversations.
            "ALTER TABLE conversations ADD COLUMN activity INTEGER NOT NULL DEFAULT 0",
            """
            UPDATE conversations SET activity = coalesce(
                (SELECT max(seq) FROM messages WHERE conversation_id = conversations.id AND event IS NULL), 0)
            """,
            "DROP TRIGGER messages_move_members",
            moveConversation,
            "CREATE INDEX conversations_by_activity ON conversations(activity, id)",
        ],
        [
            // Retention walks the log in seq order (a message's time is the store's clock when it commits, so the
            // two orders agree): an index of times was one more page for every commit to write.
            "DROP INDEX messages_by_time",
        ],
    ]

    /// Applies the steps the database has not had, up to `last` (all of them unless a test stops earlier).
    package static func migrate(_ connection: SQLiteHandle, logger: Logger, through last: Int = steps.count) throws {
        let version = try connection.query("PRAGMA user_version", keep: false).first?.column("user_version")?.integer ?? 0
        guard version < last else { return }
        for (index, statements) in steps.enumerated().prefix(last).dropFirst(version) {
            try connection.query("BEGIN IMMEDIATE")
            do {
                for statement in statements {
                    try connection.query(statement, keep: false)
                }
                try connection.query("PRAGMA user_version = \(index + 1)", keep: false)
                try connection.query("COMMIT")
            } catch {
                _ = try? connection.query("ROLLBACK")
                throw error
            }
            logger.debug("database migration applied", metadata: ["version": "\(index + 1)"])
        }
        logger.info("database migrated", metadata: ["from": "\(version)", "to": "\(min(last, steps.count))"])
    }
}
