import Foundation

/// The rules every id in Herald follows: user ids (a token's `sub`), conversation, message and device ids.
///
/// An id is 1 to 128 bytes of UTF-8, has no control characters (U+0000 to U+001F, U+007F to U+009F), no invisible
/// or bidirectional-control characters, is not `.` or `..`, and is already in Unicode NFC. The same rule holds for a
/// token's `sub`, an id in a body and an id in a path (which is percent-decoded byte for byte first).
///
/// NFC is what makes ids safe to compare: Swift's `==` on strings is canonical equivalence, so `"jose\u{301}"` equals
/// `"josé"` and `"\u{212A}evin"` (Kelvin sign) equals `"Kevin"`, while the database compares bytes. NFC is the
/// single canonical form of each equivalence class, so among NFC strings equal means byte for byte equal, in Swift
/// and in SQL alike, and one person can never pass for another.
///
/// Invisible characters (Unicode's format characters and default-ignorable code points: zero-width space and
/// joiners, U+FEFF, soft hyphen, tag characters, variation selectors, Hangul fillers) and bidirectional controls
/// (U+202A to U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C) would let an id look like another one, or like nothing,
/// on every screen that shows it. `.` and `..` are refused because no path can name them: clients and proxies
/// resolve them as dot segments. Ids that merely look alike (`bob` and Cyrillic `Ьоb`, `carol` and `carol `) stay
/// distinct ids: they differ in their bytes, and Herald shows display names, not ids.
public enum HeraldID {
    /// The longest id, in bytes of UTF-8.
    public static let maxBytes = 128

    /// Why a string is not a usable id.
    public enum Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// It is empty.
        case empty
        /// It is longer than ``HeraldID/maxBytes``.
        case tooLong
        /// It contains a control character.
        case controlCharacter
        /// It is not in Unicode NFC.
        case notNormalized
        /// It contains an invisible or bidirectional-control character.
        case invisible(Unicode.Scalar)
        /// It is `.` or `..`.
        case dotSegment

        public var description: String {
            switch self {
            case .empty: "is empty"
            case .tooLong: "is longer than \(HeraldID.maxBytes) bytes"
            case .controlCharacter: "contains a control character"
            case .notNormalized: "is not in Unicode NFC (normalize it before sending)"
            case .invisible(let scalar):
                "contains an invisible or bidirectional-control character (U+\(String(scalar.value, radix: 16, uppercase: true)))"
            case .dotSegment: "is . or .., which no path can name"
            }
        }
    }

    /// What is wrong with `id`, or nil when it is a usable id.
    public static func problem(with id: String) -> Problem? {
        let bytes = id.utf8
        if bytes.isEmpty { return .empty }
        if bytes.count > maxBytes { return .tooLong }
        if id.unicodeScalars.contains(where: ControlCharacters.isControl) { return .controlCharacter }
        if let invisible = id.unicodeScalars.first(where: isInvisible) { return .invisible(invisible) }
        if id == "." || id == ".." { return .dotSegment }
        if !isNFC(id) { return .notNormalized }
        return nil
    }

    /// Whether `scalar` shows as nothing, or reorders what is around it: a format character (Cf: the zero-width
    /// ones, U+FEFF, soft hyphen, bidirectional controls, tags) or a default-ignorable code point (variation
    /// selectors, Hangul fillers, the combining grapheme joiner).
    public static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value >= 0x80 && (scalar.properties.generalCategory == .format || scalar.properties.isDefaultIgnorableCodePoint)
    }

    /// Whether `text` is in Unicode NFC, compared byte for byte with its normalized form.
    public static func isNFC(_ text: String) -> Bool {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return true }
        return text.precomposedStringWithCanonicalMapping.utf8.elementsEqual(text.utf8)
    }

    /// Ids in the order the database keeps them: by their UTF-8 bytes.
    public static func sorted(_ ids: some Sequence<String>) -> [String] {
        ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}

/// Control characters: C0 (U+0000 to U+001F), DEL (U+007F) and C1 (U+0080 to U+009F).
///
/// They have no place in ids, and a terminal or a page must never receive them from the network as anything but
/// inert text: an ESC starts an escape sequence, a C1 CSI (U+009B) does too on some terminals.
public enum ControlCharacters {
    /// Whether `scalar` is a C0 or C1 control character or DEL.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `text` with each control character written as an inert escape (`\u{1B}`): safe for a log on a terminal.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// Whether `text` contains U+0000, which no stored text may hold (SQLite reads text up to it, PostgreSQL
    /// refuses it).
    public static func containsNUL(_ text: String) -> Bool {
        text.utf8.contains(0)
    }
}

/// The rules for the short texts every frame and push repeats: a person's display name and a group's title.
///
/// At most ``maxCharacters`` characters (grapheme clusters, as a person counts them) and at most ``maxBytes`` bytes
/// of UTF-8: a character may be any number of code points (a letter with a hundred combining marks is one), so a
/// limit in characters alone lets a "200-character" title weigh 24 KB and ride along in every frame and push of its
/// group. No control characters: a name or title is one line.
public enum DisplayText {
    /// The most characters.
    public static let maxCharacters = 200
    /// The most bytes of UTF-8: four for each character, which any text of ordinary letters, scripts and emoji fits.
    public static let maxBytes = 800

    /// What is wrong with `text` as a name or title, or nil when nothing is.
    public static func problem(with text: String) -> String? {
        if text.utf8.count > maxBytes || text.count > maxCharacters {
            return "must be at most \(maxCharacters) characters and \(maxBytes) bytes of UTF-8"
        }
        if text.unicodeScalars.contains(where: ControlCharacters.isControl) {
            return "must not contain control characters"
        }
        return nil
    }
}
