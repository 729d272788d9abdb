import Foundation
import HeraldCore
import HeraldProtocol
import PostgresNIO

/// The users on PostgreSQL.
extension PostgresStore {
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
                                           WHERE a.user_id = \(search.userID) AND a.removed_seq IS NULL
                                             AND b.removed_seq IS NULL))
              AND (lower(u.name) LIKE \(pattern) ESCAPE '\\' OR u.id LIKE \(idPattern) ESCAPE '\\')
            ORDER BY u.id LIMIT \(search.limit)
            """, logger: logger).collect()
        return try rows.compactMap { row in
            let (id, name, picture) = try row.decode((String, String, String?).self)
            guard !name.isEmpty else { return nil }
            return Person(id: id, displayName: name, avatarURL: picture.flatMap(URL.init(string:)))
        }
    }
}
