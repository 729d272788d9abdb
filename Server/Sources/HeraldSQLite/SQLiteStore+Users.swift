import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords

/// The users on SQLite.
extension SQLiteStore {
    public func upsertUser(_ person: Person, nameIsStandIn: Bool) async throws -> Person {
        try await database.perform { connection in
            // An erased user's row is left as it is, and says so by returning nothing. A name that only stands in
            // (?4) is taken when the user has none.
            let rows = try connection.query(
                """
                INSERT INTO users (id, name, picture, known) VALUES (?1, ?2, ?3, 1)
                ON CONFLICT(id) DO UPDATE SET
                    name = CASE WHEN excluded.name = '' OR (?4 AND users.name <> '') THEN users.name ELSE excluded.name END,
                    picture = CASE WHEN excluded.name = '' OR ?4 THEN coalesce(excluded.picture, users.picture) ELSE excluded.picture END,
                    known = 1
                WHERE users.erased = 0
                RETURNING id, name, picture, known
                """,
                [.text(person.id), .text(person.displayName), .optionalText(person.avatarURL?.absoluteString), .integer(nameIsStandIn ? 1 : 0)]
            )
            guard let stored = try rows.first.flatMap(Rows.person) else { throw StoreError.userErased }
            return stored
        }
    }

    public func user(id: String) async throws -> Person? {
        try await database.perform { connection in
            try connection.query(
                "SELECT id, name, picture, known FROM users WHERE id = ?1 AND known = 1", [.text(id)]
            ).first.flatMap(Rows.person)
        }
    }

    public func eraseUser(_ id: String) async throws -> ErasedUser {
        let erased = try await appending { connection in
            let found = try connection.query("SELECT erased FROM users WHERE id = ?1 AND id <> ''", [.text(id)])
            guard !found.isEmpty else { throw StoreError.userNotFound }
            try connection.query(
                "UPDATE users SET name = ?2, picture = NULL, known = 0, erased = 1 WHERE id = ?1",
                [.text(id), .text(ErasedUser.displayName)])
            let conversations = try connection.query(
                """
                SELECT m.conversation_id FROM members m JOIN conversations c ON c.id = m.conversation_id
                WHERE m.user_id = ?1 AND m.removed_seq IS NULL AND c.deleted = 0 ORDER BY m.conversation_id
                """, [.text(id)]
            ).compactMap { $0.column("conversation_id")?.string }
            var entries: [IncomingMessage] = []
            for conversationID in conversations {
                var leave = GroupChange(
                    conversationID: conversationID, authority: .erasure(id), at: self.clock.now(), on: connection)
                entries += try leave.apply(.remove(id), memberLimit: .max).entries
            }
            try connection.query("DELETE FROM devices WHERE user_id = ?1", [.text(id)])
            try connection.query("DELETE FROM push_jobs WHERE user_id = ?1", [.text(id)])
            try connection.query("DELETE FROM push_shown WHERE user_id = ?1", [.text(id)])
            try connection.query("DELETE FROM push_sent WHERE user_id = ?1", [.text(id)])
            try connection.query("DELETE FROM push_grants WHERE user_id = ?1", [.text(id)])
            try connection.query("DELETE FROM push_receipts WHERE user_id = ?1", [.text(id)])
            try connection.query("DELETE FROM delivery_trail WHERE user_id = ?1", [.text(id)])
            try connection.query("DELETE FROM unread_reminders WHERE user_id = ?1", [.text(id)])
            try connection.query(
                "UPDATE members SET read_seq = 0, level = NULL, level_until = NULL, owner = 0 WHERE user_id = ?1", [.text(id)])
            try connection.query("DELETE FROM notification_settings WHERE user_id = ?1", [.text(id)])
            return (entries, ErasedUser(entries: entries))
        }
        // Their devices went with this commit, and none can be added again (`devices_of_the_living`).
        deviceOwners.lost([id])
        return erased
    }

    public func unknownUsers(among ids: [String]) async throws -> [String] {
        guard !ids.isEmpty else { return [] }
        let list = SQLiteHandle.padded(HeraldID.sorted(Set(ids)).map { [.text($0)] })
        return try await database.perform { connection in
            let known = try connection.query(
                "SELECT id FROM users WHERE known = 1 AND id IN (\(list.placeholders))", list.binds
            ).compactMap { $0.column("id")?.string }
            return HeraldID.sorted(Set(ids).subtracting(known))
        }
    }

    public func findUsers(_ search: UserSearch) async throws -> [Person] {
        let pattern = "%" + UserSearch.escapedForLike(search.query.lowercased()) + "%"
        let idPattern = UserSearch.escapedForLike(search.query) + "%"
        // Everyone known, or the people the caller shares a conversation with now; never the caller.
        let scope = search.scope == .everyone ? "" : """
            AND u.id IN (SELECT b.user_id FROM members a JOIN members b ON b.conversation_id = a.conversation_id
                         WHERE a.user_id = ?1 AND a.removed_seq IS NULL AND b.removed_seq IS NULL)
            """
        return try await database.perform { connection in
            try connection.query(
                """
                SELECT u.id, u.name, u.picture, u.known FROM users u
                WHERE u.known = 1 AND u.id <> ?1 AND u.id > ?2 \(scope)
                  AND (lower(u.name) LIKE ?3 ESCAPE '\\' OR u.id LIKE ?4 ESCAPE '\\')
                ORDER BY u.id LIMIT ?5
                """,
                [.text(search.userID), .text(search.after ?? ""), .text(pattern), .text(idPattern), .integer(search.limit)]
            ).compactMap(Rows.person)
        }
    }
}
