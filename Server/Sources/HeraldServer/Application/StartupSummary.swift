import Foundation
import HeraldPostgres
import HeraldProtocol

extension ServerConfiguration {
    /// What this server has on, one line each, for the log at start: the database, sign-in, the service API,
    /// webhooks and retention (push providers say their own lines as they start). Secrets are never in it: a
    /// database password is `***`, service keys are counted and named by their ids, a webhook by its origin only (its
    /// path and query may carry a token), the token secret by where it comes from.
    public var summary: [String] {
        var lines: [String] = []
        if let postgresURL {
            lines.append("database: PostgreSQL \(PostgresStore.redacted(postgresURL)) (every node on it shares the messages, presence and outboxes)")
        } else {
            lines.append("database: SQLite \(databasePath)")
        }
        let secret = jwtSecret != nil ? "from HERALD_JWT_SECRET" : postgresURL != nil ? "kept in the database" : "kept in \(databasePath).secret"
        lines.append("sign-in: Herald tokens (HS256, the secret \(secret))" + (demo ? "; the demo's people (--demo)" : ""))
        if openID.issuers.isEmpty {
            lines.append("sign-in: OpenID Connect off (set HERALD_OIDC_ISSUER)")
        } else {
            let audiences = openID.audiences.isEmpty ? "" : ", audiences \(openID.audiences.joined(separator: ", "))"
            let local = openID.allowPrivate ? " (HERALD_OIDC_ALLOW_PRIVATE: on this machine or a private network too)" : ""
            lines.append("sign-in: OpenID Connect from \(openID.issuers.joined(separator: ", "))\(audiences)\(local)")
        }
        lines.append(
            serviceKeys.isEmpty
                ? "service API: off (set HERALD_SERVICE_KEY)"
                : "service API: on, \(serviceKeys.ids.count) key\(serviceKeys.ids.count == 1 ? "" : "s") (\(serviceKeys.ids.joined(separator: ", ")))")
        if let url = webhooks.url {
            let events = webhooks.events.count == WebhookEventType.allCases.count
                ? "every event" : webhooks.events.map(\.rawValue).sorted().joined(separator: ", ")
            let reminder = webhooks.reminder.map { ", unread reminders after \(Self.spoken($0))" } ?? ""
            lines.append("webhooks: on, to \(Self.origin(of: url)) (\(events)\(reminder))")
        } else {
            lines.append("webhooks: off (set HERALD_WEBHOOK_URL)")
        }
        lines.append(retention.map { "retention: messages and events kept \(Self.spoken($0))" } ?? "retention: off, messages kept for ever")
        return lines
    }

    /// `https://api.example.com:8443` of a URL: its scheme, host and port, nothing that could be a credential.
    static func origin(of url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else {
            return "(a URL that does not parse)"
        }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }

    /// A span as a person says it: `30 days`, `12 hours`, `90 minutes`, `45 seconds`.
    static func spoken(_ span: Duration) -> String {
        let seconds = span.components.seconds
        for (unit, size) in [("day", Int64(86_400)), ("hour", 3_600), ("minute", 60)] where seconds >= size && seconds % size == 0 {
            return "\(seconds / size) \(unit)\(seconds / size == 1 ? "" : "s")"
        }
        return "\(seconds) second\(seconds == 1 ? "" : "s")"
    }
}
