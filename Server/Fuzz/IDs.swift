import Foundation
@testable import HeraldServer
import HeraldProtocol

/// Ids as the server takes them, from a body or a token (``HeraldID``) and from a path (percent-decoded first):
/// a usable id keeps the rules it promises, and two usable ids are equal to Swift exactly when their bytes are (what
/// lets the database compare bytes). Also the display texts (names and titles) and the escaping of controls for a log.
enum IDsTarget {
    static func run(_ data: Data) {
        let (first, second) = data.split(at: 0xFF)
        let a = String(decoding: first, as: UTF8.self), b = String(decoding: second, as: UTF8.self)
        for id in [a, b] + [PercentDecoding.decode(a)].compactMap({ $0 }) {
            guard (try? Input.id(id, field: "id")) != nil else { continue }
            precondition(HeraldID.problem(with: id) == nil)
            precondition((1...HeraldID.maxBytes).contains(id.utf8.count) && id != "." && id != "..")
            precondition(!id.unicodeScalars.contains(where: ControlCharacters.isControl), "a control in \(id.debugDescription)")
            precondition(!id.unicodeScalars.contains(where: HeraldID.isInvisible), "an invisible in \(id.debugDescription)")
        }
        if HeraldID.problem(with: a) == nil, HeraldID.problem(with: b) == nil {
            precondition((a == b) == a.utf8.elementsEqual(b.utf8), "ids equal but not byte for byte: \(a.debugDescription) \(b.debugDescription)")
        }
        _ = HeraldID.sorted([a, b])
        _ = DisplayText.problem(with: a)
        _ = try? Input.displayText(a, field: "name")
        _ = Input.webURL(a)
        precondition(!ControlCharacters.escaped(a).unicodeScalars.contains(where: ControlCharacters.isControl))
    }
}
