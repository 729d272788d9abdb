import Foundation
import HeraldProtocol
import Hummingbird

/// The demo's sign-in, registered only when the server runs with `--demo`: without it these paths do not exist
/// (404 `not_found`), so a real deployment never mints a token for anyone.
///
/// `GET /v1/demo/people` lists the demo people; `POST /v1/demo/tokens` with `{"user": "alice"}` returns a token
/// for one of them (valid 30 days), as `herald serve --demo` prints at start.
struct DemoController {
    let tokens: TokenAuthority

    func addRoutes(to router: Router<HeraldRequestContext>) {
        router.get("v1/demo/people", use: people)
        router.post("v1/demo/tokens", use: token)
    }

    struct People: ResponseEncodable {
        var people: [WirePerson]
    }

    struct TokenRequest: Decodable {
        var user: String
    }

    struct DemoToken: ResponseEncodable {
        var token: String
        var user: WirePerson
    }

    @Sendable func people(_ request: Request, context: HeraldRequestContext) async throws -> People {
        People(people: DemoData.people.map(WirePerson.init))
    }

    @Sendable func token(_ request: Request, context: HeraldRequestContext) async throws -> DemoToken {
        let body = try await request.decodeJSON(as: TokenRequest.self, context: context)
        guard let person = DemoData.people.first(where: { $0.id == body.user }) else {
            throw APIError.invalidRequest("`user` must be one of the demo people: \(DemoData.people.map(\.id).joined(separator: ", "))")
        }
        let token = try await tokens.token(userID: person.id, name: person.displayName)
        return DemoToken(token: token, user: WirePerson(person))
    }
}
