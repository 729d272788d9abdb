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

extension Parameters {
    /// The path parameter `name`, percent-decoded, if it is a usable id.
    ///
    /// - Throws: ``APIError`` `invalid_request` when it is not.
    func id(_ name: String) throws -> String {
        let raw = try require(name)
        guard let decoded = raw.removingPercentEncoding else {
            throw APIError.invalidRequest("the \(name) in the path is not valid percent-encoded UTF-8")
        }
        return try Input.id(decoded, field: name)
    }
}
