import Foundation
import HeraldPresentation
import HeraldTestSupport
import Testing

@Suite("Avatars: which pictures load, and one colour per person on every client")
struct AvatarStyleTests {
    @Test("only http and https pictures are loaded")
    func pictures() {
        #expect(AvatarStyle.pictureURL(URL(string: "https://example.com/a.png"))?.absoluteString == "https://example.com/a.png")
        #expect(AvatarStyle.pictureURL(URL(string: "HTTP://example.com/a.png")) != nil)
        for refused in ["javascript:alert(1)", "file:///etc/passwd", "data:image/png;base64,AAAA", "ftp://example.com/a"] {
            #expect(AvatarStyle.pictureURL(URL(string: refused)) == nil, "\(refused)")
        }
        #expect(AvatarStyle.pictureURL(nil) == nil)
    }

    @Test("the hue behind initials is the JavaScript client's (the web page's) for the same id, with TextEncoder and without")
    func sameHueAsTheWebPage() async throws {
        let ids = ["alice", "bob", "charlie", "josé", "👩‍👩‍👧", ""]
        let module = packageRoot.appendingPathComponent("clients/js/src/presentation.js").path
        // Each id twice: as browsers and Node encode it (TextEncoder), and as a runtime without TextEncoder does.
        let script = """
            const { avatarColour } = await import(process.argv[1]);
            const ids = JSON.parse(process.argv[2]);
            const encoded = ids.map(avatarColour);
            delete globalThis.TextEncoder;
            ids.forEach((id, index) => console.log(avatarColour(id) === encoded[index] ? encoded[index] : "differs"));
            """
        let idsJSON = String(decoding: try JSONEncoder().encode(ids), as: UTF8.self)
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["node", "--input-type=module", "-e", script, module, idsJSON],
            timeout: .seconds(30))
        #expect(result.status == 0, "node: \(result.stderr)")
        let web = result.stdout.split(separator: "\n").map(String.init)
        #expect(web.count == ids.count)
        for (id, colour) in zip(ids, web) {
            let hue = Int((AvatarStyle.hue(for: id) * 360).rounded())
            #expect(colour.hasPrefix("hsl(\(hue) "), "\(id): \(colour) on the web, hue \(hue) here")
        }
        #expect(Set(ids.map(AvatarStyle.hue)).count > 3, "different people, different colours")
    }
}
