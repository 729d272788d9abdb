import Foundation

/// The fields of one JSON object in a trace, read with errors that name the line and the field.
struct TraceFields {
    let line: Int
    let path: String
    let values: [String: JSONValue]

    init(line: Int, path: String = "", values: [String: JSONValue]) {
        self.line = line
        self.path = path
        self.values = values
    }

    func error(_ message: String) -> ReplayError {
        ReplayError(line: line, message: message)
    }

    private func name(_ key: String) -> String { "`\(path)\(key)`" }

    /// Fails on any key not in `allowed`: a misspelt option must not be silently ignored.
    func rejectUnknown(_ allowed: Set<String>, in event: String) throws {
        if let unknown = values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw error("`\(event)` has no field \(name(unknown))")
        }
    }

    private func required(_ key: String) throws -> JSONValue {
        guard let value = values[key] else { throw error("missing \(name(key))") }
        return value
    }

    private func wrongType(_ key: String, _ expected: String, _ value: JSONValue) -> ReplayError {
        error("\(name(key)) must be \(expected), not \(value.kind)")
    }

    func string(_ key: String) throws -> String {
        let value = try required(key)
        guard case .string(let text) = value else { throw wrongType(key, "a string", value) }
        return text
    }

    /// A string, or nil when the key is absent or null.
    func optionalString(_ key: String) throws -> String? {
        guard let value = values[key], value != .null else { return nil }
        guard case .string(let text) = value else { throw wrongType(key, "a string or null", value) }
        return text
    }

    /// A string or null, where the key itself must be present.
    func nullableString(_ key: String) throws -> String? {
        _ = try required(key)
        return try optionalString(key)
    }

    /// An instant written as ISO 8601 (`2026-03-29T01:30:00Z`, fractions allowed), or nil when absent or null.
    func optionalDate(_ key: String) throws -> Date? {
        guard let text = try optionalString(key) else { return nil }
        let whole = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions.insert(.withFractionalSeconds)
        guard let date = whole.date(from: text) ?? fractional.date(from: text) else {
            throw error("\(name(key)) is not an ISO 8601 instant (like 2026-03-29T01:30:00Z): \(text)")
        }
        return date
    }

    /// An array of strings, or empty when absent.
    func strings(_ key: String) throws -> [String] {
        guard let value = values[key] else { return [] }
        guard case .array(let items) = value else { throw wrongType(key, "an array of strings", value) }
        return try items.map { item in
            guard case .string(let text) = item else { throw wrongType(key, "an array of strings", value) }
            return text
        }
    }

    func optionalURL(_ key: String) throws -> URL? {
        guard let text = try optionalString(key) else { return nil }
        guard let url = URL(string: text) else { throw error("\(name(key)) is not a URL: \(text)") }
        return url
    }

    func number(_ key: String) throws -> Double {
        let value = try required(key)
        guard case .number(let number) = value, number.isFinite else { throw wrongType(key, "a number", value) }
        return number
    }

    func optionalNumber(_ key: String) throws -> Double? {
        values[key] == nil ? nil : try number(key)
    }

    func optionalBool(_ key: String) throws -> Bool? {
        guard let value = values[key] else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(key, "true or false", value) }
        return flag
    }

    func bool(_ key: String) throws -> Bool {
        _ = try required(key)
        return try optionalBool(key)!
    }

    func object(_ key: String) throws -> TraceFields {
        let value = try required(key)
        guard case .object(let fields) = value else { throw wrongType(key, "an object", value) }
        return TraceFields(line: line, path: "\(path)\(key).", values: fields)
    }

    /// Whether `key` is there.
    func has(_ key: String) -> Bool { values[key] != nil }

    /// An array of objects (absent: none).
    func objects(_ key: String) throws -> [TraceFields] {
        guard let value = values[key] else { return [] }
        guard case .array(let items) = value else { throw wrongType(key, "an array", value) }
        return try items.enumerated().map { index, item in
            guard case .object(let fields) = item else { throw wrongType("\(key)[\(index)]", "an object", item) }
            return TraceFields(line: line, path: "\(path)\(key)[\(index)].", values: fields)
        }
    }

    /// A string naming one case of `T`.
    func choice<T: RawRepresentable & CaseIterable>(_ key: String, of _: T.Type, among cases: [T]? = nil) throws -> T
    where T.RawValue == String {
        let text = try string(key)
        let allowed = cases ?? Array(T.allCases)
        guard let value = T(rawValue: text), allowed.contains(where: { $0.rawValue == text }) else {
            let names = allowed.map { "`\($0.rawValue)`" }.joined(separator: ", ")
            throw error("\(name(key)) must be one of \(names), not `\(text)`")
        }
        return value
    }

    /// Seconds as a ``Duration``, to the microsecond.
    func seconds(_ key: String, allowZero: Bool) throws -> Duration? {
        guard let value = try optionalNumber(key) else { return nil }
        guard allowZero ? value >= 0 : value > 0 else {
            throw error("\(name(key)) must be \(allowZero ? "zero or more" : "more than zero") seconds")
        }
        guard value <= Self.maxSeconds else { throw error("\(name(key)) must be at most \(Int(Self.maxSeconds)) seconds") }
        return Duration(seconds: value)
    }

    /// The most seconds a time or a span may be (about 31 years): a ``Duration`` to the microsecond holds it, and
    /// the engine's sums of such do too.
    static let maxSeconds: Double = 1_000_000_000
}

extension Duration {
    /// A duration of `seconds`, rounded to the microsecond.
    init(seconds: Double) {
        self = .microseconds(Int64((seconds * 1_000_000).rounded()))
    }

    /// This duration in seconds, rounded to the microsecond (so `5.1` prints as `5.1`).
    var roundedSeconds: Double {
        (seconds * 1_000_000).rounded() / 1_000_000
    }
}
