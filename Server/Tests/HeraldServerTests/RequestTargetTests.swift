@testable import HeraldServer
import HeraldTestSupport
import Testing

/// The request-target check reads the usual target (plain ASCII, no escapes) byte by byte; every verdict is the
/// general check's.
@Suite("The request target's one spelling")
struct RequestTargetTests {
    @Test("the byte-by-byte check and the general one agree on 50,000 targets made of awkward pieces")
    func sameVerdicts() {
        let pieces = ["/", "/", "/", "a", "metrics", ".", "..", "...", ".a", "a.", "%2e", "%2E%2e", "%", "%zz", "%00", "%C3%A9",
                      "#", "?", "?x=1", "?é", "?\u{301}", "é", "\u{301}", " ", "\t", "\u{7F}", "\u{0}", "~", "-", "@", "=", "&"]
        var generator = SplitMix(seed: 11)
        for index in 0..<50_000 {
            var target = index % 5 == 0 ? "" : "/"
            for _ in 0..<Int(generator.next() % 7) {
                target += pieces[Int(generator.next() % UInt64(pieces.count))]
            }
            let fast = RequestTarget.problem(with: target)
            let general = RequestTarget.generalProblem(with: target)
            #expect(fast?.notFound == general?.notFound && fast?.message == general?.message, "\(target.debugDescription)")
            if fast?.message != general?.message { break }
        }
    }

    @Test("the usual targets: taken, or 404 for an empty, `.` or `..` segment")
    func usual() {
        for target in ["/", "/health", "/v1/conversations/abc/messages?after=12", "/?x", "/a/.../b", "/.well-known/x"] {
            #expect(RequestTarget.problem(with: target) == nil, "\(target)")
        }
        for target in ["//", "/a/", "/a//b", "/./a", "/a/..", "/a/../b?x", "/a/?x"] {
            #expect(RequestTarget.problem(with: target)?.notFound == true, "\(target)")
        }
        #expect(RequestTarget.problem(with: "*")?.notFound == false)
    }
}
