import AsyncHTTPClient
import Foundation
import HeraldClient
import HeraldNIOTransport
import HeraldServer

/// Users made known to a server as their first request does (only people who have signed in can be added to a
/// conversation): one small request each, 16 at a time.
enum SignIn {
    /// Signs in each of `userIDs` (named "User <id>") at `server`, with tokens from `tokens`.
    static func users(_ userIDs: [String], tokens: TokenAuthority, at server: URL, http: HTTPClient = .shared) async throws {
        var signed: [String] = []
        for id in userIDs { signed.append(try await tokens.token(userID: id, name: "User \(id)")) }
        try await withTokens(signed, at: server, http: http)
    }

    /// Signs in the users of `userTokens` at `server`.
    static func withTokens(_ userTokens: [String], at server: URL, http: HTTPClient = .shared) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, token) in userTokens.enumerated() {
                if index >= 16 { try await group.next() }
                group.addTask {
                    let api = HeraldAPI(configuration: ClientConfiguration(server: server, token: token, transport: .nio(httpClient: http)))
                    _ = try await api.conversationPage(limit: 1)
                }
            }
            try await group.waitForAll()
        }
    }
}
