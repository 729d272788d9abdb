/// Why a database cannot be used, in words for the person running the server.
public struct StorageError: Error, CustomStringConvertible {
    /// What is wrong, and what to do about it.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
