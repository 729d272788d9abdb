import HeraldRecords
import Hummingbird
import HeraldProtocol

/// `GET /v1/users?q=&limit=&after=`: people to start a chat with, found by name or id, from the caller's directory
/// (``DirectoryScope``: the people they share a conversation with, unless the server lets everyone be found).
struct UsersController {
    let store: any UserStore
    let scope: DirectoryScope

    /// The longest query.
    static let maxQuery = 100

    func addRoutes(to group: RouterGroup<HeraldRequestContext>) {
        group.get("users", use: find)
    }

    @Sendable func find(_ request: Request, context: HeraldRequestContext) async throws -> WireUserList {
        let identity = try context.requireIdentity()
        let parameters = QueryParameters(request)
        let query = (try parameters.get("q") ?? "").trimmingCharacters(in: .whitespaces)
        guard query.count <= Self.maxQuery, !ControlCharacters.containsNUL(query),
              !query.unicodeScalars.contains(where: ControlCharacters.isControl)
        else { throw APIError.invalidRequest("`q` is at most \(Self.maxQuery) characters, without control characters") }
        var limit = 20
        if let text = try parameters.get("limit") {
            guard let value = Int(text), (1...50).contains(value) else {
                throw APIError.invalidRequest("`limit` must be from 1 to 50")
            }
            limit = value
        }
        let after = try parameters.id("after")
        // One more than asked: whether there is a next page.
        let people = try await store.findUsers(
            UserSearch(userID: identity.userID, query: query, scope: scope, after: after, limit: limit + 1))
        let page = people.prefix(limit)
        return WireUserList(
            users: page.map(WirePerson.init), next: people.count > limit ? page.last?.id : nil)
    }
}

extension WireUserList: @retroactive ResponseEncodable {}
