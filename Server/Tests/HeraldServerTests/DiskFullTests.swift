import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// A small tmpfs of the test's own, where the machine lets it mount one (root, with mount allowed: CI's machine is
/// such a one); elsewhere the test is skipped and says why.
enum SmallDisk {
    static let mountable: Bool = {
        guard getuid() == 0, let folder = try? makeTemporaryFolder("herald-tmpfs-probe") else { return false }
        defer { try? FileManager.default.removeItem(at: folder) }
        guard mount("tmpfs", folder.path, "tmpfs", 0, "size=1m") == 0 else { return false }
        umount(folder.path)
        return true
    }()

    /// Mounts a tmpfs of `megabytes` on a new folder for the length of `body`.
    static func with(megabytes: Int, _ body: (URL) async throws -> Void) async throws {
        let folder = try makeTemporaryFolder("herald-tmpfs")
        defer { try? FileManager.default.removeItem(at: folder) }
        guard mount("tmpfs", folder.path, "tmpfs", 0, "size=\(megabytes)m") == 0 else {
            throw TestFailure("mounting a tmpfs failed: errno \(errno)")
        }
        defer { umount2(folder.path, Int32(MNT_DETACH)) }
        try await body(folder)
    }

    /// Fills the disk under `folder` with a file of zeros until a write fails; the file's URL.
    static func fill(_ folder: URL) throws -> URL {
        let filler = folder.appendingPathComponent("filler")
        guard let file = fopen(filler.path, "w") else { throw TestFailure("cannot create \(filler.path)") }
        defer { fclose(file) }
        let chunk = [UInt8](repeating: 0, count: 4096)
        while fwrite(chunk, 1, chunk.count, file) == chunk.count, fflush(file) == 0 {}
        return filler
    }
}

@Suite("A full disk", .timeLimit(.minutes(2)), .childProcesses)
struct DiskFullTests {
    @Test("a full disk: writes answer 503 storage_full with Retry-After and /health says so; freed, it recovers with nothing acknowledged lost",
          .enabled(if: SmallDisk.mountable, "needs root and permission to mount a tmpfs"))
    func diskFull() async throws {
        try await SmallDisk.with(megabytes: 16) { folder in
            let database = folder.appendingPathComponent("herald.sqlite").path
            let tokens = await TokenAuthority(secret: TestServer.secret)
            let (alice, bob) = try await (tokens.token(userID: "alice", name: "Alice"), tokens.token(userID: "bob", name: "Bob"))
            let server = try await ServerProcess(database: database, secret: TestServer.secret)
            defer { server.stop() }
            let client = RemoteServer(port: server.port)
            let chat = try await client.createConversation(alice, members: ["bob"])
            #expect(try await client.post(bob, to: chat, id: "before", text: "room to spare") == 201)

            let filler = try SmallDisk.fill(folder)
            var acknowledged = ["before"]
            var refusal: HTTPResult?
            for index in 0..<5_000 {
                let id = "full-\(index)"
                let result = try await HTTPClient.request(
                    port: server.port, "POST", "/v1/conversations/\(chat)/messages", token: bob,
                    body: #"{"id": "\#(id)", "text": "\#(String(repeating: "x", count: 2_000))"}"#)
                if result.status == 201 {
                    acknowledged.append(id)
                } else {
                    refusal = result
                    break
                }
            }
            let refused = try #require(refusal, "the disk never filled")
            #expect(refused.status == 503, "\(refused.text)")
            #expect(refused.errorCode == "storage_full")
            #expect(refused.headers[.retryAfter] == "30")
            let sick = try await HTTPClient.request(port: server.port, "GET", "/health")
            #expect(sick.status == 503)
            #expect(sick.text.contains(#""database":"full""#), "\(sick.text)")
            // Reads still work.
            #expect(try await client.messages(bob, in: chat, after: 0).first?.id == "before")

            try FileManager.default.removeItem(at: filler)
            try await eventually("/health recovered") { try await client.health() == 200 }
            #expect(try await client.post(bob, to: chat, id: "after", text: "room again") == 201)
            acknowledged.append("after")
            var stored: [String] = []
            var cursor: Int64 = 0
            while true {
                let page = try await client.messages(bob, in: chat, after: cursor)
                guard let last = page.last else { break }
                stored += page.map(\.id)
                cursor = last.seq
            }
            #expect(stored == acknowledged, "every acknowledged message, and nothing else")
        }
    }
}
