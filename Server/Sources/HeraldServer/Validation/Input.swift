import Foundation
import HeraldProtocol
import Hummingbird

/// The checks every value from the network passes before Herald uses it: ids by ``HeraldID``'s rules, and no
/// U+0000 in stored text. Each failure is `invalid_request` naming the field.
enum Input {
    /// `value` if it is a usable id.
    ///
    /// - Throws: ``APIError`` `invalid_request` naming `field` and what is wrong.
    static func id(_ value: String, field: String) throws -> String {
        if let problem = HeraldID.problem(with: value) {
            throw APIError.invalidRequest("`\(field)` \(problem)")
        }
        return value
    }

    /// `value`, if it holds no U+0000.
    ///
    /// - Throws: ``APIError`` `invalid_request` naming `field`.
    @discardableResult
    static func text(_ value: String?, field: String) throws -> String? {
        if let value, ControlCharacters.containsNUL(value) {
            throw APIError.invalidRequest("`\(field)` must not contain U+0000")
        }
        return value
    }

    /// `value` trimmed of white space at both ends, if it is a usable name or title (``DisplayText``).
    ///
    /// - Throws: ``APIError`` `invalid_request` naming `field`.
    static func displayText(_ value: String, field: String) throws -> String {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if let problem = DisplayText.problem(with: trimmed) {
            throw APIError.invalidRequest("`\(field)` \(problem)")
        }
        return trimmed
    }

    /// The longest picture or image URL taken, in bytes.
    static let maxURLBytes = 2_048

    /// `text` as a URL if it is an http or https one with a host, of at most ``maxURLBytes``, else nil.
    static func webURL(_ text: String) -> URL? {
        guard text.utf8.count <= maxURLBytes, !ControlCharacters.containsNUL(text), let url = URL(string: text),
              ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false
        else { return nil }
        return url
    }
}

/// Percent-decoding as RFC 3986 defines it and nothing else: each `%XX` becomes that byte, every other byte stays
/// itself, and the bytes must be UTF-8. No character is dropped, added or normalized (Foundation's
/// `removingPercentEncoding` drops a leading U+FEFF, so `%EF%BB%BFbob` would have named `bob`), and `+` stays `+`.
enum PercentDecoding {
    /// `raw` decoded, or nil when an escape is malformed or the bytes are not UTF-8.
    static func decode(_ raw: some StringProtocol) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.utf8.count)
        var iterator = raw.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        var decoder = UTF8()
        var scalars = bytes.makeIterator()
        while true {
            switch decoder.decode(&scalars) {
            case .scalarValue: continue
            case .emptyInput: return String(decoding: bytes, as: UTF8.self)
            case .error: return nil
            }
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Parameters {
    /// The path parameter `name`, percent-decoded exactly (``PercentDecoding``), if it is a usable id.
    ///
    /// - Throws: ``APIError`` `invalid_request` when it is not.
    func id(_ name: String) throws -> String {
        let raw = try require(name)
        guard let decoded = PercentDecoding.decode(raw) else {
            throw APIError.invalidRequest("the \(name) in the path is not valid percent-encoded UTF-8")
        }
        return try Input.id(decoded, field: name)
    }
}

/// A request's query parameters, each value percent-decoded exactly (``PercentDecoding``), as the path's are.
struct QueryParameters {
    private let raw: [(name: Substring, value: Substring)]

    init(_ request: Request) {
        raw = (request.uri.query ?? "").split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    /// The first value of `name`, decoded; nil when there is none.
    ///
    /// - Throws: ``APIError`` `invalid_request` when it is not valid percent-encoded UTF-8.
    func get(_ name: String) throws -> String? {
        guard let value = raw.first(where: { $0.name == name })?.value else { return nil }
        guard let decoded = PercentDecoding.decode(value) else {
            throw APIError.invalidRequest("`\(name)` is not valid percent-encoded UTF-8")
        }
        return decoded
    }

    /// The first value of `name`, if it is a usable id.
    ///
    /// - Throws: ``APIError`` `invalid_request` when it is not.
    func id(_ name: String) throws -> String? {
        try get(name).map { try Input.id($0, field: name) }
    }
}

/// The request targets Herald answers: a path, percent-encoded correctly, with no control character (raw or
/// encoded), no empty segment (`//`, a trailing `/`) and no `.` or `..` segment (encoded or not), then an optional
/// query. Anything else is refused before the router, the file server or the WebSocket upgrade sees it: each
/// resource has one spelling, so a rule written for `/metrics` in front of Herald holds for every way to write it,
/// and nothing built from a target (the upgrade's redirect) can carry `//host`.
enum RequestTarget {
    /// Why `target` is refused: its status and what to say; nil when it is taken.
    static func problem(with target: String) -> (notFound: Bool, message: String)? {
        switch plainVerdict(on: target) {
        case .taken: return nil
        case .badSegment: return (true, segmentProblem)
        case .other: return generalProblem(with: target)
        }
    }

    /// ``problem(with:)`` for any target, through decoded strings.
    static func generalProblem(with target: String) -> (notFound: Bool, message: String)? {
        let path = target.prefix { $0 != "?" }
        guard path.first == "/" else { return (false, "the request target must be a path (starting with /)") }
        guard !path.contains("#"), let decoded = PercentDecoding.decode(path),
              !decoded.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { return (false, "the path must not contain control characters or invalid percent-encoding") }
        guard path != "/" else { return nil }
        for segment in path.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let value = PercentDecoding.decode(segment) ?? ""
            if value.isEmpty || value == "." || value == ".." {
                return (true, Self.segmentProblem)
            }
        }
        return nil
    }

    private static let segmentProblem = "no such path: a path has no empty, `.` or `..` segment, and no trailing /"

    /// What ``plainVerdict(on:)`` finds.
    private enum PlainVerdict {
        /// A path Herald answers.
        case taken
        /// An empty, `.` or `..` segment.
        case badSegment
        /// Not a plain target: the general check decides.
        case other
    }

    /// The check for the usual target, byte by byte and without building a string: a path of printable ASCII with
    /// no `%` or `#` (decoding it changes nothing, and each byte is a character), then an optional query that
    /// starts with ASCII (a mark after `?` could join it into one character). Any other target is `other`.
    private static func plainVerdict(on target: String) -> PlainVerdict {
        var bytes = target.utf8.makeIterator()
        guard bytes.next() == UInt8(ascii: "/") else { return .other }
        var length = 0
        var dots = 0
        var segments = 0
        var badSegment = false
        func endSegment() {
            if length == 0 || (length == dots && dots <= 2) { badSegment = true }
            segments += 1
            length = 0
            dots = 0
        }
        path: while let byte = bytes.next() {
            switch byte {
            case UInt8(ascii: "?"):
                if let next = bytes.next(), next >= 0x80 { return .other }
                break path
            case UInt8(ascii: "%"), UInt8(ascii: "#"):
                return .other
            case UInt8(ascii: "/"):
                endSegment()
            case 0x21...0x7E:
                if byte == UInt8(ascii: "."), dots == length { dots += 1 }
                length += 1
            default:
                return .other
            }
        }
        if segments == 0, length == 0 { return .taken }
        endSegment()
        return badSegment ? .badSegment : .taken
    }
}
