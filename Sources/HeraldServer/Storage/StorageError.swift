/// Why a database cannot be used, in words for the person running the server.
public struct StorageError: Error, CustomStringConvertible {
    /// What is wrong, and what to do about it.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// What a store refuses, or finds wrong, in its own terms; ``StorageFailure/apiError(for:)`` says what the API
/// answers for each.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// The message id is already used by another member's message in the same conversation.
    case idTaken(String)
    /// The user already has this many devices, and the one being registered is new.
    case deviceLimit(Int)
    /// A row that does not read back as it was written, or a write that left no row.
    case damaged(String)
    /// The store is closing and takes no more work.
    case closing

    public var description: String {
        switch self {
        case .idTaken(let id): "message id \(id) is already used by another message in this conversation"
        case .deviceLimit(let limit): "a user has at most \(limit) devices; remove old ones (DELETE /v1/devices/{deviceId})"
        case .damaged(let what): "damaged data: \(what)"
        case .closing: "the server is shutting down"
        }
    }
}
