import _ConnectionPoolModule
import PostgresNIO

/// Why a database cannot be used, in words for the person running the server.
public struct StorageError: Error, CustomStringConvertible {
    /// What is wrong, and what to do about it.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// What the stores' own errors mean to the API, decided here and nowhere else.
enum StorageFailure {
    /// Whether `error` says the database cannot be reached now (rather than that a request is wrong): the pool could
    /// not connect, or the connection was lost. The API answers 503 `database_unavailable`, to be tried again.
    static func isUnavailable(_ error: any Error) -> Bool {
        switch error {
        case is StorageTimeout:
            true
        case let error as ConnectionPoolError:
            error != .requestCancelled
        case let error as PSQLError:
            [.connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed]
                .contains(error.code)
        case let error as PostgresTransactionError:
            [error.beginError, error.closureError, error.commitError].contains { $0.map(isUnavailable) ?? false }
        default:
            false
        }
    }
}
