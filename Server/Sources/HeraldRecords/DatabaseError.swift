/// What a database's failure means to the layers above its driver, which never read a database's own error types.
package enum DatabaseFailure: Sendable, Hashable {
    /// The database cannot be reached now (rather than that a request is wrong): try again later.
    case unavailable
    /// Its disk is full: nothing acknowledged is lost, and writes work again once space is freed.
    case diskFull
    /// It refused to write something of an erased user's (the `user_erased` triggers): a request that was in flight
    /// when the user was erased, or on a node that had not heard yet.
    case erasedUser

    /// What `error` means, when a driver (or the bound on a database's answer) threw it and it means one of these.
    package static func of(_ error: any Error) -> DatabaseFailure? {
        (error as? any DatabaseError)?.failure
    }
}

/// An error a database driver throws, saying in the store's terms what it means; each driver's errors conform.
package protocol DatabaseError: Error {
    /// What it means, nil for anything else (a query that is wrong, a constraint a request broke).
    var failure: DatabaseFailure? { get }
}

extension StorageTimeout: DatabaseError {
    package var failure: DatabaseFailure? { .unavailable }
}
