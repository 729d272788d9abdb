import Foundation
@testable import HeraldChat

/// `herald chat`'s key parser: a raw terminal's bytes, read in pieces as they come (the input's first byte says
/// how big), never put anything but typed characters on the input line.
enum KeysTarget {
    static func run(_ data: Data) {
        guard let first = data.first else { return }
        let bytes = Array(data.dropFirst())
        let piece = Int(first % 16) + 1
        var parser = KeyParser()
        var start = 0
        while start < bytes.count {
            let end = min(start + piece, bytes.count)
            for key in parser.feed(Array(bytes[start..<end])) {
                guard case .character(let character) = key else { continue }
                precondition(
                    !character.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }),
                    "a control character reached the input line: \(character.debugDescription)")
            }
            start = end
        }
    }
}
