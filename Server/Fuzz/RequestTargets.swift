import Foundation
import Hummingbird
import HummingbirdCore
@testable import HeraldServer

/// Request targets and the headers the page's files read: the guard's check of a target (``RequestTarget``: its
/// fast path must agree with the general one), the exact percent-decoding of paths and queries
/// (``PercentDecoding``), the file path ``CompressedFilesMiddleware`` reads from a URI, its `Range` and
/// `Accept-Encoding` parsing.
enum RequestTargetsTarget {
    static func run(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        let verdict = RequestTarget.problem(with: text)
        let general = RequestTarget.generalProblem(with: text)
        precondition(verdict?.notFound == general?.notFound, "the plain check differs from the general one: \(text.debugDescription)")
        _ = PercentDecoding.decode(text)
        let uri = URI(text)
        if let decoded = uri.path.removingPercentEncoding, let path = WebPage.embeddedPath(of: decoded) {
            _ = EmbeddedFiles.file(path)
        }
        for value in (uri.query ?? "").split(separator: "&") {
            _ = PercentDecoding.decode(value)
        }
        for size in [0, 1, 5_000] {
            _ = CompressedFilesMiddleware<BasicRequestContext>.range(text, size: size)
        }
        _ = CompressedFilesMiddleware<BasicRequestContext>.acceptsGzip(text.split(separator: "\n").map(String.init))
    }
}
