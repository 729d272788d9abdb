import HeraldRecords
import Logging
import PostgresNIO

/// The PostgreSQL schema, as numbered steps; `herald_schema` records how many a database has. Nodes that start
/// together migrate one at a time (a transaction-scoped advisory lock), so each step runs once.
///
/// Ids are `text COLLATE "C"`: compared and ordered byte for byte, as SQLite does and the API promises.
package enum PostgresMigrations {
    /// The advisory lock the migrations take (any fixed number: "herald" in ASCII).
    package static let lock: Int64 = 0x68_65_72_61_6C_64

    package static let steps: [[String]] = [
        [
            """
            CREATE TABLE users (
                id text COLLATE "C" PRIMARY KEY,
                name text NOT NULL DEFAULT '',
                picture text
            )
            """,
            """
            CREATE TABLE conversations (
                id text COLLATE "C" PRIMARY KEY,
                kind text NOT NULL CHECK (kind IN ('direct', 'group')),
                title text,
                direct_key text COLLATE "C" UNIQUE,
                created_at double precision NOT NULL
            )
            """,
            """
            CREATE TABLE members (
                conversation_id text COLLATE "C" NOT NULL REFERENCES conversations(id),
                user_id text COLLATE "C" NOT NULL REFERENCES users(id),
                read_seq bigint NOT NULL DEFAULT 0,
                muted boolean NOT NULL DEFAULT false,
                activity bigint NOT NULL DEFAULT 0,
                PRIMARY KEY (conversation_id, user_id)
            )
            """,
            "CREATE INDEX members_by_activity ON members (user_id, activity, conversation_id)",
            "CREATE INDEX members_muted ON members (user_id, conversation_id) WHERE muted",
            // `seq` is given by the store from `message_seq` (below), not by a sequence: see PostgresStore.
            """
            CREATE TABLE messages (
                seq bigint PRIMARY KEY,
                id text COLLATE "C" NOT NULL UNIQUE,
                conversation_id text COLLATE "C" NOT NULL REFERENCES conversations(id),
                sender_id text COLLATE "C" NOT NULL REFERENCES users(id),
                text text,
                image_url text,
                created_at double precision NOT NULL
            )
            """,
            "CREATE INDEX messages_by_conversation ON messages (conversation_id, seq, sender_id)",
            // The last seq given. Every post updates this one row inside its transaction, so posts commit one after
            // another in seq order, on every node: a reader that saw seq n has seen everything before it.
            "CREATE TABLE message_seq (id integer PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL)",
            "INSERT INTO message_seq (id, seq) VALUES (1, 0)",
            // Storing a message moves its conversation to the top of every member's list and the sender's read
            // marker to it.
            """
            CREATE FUNCTION herald_messages_move_members() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE members SET activity = NEW.seq,
                    read_seq = CASE WHEN user_id = NEW.sender_id THEN greatest(read_seq, NEW.seq) ELSE read_seq END
                WHERE conversation_id = NEW.conversation_id;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER messages_move_members AFTER INSERT ON messages
                FOR EACH ROW EXECUTE FUNCTION herald_messages_move_members()
            """,
            """
            CREATE TABLE devices (
                user_id text COLLATE "C" NOT NULL REFERENCES users(id),
                id text COLLATE "C" NOT NULL,
                platform text NOT NULL,
                token text NOT NULL,
                updated_at double precision NOT NULL,
                PRIMARY KEY (user_id, id)
            )
            """,
            "CREATE UNIQUE INDEX devices_by_token ON devices (platform, token)",
            // The push outbox (docs/push.md): a job is leased by one node until `leased_until`; a node that died
            // leaves its leases to expire, and another takes the jobs over then.
            """
            CREATE TABLE push_jobs (
                id bigserial PRIMARY KEY,
                kind text NOT NULL CHECK (kind IN ('alert', 'clear', 'receipt')),
                job_key text COLLATE "C" NOT NULL,
                user_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C" NOT NULL,
                conversation_id text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                content text NOT NULL,
                ticket text,
                created_at double precision NOT NULL,
                due_at double precision NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                leased_until double precision,
                UNIQUE (kind, job_key, user_id, device_id)
            )
            """,
            "CREATE INDEX push_jobs_due ON push_jobs (due_at)",
            "CREATE INDEX push_jobs_by_device ON push_jobs (user_id, device_id)",
            """
            CREATE TABLE push_shown (
                user_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C" NOT NULL,
                conversation_id text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                PRIMARY KEY (user_id, conversation_id, device_id)
            )
            """,
            // What every node must share and SQLite keeps in files beside the database: the token secret, the
            // VAPID key.
            "CREATE TABLE herald_settings (name text PRIMARY KEY, value text NOT NULL)",
        ],
        [
            // Presence across nodes: each node's live connections (foreground or not, and which device), counted
            // only while the node's heartbeat is recent, so a node that died stops counting by itself.
            "CREATE TABLE nodes (id text PRIMARY KEY, seen_at timestamptz NOT NULL)",
            """
            CREATE TABLE presence (
                node_id text NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
                connection integer NOT NULL,
                user_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C",
                foreground boolean NOT NULL,
                PRIMARY KEY (node_id, connection)
            )
            """,
            "CREATE INDEX presence_by_user ON presence (user_id)",
        ],
        [
            // Message ids are scoped to their conversation: an id used in a conversation one cannot see is neither
            // revealed (409) nor taken from anyone.
            "ALTER TABLE messages DROP CONSTRAINT messages_id_key",
            "ALTER TABLE messages ADD CONSTRAINT messages_conversation_id_id_key UNIQUE (conversation_id, id)",
            // An alert job is unique by its message's seq (an id names a message only within its conversation).
            "UPDATE push_jobs SET job_key = seq::text WHERE kind = 'alert'",
        ],
        [
            // A user is known once they signed in (or the app's backend made them); a member added before that is a
            // row with an id only. Only known users may be added to a conversation, or found.
            "ALTER TABLE users ADD COLUMN known boolean NOT NULL DEFAULT false",
            "UPDATE users SET known = true WHERE name <> ''",
            "CREATE INDEX users_known ON users (known, id)",
        ],
        [
            // The event log: an entry is a message, or an event (its JSON in `event`: members added or removed, a
            // new title, ...) with a seq of the same sequence, so members learn both in one order.
            "ALTER TABLE messages ADD COLUMN event text",
            // Members change: each row says from which seq the member receives entries (`added_seq`), until which
            // (`removed_seq`, NULL while a member), from which they may read the past (`visible_from`), and whether
            // they own the group. Every member of an existing group owns it: nobody knows who made it.
            "ALTER TABLE members ADD COLUMN added_seq bigint NOT NULL DEFAULT 0",
            "ALTER TABLE members ADD COLUMN removed_seq bigint",
            "ALTER TABLE members ADD COLUMN visible_from bigint NOT NULL DEFAULT 0",
            "ALTER TABLE members ADD COLUMN owner boolean NOT NULL DEFAULT false",
            "UPDATE members SET owner = true WHERE conversation_id IN (SELECT id FROM conversations WHERE kind = 'group')",
            // A deleted group keeps its row and its members' (so their devices learn of it on resume); its
            // messages go.
            "ALTER TABLE conversations ADD COLUMN deleted boolean NOT NULL DEFAULT false",
            "ALTER TABLE conversations ADD COLUMN title_seq bigint NOT NULL DEFAULT 0",
            // The push decider's place in the log, shared by the nodes and kept across restarts. It starts at the
            // log's end: what was stored before had its decisions.
            "CREATE TABLE log_cursors (name text PRIMARY KEY, seq bigint NOT NULL)",
            "INSERT INTO log_cursors (name, seq) SELECT 'push', seq FROM message_seq WHERE id = 1",
            // Events move nothing by themselves (the change that makes one moves what it must); former members
            // stay where they were.
            """
            CREATE OR REPLACE FUNCTION herald_messages_move_members() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE members SET activity = NEW.seq,
                    read_seq = CASE WHEN user_id = NEW.sender_id THEN greatest(read_seq, NEW.seq) ELSE read_seq END
                WHERE conversation_id = NEW.conversation_id AND removed_seq IS NULL;
                RETURN NULL;
            END
            $$
            """,
            "DROP TRIGGER messages_move_members ON messages",
            """
            CREATE TRIGGER messages_move_members AFTER INSERT ON messages
                FOR EACH ROW WHEN (NEW.event IS NULL) EXECUTE FUNCTION herald_messages_move_members()
            """,
        ],
        [
            // The app's backend: messages that notify nobody, system messages (their sender is the user row with
            // the empty id, which no token can name), and erased users, whose id never comes back.
            "ALTER TABLE messages ADD COLUMN silent boolean NOT NULL DEFAULT false",
            "ALTER TABLE users ADD COLUMN erased boolean NOT NULL DEFAULT false",
            "INSERT INTO users (id, name, known) VALUES ('', '', false) ON CONFLICT DO NOTHING",
        ],
        [
            // The webhook outbox: an event for the app's backend from when it is written (with what it tells) until
            // the backend answers 2xx. Events of one conversation (or, without one, of one user: `ordering_key`)
            // go out one at a time in (seq, rank, id) order: an entry's own event (rank 0) before the others at its
            // seq. A node sending one holds it until `leased_until`.
            """
            CREATE TABLE webhook_jobs (
                id bigserial PRIMARY KEY,
                type text NOT NULL,
                ordering_key text COLLATE "C" NOT NULL,
                conversation_id text COLLATE "C",
                seq bigint NOT NULL,
                rank integer NOT NULL,
                data text NOT NULL,
                created_at double precision NOT NULL,
                due_at double precision NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                leased_until double precision NOT NULL DEFAULT 0
            )
            """,
            "CREATE INDEX webhook_jobs_order ON webhook_jobs (ordering_key, seq, rank, id)",
            """
            CREATE TABLE unread_reminders (
                user_id text COLLATE "C" NOT NULL,
                conversation_id text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                created_at double precision NOT NULL,
                due_at double precision NOT NULL,
                PRIMARY KEY (user_id, conversation_id)
            )
            """,
            "CREATE INDEX unread_reminders_due ON unread_reminders (due_at)",
            "INSERT INTO log_cursors (name, seq) SELECT 'webhook', seq FROM message_seq WHERE id = 1",
        ],
        [
            // Retention's horizon: the highest seq it deleted.
            "INSERT INTO log_cursors (name, seq) VALUES ('horizon', 0)",
            "CREATE INDEX messages_by_time ON messages (created_at)",
        ],
        [
            // Who hears what: a member's own level for a conversation (NULL: the default), until an instant (NULL:
            // for ever); a mute was `nothing` for ever. A user's settings (JSON in `body`, the two the badge's SQL
            // reads beside it). A message's mentions (JSON `{"ids", "all"}`, NULL for none).
            "ALTER TABLE members ADD COLUMN level text",
            "ALTER TABLE members ADD COLUMN level_until double precision",
            "UPDATE members SET level = 'nothing' WHERE muted",
            "DROP INDEX members_muted",
            "ALTER TABLE members DROP COLUMN muted",
            "CREATE INDEX members_leveled ON members (user_id, conversation_id) WHERE level IS NOT NULL",
            """
            CREATE TABLE notification_settings (
                user_id text COLLATE "C" PRIMARY KEY,
                default_level text NOT NULL DEFAULT 'all',
                badge_counts_muted boolean NOT NULL DEFAULT false,
                body text NOT NULL
            )
            """,
            "ALTER TABLE messages ADD COLUMN mentions text",
        ],
        [
            // Erasure holds on every node: each erasure is numbered and told to the nodes, which drop the user and
            // say how far they have (the erasing node waits for them); and nothing of an erased user's is written
            // again, whatever a node still believes: their devices, settings and memberships are refused by the
            // database itself. The user's row is locked (FOR SHARE) so an erasure in progress is waited for.
            "CREATE TABLE erasures (seq bigserial PRIMARY KEY, user_id text COLLATE \"C\" NOT NULL)",
            "ALTER TABLE nodes ADD COLUMN erasures_through bigint NOT NULL DEFAULT 0",
            """
            CREATE FUNCTION herald_refuse_erased() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE gone boolean;
            BEGIN
                SELECT erased INTO gone FROM users WHERE id = (to_jsonb(NEW) ->> TG_ARGV[0]) FOR SHARE;
                IF gone THEN RAISE EXCEPTION 'user_erased' USING ERRCODE = 'HE001'; END IF;
                RETURN NEW;
            END $$
            """,
            "CREATE TRIGGER devices_of_the_living BEFORE INSERT OR UPDATE ON devices FOR EACH ROW EXECUTE FUNCTION herald_refuse_erased('user_id')",
            "CREATE TRIGGER settings_of_the_living BEFORE INSERT OR UPDATE ON notification_settings FOR EACH ROW EXECUTE FUNCTION herald_refuse_erased('user_id')",
            """
            CREATE TRIGGER members_of_the_living BEFORE INSERT ON members FOR EACH ROW
            WHEN (NEW.removed_seq IS NULL) EXECUTE FUNCTION herald_refuse_erased('user_id')
            """,
            """
            CREATE TRIGGER members_of_the_living_again BEFORE UPDATE ON members FOR EACH ROW
            WHEN (NEW.removed_seq IS NULL AND OLD.removed_seq IS NOT NULL) EXECUTE FUNCTION herald_refuse_erased('user_id')
            """,
        ],
        [
            // A connected device holds back a push only for what it confirmed taking in (docs/behaviour.md, rule
            // 8): an alert it would have held back waits out the grace period and goes unless a receipt covers it,
            // the device's own (`device`) or any of the member's (`member`: they were in the foreground).
            "ALTER TABLE push_jobs ADD COLUMN covered_by text CHECK (covered_by IN ('member', 'device'))",
            // How far each device (the stream's `device`, '' for a stream without one) confirmed taking messages in.
            """
            CREATE TABLE push_receipts (
                user_id text COLLATE "C" NOT NULL,
                device text COLLATE "C" NOT NULL,
                through bigint NOT NULL,
                PRIMARY KEY (user_id, device)
            )
            """,
            // The alerts pushed to a device that has a stream, until it confirms past them: a catch-up tells the
            // device which of its messages it was pushed, so it notifies them once.
            """
            CREATE TABLE push_sent (
                user_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                sent_at double precision NOT NULL,
                PRIMARY KEY (user_id, device_id, seq)
            )
            """,
        ],
        [
            // Private pushes (docs/push.md): a device's key (its SHA-256: the key itself is never stored) reads the
            // messages whose alerts were leased to it, and nothing else.
            "ALTER TABLE devices ADD COLUMN key_digest text COLLATE \"C\"",
            "CREATE UNIQUE INDEX devices_by_key ON devices (key_digest) WHERE key_digest IS NOT NULL",
            """
            CREATE TABLE push_grants (
                user_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                granted_at double precision NOT NULL,
                PRIMARY KEY (user_id, device_id, seq)
            )
            """,
        ],
        [
            // Edits and deletions (docs/behaviour.md §6): how many times a message was edited, whether it is a
            // tombstone, and for an edit's or a deletion's own entry the id of the message it is about.
            "ALTER TABLE messages ADD COLUMN edits bigint NOT NULL DEFAULT 0",
            "ALTER TABLE messages ADD COLUMN deleted boolean NOT NULL DEFAULT false",
            "ALTER TABLE messages ADD COLUMN about text COLLATE \"C\"",
            "CREATE INDEX messages_about ON messages (conversation_id, about) WHERE about IS NOT NULL",
            // Every alert leased to a device is remembered (as a grant, for 7 days) with the identifier it is shown
            // under, so that an edit or a deletion of its message follows it there, and only there.
            "ALTER TABLE push_grants ADD COLUMN shown_as text COLLATE \"C\"",
            "CREATE INDEX push_grants_by_seq ON push_grants (seq)",
            // Follow-ups ('follow': an edited or deleted message's notification changed on the devices that show it).
            "ALTER TABLE push_jobs DROP CONSTRAINT push_jobs_kind_check",
            "ALTER TABLE push_jobs ADD CONSTRAINT push_jobs_kind_check CHECK (kind IN ('alert', 'clear', 'receipt', 'follow'))",
        ],
        [
            // What a device last reported of its system's permission, and when it was last seen (registered or
            // reported): the troubleshooter reads them.
            "ALTER TABLE devices ADD COLUMN permission text",
            "ALTER TABLE devices ADD COLUMN seen_at double precision",
            "UPDATE devices SET seen_at = updated_at",
            // The delivery trail (docs/push.md, "Why a phone did not ring"): what became of each message's pushes,
            // member by member and device by device ('' for the member), kept HERALD_TRAIL_HOURS.
            """
            CREATE TABLE delivery_trail (
                id bigserial PRIMARY KEY,
                at double precision NOT NULL,
                conversation_id text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                user_id text COLLATE "C" NOT NULL,
                device_id text COLLATE "C" NOT NULL,
                step text NOT NULL,
                reasons text,
                detail text
            )
            """,
            "CREATE INDEX delivery_trail_by_seq ON delivery_trail (seq)",
            "CREATE INDEX delivery_trail_by_conversation ON delivery_trail (conversation_id)",
            "CREATE INDEX delivery_trail_by_user ON delivery_trail (user_id, at)",
            "CREATE INDEX delivery_trail_by_time ON delivery_trail (at)",
        ],
        [
            // A device's push keys (`{"p256dh", "auth"}`): with HERALD_PUSH_CONTENT=encrypted its pushes are
            // encrypted to them.
            "ALTER TABLE devices ADD COLUMN push_keys text",
        ],
        [
            // A message moves its conversation, not each member's row: a group of ten was ten index writes per
            // message. A member's `activity` now moves only when they join (in a database from before, it holds
            // the last message's seq as well, which comes to the same place); the list orders by the later of the
            // two (`ListPlan`), walking `conversations_by_activity` for a member of most conversations. The trigger
            // keeps its name. A conversation's row is written only when its activity moves on (not, say, for each
            // message `herald database copy` brings after its conversation).
            "ALTER TABLE conversations ADD COLUMN activity bigint NOT NULL DEFAULT 0",
            """
            UPDATE conversations SET activity = coalesce(
                (SELECT max(seq) FROM messages WHERE conversation_id = conversations.id AND event IS NULL), 0)
            """,
            """
            CREATE OR REPLACE FUNCTION herald_messages_move_members() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE conversations SET activity = NEW.seq WHERE id = NEW.conversation_id AND activity < NEW.seq;
                UPDATE members SET read_seq = greatest(read_seq, NEW.seq)
                WHERE conversation_id = NEW.conversation_id AND user_id = NEW.sender_id AND removed_seq IS NULL;
                RETURN NULL;
            END
            $$
            """,
            "CREATE INDEX conversations_by_activity ON conversations (activity, id)",
        ],
    ]

    /// Applies the steps the database has not had, up to `last` (all of them unless a test stops earlier).
    package static func migrate(_ client: PostgresClient, logger: Logger, through last: Int = steps.count) async throws {
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            do {
                try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: logger)
                try await connection.query("CREATE TABLE IF NOT EXISTS herald_schema (version integer NOT NULL)", logger: logger)
                let rows = try await connection.query("SELECT version FROM herald_schema", logger: logger).collect()
                let version = try rows.first.map { try $0.decode(Int.self) } ?? 0
                if rows.isEmpty { try await connection.query("INSERT INTO herald_schema (version) VALUES (0)", logger: logger) }
                for (index, statements) in steps.enumerated().prefix(last).dropFirst(version) {
                    for statement in statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query("UPDATE herald_schema SET version = \(index + 1)", logger: logger)
                    logger.debug("database migration applied", metadata: ["version": "\(index + 1)"])
                }
                try await connection.query("COMMIT", logger: logger)
                let applied = min(last, steps.count)
                if applied > version {
                    logger.info("database migrated", metadata: ["from": "\(version)", "to": "\(applied)"])
                }
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }
}
