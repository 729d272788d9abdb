import HeraldRecords

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

    /// Whether `error` is the database refusing to write something of an erased user's (``DatabaseFailure/erasedUser``).
    static func isErasedUser(_ error: any Error) -> Bool { DatabaseFailure.of(error) == .erasedUser }

    /// Whether `error` says the database's disk is full (``DatabaseFailure/diskFull``).
    static func isDiskFull(_ error: any Error) -> Bool { DatabaseFailure.of(error) == .diskFull }

    /// Whether `error` says the database cannot be reached now (``DatabaseFailure/unavailable``): the API answers
    /// 503 `database_unavailable`, to be tried again.
    static func isUnavailable(_ error: any Error) -> Bool { DatabaseFailure.of(error) == .unavailable }
}
