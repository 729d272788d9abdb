import Foundation

/// Text as a key compared byte for byte (String's own `==` equates differently normalised text, which ids and SQL
/// must not be), hashed by its length and its first and last 32 bytes only.
///
/// Kept SQL statements are found by their text at every use: a few hundred bytes each, and hashing all of each was a
/// fiftieth of a delivery's instructions; text of the same length with the same ends is rare, and still told apart by
/// the comparison (one `memcmp`). An id is shorter than 64 bytes, so hashed whole.
struct ExactText: Hashable {
    let text: String

    init(_ text: String) {
        self.text = text
    }

    static func == (lhs: ExactText, rhs: ExactText) -> Bool {
        var left = lhs.text, right = rhs.text
        return left.withUTF8 { left in
            right.withUTF8 { right in
                left.count == right.count && (left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
            }
        }
    }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.prefix(32))))
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(32))))
        }
    }
}
