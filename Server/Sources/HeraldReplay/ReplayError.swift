/// A trace that cannot be replayed: the line it is on and what is wrong with it.
public struct ReplayError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The 1-based line number in the trace.
    public var line: Int
    /// What is wrong, for a person.
    public var message: String

    /// Creates an error for `line`.
    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    /// `line N: message`.
    public var description: String { "line \(line): \(message)" }
}
