import Foundation

/// How Herald writes and reads JSON on the wire: ISO 8601 times with milliseconds and a zone, sorted keys, URLs
/// unescaped, absent values written as null.
public enum WireJSON {
    /// An encoder for Herald's JSON.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        }
        return encoder
    }

    /// A decoder for Herald's JSON.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = date(text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 time: \(text)")
        }
        return decoder
    }

    /// An ISO 8601 instant with a zone (`2026-11-25T08:00:00Z`, fractions allowed), or nil.
    public static func date(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        return (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle()))
    }

    /// `value` as JSON text.
    public static func string(_ value: some Encodable) -> String {
        (try? String(decoding: encoder().encode(value), as: UTF8.self)) ?? "{}"
    }
}
