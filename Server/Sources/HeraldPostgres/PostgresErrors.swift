import HeraldRecords
import _ConnectionPoolModule
import PostgresNIO

extension PSQLError: DatabaseError {
    /// `disk_full` (53100), the `user_erased` triggers' own state (HE001), and a connection that could not be made or
    /// was lost.
    package var failure: DatabaseFailure? {
        if let state = serverInfo?[.sqlState] {
            switch state {
            case "HE001": return .erasedUser
            case "53100": return .diskFull
            default: break
            }
        }
        let lost: [PSQLError.Code] = [.connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed]
        return lost.contains(code) ? .unavailable : nil
    }
}

extension PostgresTransactionError: DatabaseError {
    /// What the error of its begin, its body or its commit means, the first that means something.
    package var failure: DatabaseFailure? {
        [beginError, closureError, commitError].lazy.compactMap { $0.flatMap(DatabaseFailure.of) }.first
    }
}

extension ConnectionPoolError: DatabaseError {
    /// The pool could not give a connection: the database is away (a request cancelled is not).
    package var failure: DatabaseFailure? { self == .requestCancelled ? nil : .unavailable }
}
