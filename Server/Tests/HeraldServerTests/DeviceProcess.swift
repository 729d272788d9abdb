import Foundation
import HeraldTestSupport
import NIOConcurrencyHelpers

/// A phone in a process of its own: `Tests/Web/device.mjs` (the JavaScript client and `LiveNotifications`) under
/// Node, which ``freeze()`` stops (SIGSTOP) as iOS suspends a backgrounded app, its socket open, and ``wake()``
/// resumes. What it prints (its connection's states, the `pushed` frames, the engine's effects) is read as it comes.
final class DeviceProcess: Sendable {
    /// One line it printed.
    struct Line: Sendable {
        let text: String

        private var object: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        }

        /// The connection's state, for a `state` line.
        var state: String? { object["state"] as? String }
        /// The effect's type, for an `effect` line.
        var effect: String? { (object["effect"] as? [String: Any])?["type"] as? String }
        /// The message an effect is about: a `local` notification's, a `skip`'s, a banner's.
        var message: String? {
            guard let effect = object["effect"] as? [String: Any] else { return nil }
            if let notification = effect["notification"] as? [String: Any] { return notification["message"] as? String }
            if let banner = effect["banner"] as? [String: Any] { return banner["id"] as? String }
            return effect["message"] as? String
        }
        /// A `local` notification's identifier.
        var identifier: String? {
            ((object["effect"] as? [String: Any])?["notification"] as? [String: Any]).flatMap {
                guard let seq = $0["seq"] as? Int else { return nil }
                return "herald-\(seq)"
            }
        }
        /// A skip's reason.
        var reason: String? { (object["effect"] as? [String: Any])?["reason"] as? String }
        /// The message a `pushed` frame names.
        var pushed: String? { (object["pushed"] as? [String: Any])?["message"] as? String }
    }

    private let child: ChildProcess
    private let lines = NIOLockedValueBox<[Line]>([])

    /// Starts `user`'s device `device` on the server at `port`, in the `appState` given, with `conversation` open.
    init(port: Int, token: String, user: String, device: String, appState: String = "background", open conversation: String? = nil) throws {
        let script = packageRoot.appendingPathComponent("Tests/Web/device.mjs").path
        child = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["node", "--experimental-websocket", "--no-warnings", script, "http://127.0.0.1:\(port)", token, user, device, appState]
                + (conversation.map { [$0] } ?? []),
            output: .pipe, errors: .file(FileManager.default.temporaryDirectory.appendingPathComponent("herald-device-\(UUID().uuidString).log")),
            removingErrorFile: true)
        let output = child.output!
        let lines = lines
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = output.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let text = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    lines.withLockedValue { $0.append(Line(text: text)) }
                }
            }
        }
    }

    /// Everything it printed so far.
    var printed: [Line] { lines.withLockedValue { $0 } }

    /// Waits (up to `timeout`) until `condition` holds of what it printed.
    func wait(_ what: String, timeout: Duration = .seconds(30), until condition: ([Line]) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(printed) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("the device never printed \(what); it printed:\n\(printed.map(\.text).joined(separator: "\n"))\n\(child.logTail())")
    }

    /// Waits until its stream is live (`times` connections so far).
    func live(times: Int = 1) async throws {
        try await wait("its stream live") { $0.filter { $0.state == "live" }.count >= times }
    }

    /// SIGSTOP: the process, and so its socket's reader, stops; the socket stays open.
    func freeze() { child.signal(SIGSTOP) }

    /// SIGCONT: it runs again and reads what waited.
    func wake() { child.signal(SIGCONT) }

    /// The messages it notified with a system notification.
    var notified: [String] { printed.filter { $0.effect == "local" }.compactMap(\.message) }

    /// The messages it skipped because the server pushed them.
    var skippedAsPushed: [String] { printed.filter { $0.effect == "skip" && $0.reason == "pushed" }.compactMap(\.message) }
}
