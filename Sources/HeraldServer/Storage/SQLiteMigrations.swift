import Logging
import SQLiteNIO

/// The schema, as numbered steps; a database records how many it has applied in `PRAGMA user_version`.
enum SQLiteMigrations {
    static let steps: [[String]] = [
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
    ]

    static func migrate(_ connection: SQLiteConnection, logger: Logger) async throws {
        let version = try await connection.query("PRAGMA user_version", []).first?.column("user_version")?.integer ?? 0
        guard version < steps.count else { return }
        for (index, statements) in steps.enumerated().dropFirst(version) {
            _ = try await connection.query("BEGIN IMMEDIATE", [])
            do {
                for statement in statements {
                    _ = try await connection.query(statement, [])
                }
                _ = try await connection.query("PRAGMA user_version = \(index + 1)", [])
                _ = try await connection.query("COMMIT", [])
            } catch {
                _ = try? await connection.query("ROLLBACK", [])
                throw error
            }
            logger.info("database migrated", metadata: ["version": "\(index + 1)"])
        }
    }
}
