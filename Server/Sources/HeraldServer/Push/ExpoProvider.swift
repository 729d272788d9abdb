import Foundation
import HeraldProtocol
import HeraldRecords
import Logging

/// Expo's push service, for React Native apps built with Expo: `ExponentPushToken[…]` tokens.
///
/// Expo answers a send with a ticket; whether Apple or Google took the push is known later from the ticket's
/// receipt, which Herald asks for after ``receiptDelay`` (a receipt job in the outbox) and which is where
/// `DeviceNotRegistered` usually shows.
public final class ExpoProvider: PushProvider {
    public let platform = DeviceRegistration.Platform.expo
    public let name = "Expo"
    public let concurrency: Int

    /// Expo's server.
    public static let defaultURL = "https://exp.host"

    private let sendURL: String
    private let receiptsURL: String
    private let accessToken: String?
    private let http: PushHTTP
    private let maxAge: Duration
    /// Whether pushes are encrypted to the devices that registered keys (``PushContentMode/encrypted``).
    private let encrypt: Bool

    /// A provider sending to `url` (Expo's by default), with the project's access token if it requires one.
    public init(url: String, accessToken: String?, http: PushHTTP, maxAge: Duration, concurrency: Int, encrypt: Bool = false) {
        self.encrypt = encrypt
        let base = url.trimmingSuffix("/")
        sendURL = base + "/--/api/v2/push/send"
        receiptsURL = base + "/--/api/v2/push/getReceipts"
        self.accessToken = accessToken
        self.http = http
        self.maxAge = maxAge
        self.concurrency = concurrency
    }

    private var headers: [(String, String)] {
        var headers = [("content-type", "application/json"), ("accept", "application/json")]
        if let accessToken { headers.append(("authorization", "Bearer \(accessToken)")) }
        return headers
    }

    /// The message Expo is sent: ranked as APNs and FCM rank it (``PushRank``: `priority`, `ttl`,
    /// `interruptionLevel`), and with `encrypt` its words encrypted to a device with keys (``SealedPush``; the
    /// app's background task or extension decrypts, `mutableContent` lets an iOS extension run).
    func message(for job: PushJob) -> [String: Any] {
        var message: [String: Any] = [:]
        // Expo counts the message, not the token it is addressed to.
        let limit = SealedPush.maxPayload + job.device.token.utf8.count + 16
        _ = SealedPush.payload(of: job, encrypt: encrypt, localized: false, limit: limit) { sealed in
            message = self.message(for: job, sealed: sealed)
            return (try? JSONSerialization.data(withJSONObject: message)) ?? Data()
        }
        return message
    }

    /// The message of `job` told as `sealed`.
    private func message(for job: PushJob, sealed: SealedPush) -> [String: Any] {
        let content = sealed.content
        let rank = PushRank(job, maxAge: maxAge)
        var data = sealed.data
        if content.follows == .edited, !sealed.isEncrypted {
            // Expo has no collapse id to replace a notification by: an edit goes as data, with its words, and the
            // app replaces its own notification (`notificationId`).
            data["title"] = content.title ?? ""
            data["body"] = content.body ?? ""
        }
        var message: [String: Any] = [
            "to": job.device.token,
            "data": data,
            "badge": content.badge,
            "ttl": rank.secondsLeft(of: job),
            "priority": rank.immediate ? "high" : "normal",
        ]
        if job.showsAlert, content.follows == nil {
            message["title"] = content.title ?? ""
            message["body"] = content.body ?? ""
            if let summary = content.summary { message["subtitle"] = summary }
            // The category the app registered its Reply and Mark as read actions under (`setNotificationCategoryAsync`).
            if content.test != true { message["categoryId"] = PushContent.category }
            // Quiet hours or a burst's later message: no sound, passive on iOS.
            if rank.interruption != "passive" { message["sound"] = "default" }
            message["interruptionLevel"] = rank.interruption
            if sealed.isEncrypted {
                // An iOS extension may decrypt it (`mutableContent`); an app in the background (not killed) is
                // woken to, and replaces the `New message` with the words (`_contentAvailable`).
                message["mutableContent"] = true
                message["_contentAvailable"] = true
            }
        } else {
            message["_contentAvailable"] = true
        }
        return message
    }

    public func send(_ job: PushJob) async -> PushOutcome {
        do {
            let body = try JSONSerialization.data(withJSONObject: [message(for: job)], options: [.sortedKeys])
            let answer = try await http.send(.POST, sendURL, headers: headers, body: body)
            if let shared = answer.shared { return shared }
            guard answer.status == .ok else { return .drop(reason: "HTTP \(answer.status.code)") }
            let tickets = answer.json?["data"] as? [[String: Any]] ?? []
            guard let ticket = tickets.first else { return .drop(reason: "no ticket in Expo's answer") }
            if ticket["status"] as? String == "ok" {
                return .sent(ticket: ticket["id"] as? String, id: ticket["id"] as? String)
            }
            return Self.outcome(ofError: ticket)
        } catch {
            return .network(error)
        }
    }

    public func checkReceipt(_ job: PushJob) async -> PushOutcome {
        guard let ticket = job.ticket else { return .sent(ticket: nil) }
        do {
            let body = try JSONSerialization.data(withJSONObject: ["ids": [ticket]])
            let answer = try await http.send(.POST, receiptsURL, headers: headers, body: body)
            if let shared = answer.shared { return shared }
            guard answer.status == .ok else { return .drop(reason: "receipt: HTTP \(answer.status.code)") }
            let receipts = answer.json?["data"] as? [String: Any] ?? [:]
            guard let receipt = receipts[ticket] as? [String: Any] else {
                // Not ready yet: receipts appear within minutes and are kept for a day.
                return .retry(after: .seconds(300), reason: "receipt not ready")
            }
            if receipt["status"] as? String == "ok" { return .sent(ticket: nil) }
            return Self.outcome(ofError: receipt)
        } catch {
            return .network(error)
        }
    }

    /// What an error ticket or receipt means (Expo's "Individual errors").
    static func outcome(ofError item: [String: Any]) -> PushOutcome {
        let code = (item["details"] as? [String: Any])?["error"] as? String ?? "error"
        let reason = "\(code): \(item["message"] as? String ?? "")"
        switch code {
        case "DeviceNotRegistered": return .removeDevice(reason: reason)
        case "MessageRateExceeded": return .retry(after: nil, reason: reason)
        default: return .drop(reason: reason)
        }
    }
}

/// The provider of `--demo` for platforms with no credentials: it sends nothing and logs what it would send.
public struct LogPushProvider: PushProvider {
    public let platform: DeviceRegistration.Platform
    public var name: String { "log (\(platform.rawValue))" }
    public let concurrency = 4
    let logger: Logger

    /// A provider that logs the pushes of `platform`'s devices.
    public init(platform: DeviceRegistration.Platform, logger: Logger) {
        self.platform = platform
        self.logger = logger
    }

    public func send(_ job: PushJob) async -> PushOutcome {
        // Titles and bodies are people's words: control characters are escaped before they reach a terminal.
        let what = job.showsAlert
            ? "\"\(ControlCharacters.escaped(job.content.title ?? ""))\" / \"\(ControlCharacters.escaped(job.content.body ?? ""))\""
            : "clear \(job.content.conversationID) (read elsewhere)"
        logger.notice(
            "push (log only, no \(platform.rawValue) credentials): \(what), badge \(job.content.badge)",
            metadata: ["user": "\(job.device.userID)", "device": "\(job.device.id)"])
        return .logged
    }
}
