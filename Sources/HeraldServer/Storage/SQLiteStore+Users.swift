import Foundation
import HeraldCore
import HeraldProtocol

/// The users on SQLite.
extension SQLiteStore {
    public func upsertUser(_ person: Person) async throws {
        try await database.perform { connection in
            _ = try connection.query(
                """
                INSERT INTO users (id, name, picture, known) VALUES (?1, ?2, ?3, 1)
                ON CONFLICT(id) DO UPDATE SET name = excluded.name, picture = excluded.picture, known = 1
                """,
                [.text(person.id), .text(person.displayName), .optionalText(person.avatarURL?.absoluteString)]
            )
        }
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
                SELECT u.id, u.name, u.picture FROM users u
                WHERE u.known = 1 AND u.id <> ?1 AND u.id > ?2 \(scope)
                  AND (lower(u.name) LIKE ?3 ESCAPE '\\' OR u.id LIKE ?4 ESCAPE '\\')
                ORDER BY u.id LIMIT ?5
                """,
                [.text(search.userID), .text(search.after ?? ""), .text(pattern), .text(idPattern), .integer(search.limit)]
            ).compactMap(Rows.person)
        }
    }
}
