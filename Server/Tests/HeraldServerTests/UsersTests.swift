import Foundation
import HeraldClient
import HeraldCore
import HeraldProtocol
@testable import HeraldRecords
@testable import HeraldServer
import Testing
import HeraldNIOTransport

/// People are picked, not typed: only known users may be added to a conversation, and `GET /v1/users` finds them,
/// within what the server lets one user learn of the others.
@Suite("Finding people, and adding only people who exist", .timeLimit(.minutes(3)))
struct UsersTests {
    struct Page: Decodable {
        var users: [WirePerson]
        var next: String?
    }

    @Test("a member id no one signed in with, a name typed for an id, or a look-alike is unknown_user, and nothing is created")
    func unknownMembers() async throws {
        try await TestServer.run { server in
            let (alice, _) = try await (server.token("alice"), server.token("charlie", name: "Charlie Davis"))
            for members in [#"["dave"]"#, #"["Charlie Davis"]"#, #"["Charlie"]"#, #"["charlie", "erin"]"#] {
                let kind = members.contains(",") ? "group" : "direct"
                let result = try await server.request(
                    "POST", "/v1/conversations", token: alice, body: #"{"kind": "\#(kind)", "title": "T", "members": \#(members)}"#)
                #expect(result.status == 400, "\(members)")
                #expect(result.errorCode == "unknown_user", "\(members)")
            }
            let named = try await server.request(
                "POST", "/v1/conversations", token: alice, body: #"{"kind": "group", "members": ["charlie", "erin", "dave"]}"#)
            #expect(named.text.contains(#"\"dave\", \"erin\""#), "it names the unknown ids: \(named.text)")
            let list = try await server.request("GET", "/v1/conversations", token: alice)
            #expect(!list.text.contains("\"id\""), "no conversation was made: \(list.text)")
            #expect(try await server.request(
                "POST", "/v1/conversations", token: alice, body: #"{"kind": "direct", "members": ["charlie"]}"#).status == 201)
        }
    }

    @Test("contacts (the default): one finds the people one shares a conversation with, by name or id, never oneself or a stranger")
    func contacts() async throws {
        try await TestServer.run { server in
            let alice = try await server.token("alice", name: "Alice Johnson")
            for (id, name) in [("bob", "Bob Smith"), ("bobby", "Roberta Bobbins"), ("charlie", "Charlie Davis"), ("stranger", "Bob Stranger")] {
                _ = try await server.token(id, name: name)
            }
            _ = try await server.createConversation(alice, kind: "group", title: "Team", members: ["bob", "bobby", "charlie"])
            func find(_ query: String, as token: String? = nil, extra: String = "") async throws -> Page {
                let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? query
                return try await server.request("GET", "/v1/users?q=\(encoded)\(extra)", token: token ?? alice).decode(Page.self)
            }
            #expect(try await find("bob").users.map(\.id) == ["bob", "bobby"], "name or id, any case; not the stranger")
            #expect(try await find("BOB").users.map(\.id) == ["bob", "bobby"])
            #expect(try await find("davis").users.map(\.name) == ["Charlie Davis"])
            #expect(try await find("").users.map(\.id) == ["bob", "bobby", "charlie"], "everyone one may find, not oneself")
            #expect(try await find("alice").users.isEmpty, "never oneself")
            #expect(try await find("%").users.isEmpty, "LIKE's wildcards are only characters")
            #expect(try await find("_").users.isEmpty)
            let stranger = try await server.token("stranger", name: "Bob Stranger")
            #expect(try await find("", as: stranger).users.isEmpty, "the stranger shares no conversation with anyone")
            // The Swift client asks the same.
            let api = HeraldAPI(configuration: ClientConfiguration(server: URL(string: "http://127.0.0.1:\(server.port)")!, token: alice, transport: .nio()))
            #expect(try await api.users(matching: "Dav").users.map(\.id) == ["charlie"])

            // Pages: bounded, with the cursor.
            let first = try await find("", extra: "&limit=2")
            #expect(first.users.map(\.id) == ["bob", "bobby"] && first.next == "bobby")
            let second = try await find("", extra: "&limit=2&after=bobby")
            #expect(second.users.map(\.id) == ["charlie"] && second.next == nil)
            for bad in ["&limit=0", "&limit=51", "&limit=x", "&after=%00", "&q=\(String(repeating: "a", count: 101))", "&q=%1B"] {
                let result = try await server.request("GET", "/v1/users?x=1\(bad)", token: alice)
                #expect(result.status == 400, "\(bad)")
                #expect(result.errorCode == "invalid_request", "\(bad)")
            }
        }
    }

    @Test("everyone (HERALD_USER_DIRECTORY=everyone): every user who signed in may be found")
    func everyone() async throws {
        try await TestServer.run(configure: { $0.userDirectory = .everyone }) { server in
            let alice = try await server.token("alice", name: "Alice Johnson")
            _ = try await server.token("stranger", name: "Bob Stranger")
            let page = try await server.request("GET", "/v1/users?q=bob", token: alice).decode(Page.self)
            #expect(page.users.map(\.id) == ["stranger"])
        }
        #expect(try ServerConfiguration.fromEnvironment(["HERALD_USER_DIRECTORY": "everyone"]).userDirectory == .everyone)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["HERALD_USER_DIRECTORY": "all"]) }
    }

    @Test("on every store: known users only, in id order, within the scope", arguments: StoreKind.available)
    func store(kind: StoreKind) async throws {
        try await kind.withStore { store in
            for (id, name) in [("alice", "Alice"), ("bob", "Bob"), ("bo%b", "Percent"), ("carol", "Carol")] {
                try await store.upsertUser(Person(id: id, displayName: name))
            }
            _ = try await store.createConversation(kind: .group, title: "G", memberIDs: ["alice", "bob", "bo%b", "placeholder"])
            #expect(try await store.unknownUsers(among: ["bob", "dave", "placeholder", "carol"]) == ["dave", "placeholder"])
            let contacts = try await store.findUsers(UserSearch(userID: "alice", query: "", scope: .contacts, limit: 10))
            #expect(contacts.map(\.id) == ["bo%b", "bob"], "carol shares nothing with alice; the placeholder never signed in")
            let percent = try await store.findUsers(UserSearch(userID: "alice", query: "bo%", scope: .contacts, limit: 10))
            #expect(percent.map(\.id) == ["bo%b"])
            let everyone = try await store.findUsers(UserSearch(userID: "alice", query: "", scope: .everyone, after: "bob", limit: 10))
            #expect(everyone.map(\.id) == ["carol"])
        }
    }
}
