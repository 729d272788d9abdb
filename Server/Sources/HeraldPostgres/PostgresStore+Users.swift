import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import PostgresNIO

/// The users on PostgreSQL.
extension PostgresStore {
    public func upsertUser(_ person: Person, nameIsStandIn: Bool) async throws -> Person {
        // An erased user's row is left as it is, and says so by returning nothing. A name that only stands in is
        // taken when the user has none.
        let rows = try await database.query(
            """
            INSERT INTO users (id, name, picture, known) VALUES (\(person.id), \(person.displayName), \(person.avatarURL?.absoluteString), true)
            ON CONFLICT (id) DO UPDATE SET
                name = CASE WHEN excluded.name = '' OR (\(nameIsStandIn) AND users.name <> '') THEN users.name ELSE excluded.name END,
                picture = CASE WHEN excluded.name = '' OR \(nameIsStandIn) THEN coalesce(excluded.picture, users.picture) ELSE excluded.picture END,
                known = true
            WHERE NOT users.erased
            RETURNING id, name, picture, known
            """, logger: logger)
        guard let stored = try rows.first.flatMap({ try Rows.person($0.makeRandomAccess()) }) else { throw StoreError.userErased }
        return stored
    }

    public func user(id: String) async throws -> Person? {
        let rows = try await database.query(
            "SELECT id, name, picture, known FROM users WHERE id = \(id) AND known", logger: logger)
        return try rows.first.flatMap { try Rows.person($0.makeRandomAccess()) }
    }

    public func eraseUser(_ id: String) async throws -> ErasedUser {
        let erased = try await appending { connection, last in
            let found = try await connection.query(
                "SELECT id FROM users WHERE id = \(id) AND id <> '' FOR UPDATE", logger: self.logger).collect()
            guard !found.isEmpty else { throw StoreError.userNotFound }
            try await connection.query(
                "UPDATE users SET name = \(ErasedUser.displayName), picture = NULL, known = false, erased = true WHERE id = \(id)",
                logger: self.logger)
            let conversations = try await connection.query(
                """
                SELECT m.conversation_id FROM members m JOIN conversations c ON c.id = m.conversation_id
                WHERE m.user_id = \(id) AND m.removed_seq IS NULL AND NOT c.deleted ORDER BY m.conversation_id
                """, logger: self.logger).collect().map { try $0.decode(String.self) }
            var entries: [IncomingMessage] = []
            var lastSeq = last
            for conversationID in conversations {
                var leave = PostgresGroupChange(
                    conversationID: conversationID, authority: .erasure(id), connection: connection, lastSeq: lastSeq,
                    at: self.clock.now(), logger: self.logger)
                entries += try await leave.apply(.remove(id), memberLimit: .max).entries
                lastSeq = leave.lastSeq
            }
            try await connection.query("DELETE FROM devices WHERE user_id = \(id)", logger: self.logger)
            try await connection.query("DELETE FROM push_jobs WHERE user_id = \(id)", logger: self.logger)
            try await connection.query("DELETE FROM push_shown WHERE user_id = \(id)", logger: self.logger)
            try await connection.query("DELETE FROM push_sent WHERE user_id = \(id)", logger: self.logger)
            try await connection.query("DELETE FROM push_grants WHERE user_id = \(id)", logger: self.logger)
            try await connection.query("DELETE FROM push_receipts WHERE user_id = \(id)", logger: self.logger)
            try await connection.query("DELETE FROM delivery_trail WHERE user_id = \(id)", logger: self.logger)
            try await connection.query("DELETE FROM unread_reminders WHERE user_id = \(id)", logger: self.logger)
            try await connection.query(
                "UPDATE members SET read_seq = 0, level = NULL, level_until = NULL, owner = false WHERE user_id = \(id)",
                logger: self.logger)
            try await connection.query("DELETE FROM notification_settings WHERE user_id = \(id)", logger: self.logger)
            // Numbered, and told to every node at the commit (they drop the user and say so).
            let erasure = try await connection.query(
                "INSERT INTO erasures (user_id) VALUES (\(id)) RETURNING seq", logger: self.logger).collect()
            let seq = try erasure.first.map { try $0.decode(Int64.self) } ?? 0
            try await connection.query(
                "SELECT pg_notify('herald_entries', \(Erasure(seq: seq, userID: id).payload))", logger: self.logger)
            return (entries, (ErasedUser(entries: entries), seq))
        }
        await awaitErasure(erased.1)
        return erased.0
    }

    public func unknownUsers(among ids: [String]) async throws -> [String] {
        guard !ids.isEmpty else { return [] }
        let rows = try await database.query(
            "SELECT id FROM users WHERE known AND id = ANY(\(Array(Set(ids)))::text[])", logger: logger)
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
                                           WHERE a.user_id = \(search.userID) AND a.removed_seq IS NULL
                                             AND b.removed_seq IS NULL))
              AND (lower(u.name) LIKE \(pattern) ESCAPE '\\' OR u.id LIKE \(idPattern) ESCAPE '\\')
            ORDER BY u.id LIMIT \(search.limit)
            """, logger: logger)
        // Every row is a known user, a nameless one too (clients say "Someone").
        return try rows.map { row in
            let (id, name, picture) = try row.decode((String, String, String?).self)
            return Person(id: id, displayName: name, avatarURL: picture.flatMap(URL.init(string:)))
        }
    }
}
