import _ConnectionPoolModule
import PostgresNIO

/// What the stores' own errors mean to the API, decided here and nowhere else.
enum StorageFailure {
    /// The API's answer to `error` when it is a store's (``StoreError``, or the database being unreachable); nil
    /// for any other error.
    static func apiError(for error: any Error) -> APIError? {
        if let error = error as? StoreError {
            switch error {
            case .idTaken: return APIError(.conflict, .idConflict, error.description)
            case .deviceLimit: return APIError.rateLimited(error.description, retryAfter: 3600)
            case .damaged: return APIError(.internalServerError, .internalError, "the server failed to handle this request")
            case .closing: return APIError(.serviceUnavailable, .internalError, error.description)
            case .conversationNotFound: return .conversationNotFound
            case .notAMember: return .notAMember
            case .directConversation: return APIError(.conflict, .directConversation, error.description)
            case .notAnOwner: return APIError(.forbidden, .notAnOwner, error.description)
            case .memberNotFound: return APIError(.notFound, .memberNotFound, error.description)
            case .memberLimit: return APIError(.conflict, .memberLimit, error.description)
            case .lastOwner: return APIError(.conflict, .lastOwner, error.description)
            case .userNotFound: return APIError(.notFound, .userNotFound, error.description)
            case .userErased: return APIError(.conflict, .userErased, error.description)
            case .conversationExists: return APIError(.conflict, .conversationExists, error.description)
            case .messageNotFound: return APIError(.notFound, .messageNotFound, error.description)
            case .notTheSender: return APIError(.forbidden, .notTheSender, error.description)
            case .editWindowPassed: return APIError(.conflict, .editWindowPassed, error.description)
            case .messageDeleted: return APIError(.conflict, .messageDeleted, error.description)
            case .editLimit: return APIError(.conflict, .editLimit, error.description)
            }
        }
        if isErasedUser(error) { return APIError(.conflict, .userErased, StoreError.userErased.description) }
        if isDiskFull(error) {
            HeraldMetrics.databaseErrors.increment()
            return .storageFull
        }
        guard isUnavailable(error) else { return nil }
        HeraldMetrics.databaseErrors.increment()
        return .databaseUnavailable
    }

    /// Whether `error` is the database refusing to write something of an erased user's (the `user_erased` triggers):
    /// a request that was in flight when the user was erased, or on a node that had not heard yet.
    static func isErasedUser(_ error: any Error) -> Bool {
        switch error {
        case let error as SQLiteFailure:
            error.code & 0xFF == 19 && error.message.contains("user_erased")  // SQLITE_CONSTRAINT, from RAISE
        case let error as PSQLError:
            error.serverInfo?[.sqlState] == "HE001"
        case let error as PostgresTransactionError:
            [error.beginError, error.closureError, error.commitError].contains { $0.map(isErasedUser) ?? false }
        default:
            false
        }
    }

    /// Whether `error` says the database's disk is full: SQLite's `SQLITE_FULL`, PostgreSQL's `disk_full` (53100).
    /// Nothing acknowledged is lost (the write that failed was not acknowledged); writes work again once space is
    /// freed.
    static func isDiskFull(_ error: any Error) -> Bool {
        switch error {
        case let error as SQLiteFailure:
            error.code & 0xFF == 13  // SQLITE_FULL
        case let error as PSQLError:
            error.serverInfo?[.sqlState] == "53100"
        case let error as PostgresTransactionError:
            [error.beginError, error.closureError, error.commitError].contains { $0.map(isDiskFull) ?? false }
        default:
            false
        }
    }

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
