import Foundation
@testable import HeraldRecords
import HeraldServer
import HeraldService
import HeraldTestSupport
import Logging
import Testing

/// Reads the parts of Herald's OpenAPI document these tests compare with the code. The document is kept in a
/// plain block style (two-space indents), which this reader relies on.
struct OpenAPIDocument {
    let lines: [String]

    init() throws {
        let url = serverPackageRoot.appendingPathComponent("Sources/HeraldServer/Resources/openapi.yaml")
        lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
    }

    private static func indent(_ line: String) -> Int { line.prefix { $0 == " " }.count }

    /// `METHOD /path` for every operation.
    var operations: Set<String> {
        var result: Set<String> = []
        var inPaths = false
        var path: String?
        for line in lines {
            if Self.indent(line) == 0 { inPaths = line == "paths:"; continue }
            guard inPaths else { continue }
            let text = line.trimmingCharacters(in: .whitespaces)
            if Self.indent(line) == 2, text.hasPrefix("/") { path = String(text.dropLast()) }
            if Self.indent(line) == 4, let path, ["get:", "post:", "put:", "delete:", "patch:"].contains(text) {
                result.insert("\(text.dropLast().uppercased()) \(path)")
            }
        }
        return result
    }

    /// The lines of one schema under `components.schemas`.
    private func schema(_ name: String) -> ArraySlice<String> {
        guard let schemas = lines.firstIndex(of: "  schemas:"),
              let start = lines[schemas...].firstIndex(of: "    \(name):")
        else { return [] }
        let end = lines[(start + 1)...].firstIndex { Self.indent($0) <= 4 && !$0.isEmpty } ?? lines.endIndex
        return lines[(start + 1)..<end]
    }

    /// A schema's `required` list.
    func required(_ name: String) -> Set<String> {
        guard let line = schema(name).first(where: { $0.hasPrefix("      required: [") }) else { return [] }
        let list = line.drop { $0 != "[" }.dropFirst().prefix { $0 != "]" }
        return Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }

    /// The names under `webhooks`.
    var webhooks: Set<String> {
        var result: Set<String> = []
        var inWebhooks = false
        for line in lines {
            if Self.indent(line) == 0 { inWebhooks = line == "webhooks:"; continue }
            if inWebhooks, Self.indent(line) == 2, line.hasSuffix(":") {
                result.insert(String(line.trimmingCharacters(in: .whitespaces).dropLast()))
            }
        }
        return result
    }

    /// The schema of a webhook type's `data`: `message.new` → `WebhookMessageNewData`.
    static func webhookDataSchema(_ type: String) -> String {
        "Webhook" + type.split(separator: ".").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + "Data"
    }

    /// An object schema's properties (its own, not nested ones).
    func properties(_ name: String) -> Set<String> {
        let lines = schema(name)
        guard let start = lines.firstIndex(of: "      properties:") else { return [] }
        return Set(lines[(start + 1)...].prefix { Self.indent($0) > 6 || $0.isEmpty }
            .filter { Self.indent($0) == 8 && $0.hasSuffix(":") }
            .map { String($0.trimmingCharacters(in: .whitespaces).dropLast()) })
    }

    /// A string schema's enum values, written as a block list.
    func enumValues(_ name: String) -> Set<String> {
        Set(schema(name).filter { $0.hasPrefix("        - ") }.map { String($0.dropFirst(10)) })
    }
}

@Suite("openapi.yaml stays true to the code", .timeLimit(.minutes(1)))
struct OpenAPITests {
    @Test("it describes exactly the routes the router has")
    func routes() async throws {
        // With the demo, whose sign-in routes exist only then (and are documented).
        try await TestServer.run(configure: { $0.demo = true }) { server in
            let router = buildRouter(server.environment, logger: Logger(label: "openapi-test"))
            let routes = Set(router.routes.map { route in
                let path = route.path.description.split(separator: "/").map { part in
                    part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
                }
                return "\(route.method.rawValue) /" + path.joined(separator: "/")
            })
            let documented = try OpenAPIDocument().operations
            #expect(routes == documented)
        }
    }

    @Test("it describes exactly the webhooks the server sends, each with a schema for its data (the bodies are checked against them in WebhookTests)")
    func webhooks() throws {
        let document = try OpenAPIDocument()
        #expect(document.webhooks == Set(WebhookEventType.allCases.map(\.rawValue)))
        for type in WebhookEventType.allCases {
            let schema = OpenAPIDocument.webhookDataSchema(type.rawValue)
            #expect(!document.required(schema).isEmpty, "\(schema)")
            #expect(document.required(schema).isSubset(of: document.properties(schema)), "\(schema)")
            #expect(document.lines.contains("                      $ref: \"#/components/schemas/\(schema)\""), "\(type.rawValue) uses \(schema)")
        }
        #expect(document.required("WebhookEvent") == ["id", "type", "time", "seq", "conversationId", "data"])
    }

    @Test("its error codes are exactly the server's")
    func errorCodes() throws {
        #expect(try OpenAPIDocument().enumValues("ErrorCode") == Set(APIError.Code.allCases.map(\.rawValue)))
    }

    @Test("its schemas name exactly the fields the server sends")
    func schemas() async throws {
        let document = try OpenAPIDocument()
        try await TestServer.run { server in
            let alice = try await server.token("alice")
            let created = try await server.request(
                "POST", "/v1/conversations", token: alice, body: #"{"kind": "group", "title": "T", "members": []}"#)
            let conversation = try Self.keys(created.body)
            #expect(conversation == document.required("Conversation"))
            let id = try created.decode(ConversationJSON.self).id
            let posted = try await server.request(
                "POST", "/v1/conversations/\(id)/messages", token: alice, body: #"{"text": "hi"}"#)
            #expect(try Self.keys(posted.body) == document.required("Message"))
            let listed = try await server.request("GET", "/v1/conversations", token: alice)
            #expect(try Self.keys(listed.body) == document.required("ConversationList"))
            let list = try JSONSerialization.jsonObject(with: listed.body) as? [String: Any]
            let first = (list?["conversations"] as? [[String: Any]])?.first
            #expect(Set(first?.keys.map { $0 } ?? []) == document.required("ConversationSummary"))
            let failed = try await server.request("GET", "/v1/conversations")
            #expect(try Self.keys(failed.body) == document.required("Error"))
        }
    }

    private static func keys(_ body: Data) throws -> Set<String> {
        Set((try JSONSerialization.jsonObject(with: body) as? [String: Any])?.keys.map { $0 } ?? [])
    }
}
