import CTerminal
import Dispatch
import Foundation
import HeraldClient
import HeraldCore
import HeraldProtocol

/// `herald chat`: a full-screen terminal client driven by ``LiveNotifications``, the same engine as every client.
///
/// The terminal's focus reporting stands for foreground and background: with the terminal unfocused, messages
/// become desktop notifications through OSC 9 and OSC 777. The terminal is restored on exit, Ctrl-C and SIGTERM.
public final class TerminalChat: Sendable {
    private enum Input: Sendable {
        case bytes([UInt8])
        case resize
        case quit
        case client(ClientEvent)
        case effect(NotificationEffect)
        case listed([WireConversationSummary])
        case readFailed(conversationID: String, seq: Int64)
        case notice(String)
        case tick
    }

    /// Work for the server that the chat does not wait for: one task does it, in order.
    private enum Request: Sendable {
        case list
        case markRead(conversationID: String, seq: Int64)
        case change(ChatCommand, conversationID: String)
        /// `/edit` (with text) or `/delete` (without) of the user's message `messageID`.
        case amend(messageID: String, text: String?, mentions: [String], mentionsAll: Bool, conversationID: String)
    }

    private let client: HeraldClient
    private let live: LiveNotifications<ContinuousClock>
    private let me: String

    /// A chat for `userID` over `client`.
    public init(client: HeraldClient, userID: String) {
        self.client = client
        self.me = userID
        // A terminal that lost focus still runs: its stream stays open (and confirms) in the background.
        live = LiveNotifications(client: client, userID: userID, inBackground: .keep)
    }

    /// Runs until the user quits (Ctrl-C, Ctrl-D) or the process gets SIGTERM; the terminal is always restored.
    public func run() async throws {
        guard herald_terminal_raw(STDIN_FILENO) == 0 else {
            throw TerminalError("herald chat needs a terminal (standard input is not one)")
        }
        // Alternate screen, no cursor, focus reporting, and no auto-wrap: terminals disagree about the width of
        // some emoji sequences, and a line one column too wide must be clipped, never wrapped onto the next.
        Self.write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[?1004h\u{1B}[?7l")
        defer {
            Self.write("\u{1B}[?7h\u{1B}[?1004l\u{1B}[?25h\u{1B}[?1049l")
            herald_terminal_restore(STDIN_FILENO)
        }
        let (inputs, sink) = AsyncStream<Input>.makeStream()
        let (requests, requestSink) = AsyncStream<Request>.makeStream()
        let sources = Self.watchTerminal(sink)
        defer { sources.forEach { $0.cancel() } }

        // Subscribed before anything runs, so that no early event is missed.
        let events = client.events()
        let effects = live.effects
        await withDiscardingTaskGroup { group in
            group.addTask { await self.live.run() }
            group.addTask {
                for await event in events { sink.yield(.client(event)) }
            }
            group.addTask {
                for await effect in effects { sink.yield(.effect(effect)) }
            }
            group.addTask {
                for await request in requests { await self.perform(request, answer: sink) }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(60))
                    sink.yield(.tick)
                }
            }
            await self.loop(inputs, requests: requestSink)
            requestSink.finish()
            group.cancelAll()
        }
    }

    private func perform(_ request: Request, answer sink: AsyncStream<Input>.Continuation) async {
        switch request {
        case .list:
            if let list = try? await client.api.conversations() { sink.yield(.listed(list)) }
        case .markRead(let conversationID, let seq):
            do {
                try await client.api.markRead(conversationID, upTo: seq)
            } catch {
                sink.yield(.readFailed(conversationID: conversationID, seq: seq))
            }
        case .change(let command, let conversationID):
            // What changed comes back on the stream as an event; only a refusal is said here (and a level or snooze
            // taken, which changes nothing on screen).
            do {
                switch command {
                case .notify(let level, let span):
                    let end = span.end(from: Date())
                    try await client.api.setLevel(level, until: end, conversationID: conversationID)
                    sink.yield(.notice(command.done(ending: end)))
                case .snooze(let span):
                    let end = span?.end(from: Date())
                    try await client.api.snooze(until: end)
                    sink.yield(.notice(command.done(ending: end)))
                case .add(let ids): try await client.api.addMembers(ids, to: conversationID)
                case .remove(let id): try await client.api.removeMember(id, from: conversationID)
                case .rename(let title): try await client.api.rename(conversationID, to: title)
                case .leave: try await client.api.removeMember(me, from: conversationID)
                case .edit, .delete: break  // sent as `amend`, with the message they change
                }
            } catch let error as HeraldAPIError {
                sink.yield(.notice("not done: \(error.code): \(TerminalText.clean(error.message))"))
            } catch {
                sink.yield(.notice("not done: \(TerminalText.clean(String(describing: error)))"))
            }
        case .amend(let messageID, let text, let mentions, let mentionsAll, let conversationID):
            // The change comes back on the stream and is drawn from there; only a refusal is said here.
            do {
                if let text {
                    try await client.api.editMessage(
                        messageID, in: conversationID, text: text, mentions: mentions, mentionsAll: mentionsAll)
                } else {
                    try await client.api.deleteMessage(messageID, in: conversationID)
                }
            } catch let error as HeraldAPIError {
                sink.yield(.notice("not done: \(error.code): \(TerminalText.clean(error.message))"))
            } catch {
                sink.yield(.notice("not done: \(TerminalText.clean(String(describing: error)))"))
            }
        }
    }

    private func loop(_ inputs: AsyncStream<Input>, requests: AsyncStream<Request>.Continuation) async {
        var model = ChatModel(me: me)
        var listLoaded = false
        var keys = KeyParser()
        var lastFrame: [String] = []
        let clock = ContinuousClock()
        for await input in inputs {
            switch input {
            case .quit:
                return
            case .resize:
                lastFrame = []
            case .tick:
                if let banner = model.banner, banner.leaving, banner.since.duration(to: clock.now) > .seconds(1) {
                    model.banner = nil
                }
            case .client(let event):
                switch event {
                case .message(let incoming): model.receive(incoming)
                case .state(let state):
                    model.connection = state
                    // Once the history is in, the server's list adds the chats without messages, and its read
                    // markers turn the history into unread counts.
                    if state == .live, !listLoaded { requests.yield(.list) }
                    if case .refused(let code, let message) = state {
                        model.notice = "the server refused the token (\(code)): \(TerminalText.clean(message))"
                    }
                case .refused(_, let code, _): model.notice = "not sent: \(code)"
                case .acknowledged, .muted, .level, .notificationSettings, .pushed: break
                }
            case .effect(let effect):
                apply(effect, to: &model, now: clock.now)
            case .listed(let list):
                for summary in list {
                    model.learn(summary.conversation.conversation, people: summary.conversation.people.map(\.person))
                }
                model.applyReadMarkers(Dictionary(list.map { ($0.conversation.id, $0.readUpTo) }) { $1 })
                listLoaded = true
            case .readFailed(let conversationID, let seq):
                model.readFailed(conversationID, upTo: seq)
            case .notice(let text):
                model.notice = text
            case .bytes(let bytes):
                for key in keys.feed(bytes) {
                    if handle(key, model: &model, requests: requests) == false { return }
                }
            }
            for read in model.takeReads() {
                requests.yield(.markRead(conversationID: read.conversationID, seq: read.seq))
            }
            let frame = Self.size().map { ChatScreen.render(model, rows: $0.rows, columns: $0.columns, now: clock.now) } ?? []
            if frame != lastFrame {
                // Each line is erased before it is written, never after: with auto-wrap off the cursor stays on the
                // last column once a full line is written, and erasing from there would take its last character.
                Self.write(frame.enumerated().map { "\u{1B}[\($0.offset + 1);1H\u{1B}[2K" + $0.element }.joined())
                lastFrame = frame
            }
        }
    }

    private func apply(_ effect: NotificationEffect, to model: inout ChatModel, now: ContinuousClock.Instant) {
        switch effect {
        case .show(let banner):
            model.banner = .init(banner: banner, since: now)
            model.paused = false
        case .update(let banner):
            model.banner?.banner = banner
        case .dismiss:
            if let banner = model.banner { model.banner = .init(banner: banner.banner, since: now, leaving: true) }
            model.paused = false
        case .navigate(let conversationID):
            model.open(conversationID)
        case .local(let notification) where notification.onlyIfDelivered:
            // An edit of a notification already written: a terminal cannot take one back, so nothing is written.
            break
        case .local(let notification):
            // The terminal's own notifications: OSC 9 (iTerm2, kitty, WezTerm...) and OSC 777 (rxvt, foot...).
            let title = Self.oscSafe(notification.title), body = Self.oscSafe(notification.body)
            model.notice = "notified: \(title)"
            Self.write("\u{1B}]9;\(title): \(body)\u{07}\u{1B}]777;notify;\(title);\(body)\u{07}")
        case .drop, .skip, .clear, .withdraw:
            break
        }
    }

    /// Handles a key; false to quit.
    private func handle(_ key: Key, model: inout ChatModel, requests: AsyncStream<Request>.Continuation) -> Bool {
        if model.input.apply(key) { return true }
        switch key {
        case .quit:
            return false
        case .enter:
            let text = model.input.text.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty, let open = model.openRoom else { break }
            switch ChatCommand.parse(text) {
            case .success(let command)? where command == .delete || { if case .edit = command { true } else { false } }():
                if let messageID = model.lastOwnMessageID {
                    var newText: String?
                    if case .edit(let text) = command { newText = text }
                    let mentions = MentionText.find(in: newText ?? "", members: model.openMembers)
                    requests.yield(.amend(
                        messageID: messageID, text: newText, mentions: mentions.ids, mentionsAll: mentions.all,
                        conversationID: open.conversation.id))
                    model.notice = nil
                } else {
                    model.notice = "you have no message here to change"
                }
            case .success(let command)? where !command.changesGroup:
                requests.yield(.change(command, conversationID: open.conversation.id))
                model.notice = nil
            case .success(let command)?:
                if open.conversation.kind == .group, !open.removed {
                    requests.yield(.change(command, conversationID: open.conversation.id))
                    model.notice = nil
                } else {
                    model.notice = open.removed ? "you are no longer in this group" : "a direct chat has no members to change"
                }
            case .failure(let error)?:
                model.notice = error.message
            case nil:
                guard !open.removed else {
                    model.notice = "you are no longer in this group"
                    return true
                }
                let mentions = MentionText.find(in: text, members: model.openMembers)
                client.send(text, to: open.conversation.id, mentions: mentions.ids, mentionsAll: mentions.all)
            }
            model.input.clear()
            model.scroll = 0
        case .up, .down:
            if let next = model.neighbour(key == .up ? -1 : 1) {
                model.open(next)
                live.open(next)
            }
        case .pageUp, .pageDown:
            guard let size = Self.size() else { break }
            let page = max(1, size.rows - 4)
            let limit = ChatScreen.maxScroll(model, rows: size.rows, columns: size.columns)
            model.scroll = min(limit, max(0, model.scroll + (key == .pageUp ? page : -page)))
        case .tab:
            model.completeMention()
        case .openBanner:
            live.gesture(.tap)
        case .dismissBanner:
            live.gesture(.close)
        case .pauseBanner:
            guard model.banner != nil else { break }
            model.paused.toggle()
            live.gesture(model.paused ? .touchDown : .touchUp)
        case .focusIn:
            model.terminalFocused = true
            live.setAppState(.foreground)
        case .focusOut:
            model.terminalFocused = false
            live.setAppState(.background)
        default:
            break
        }
        return true
    }

    private static func watchTerminal(_ sink: AsyncStream<Input>.Continuation) -> [any DispatchSourceProtocol] {
        let queue = DispatchQueue(label: "herald.chat.terminal")
        let reader = DispatchSource.makeReadSource(fileDescriptor: STDIN_FILENO, queue: queue)
        reader.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = read(STDIN_FILENO, &buffer, buffer.count)
            if count > 0 { sink.yield(.bytes(Array(buffer[..<count]))) } else { sink.yield(.quit) }
        }
        var sources: [any DispatchSourceProtocol] = [reader]
        for (number, input) in [(SIGWINCH, Input.resize), (SIGTERM, .quit), (SIGINT, .quit), (SIGHUP, .quit)] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { sink.yield(input) }
            sources.append(source)
        }
        sources.forEach { $0.resume() }
        return sources
    }

    private static func size() -> (rows: Int, columns: Int)? {
        var rows: Int32 = 0, columns: Int32 = 0
        guard herald_terminal_size(STDOUT_FILENO, &rows, &columns) == 0 else { return nil }
        return (Int(rows), Int(columns))
    }

    /// Text for an OSC notification: cleaned for the terminal, and without `;`, which separates its fields.
    private static func oscSafe(_ text: String) -> String {
        TerminalText.clean(text).replacingOccurrences(of: ";", with: ",")
    }

    /// Writes `text` to the terminal. A terminal that hung up refuses it (EIO): nothing can show it then, so the
    /// chat goes on to exit (the deprecated `write(_:)` crashed there, and a crash report of the whole binary could
    /// take longer to write than a test waits).
    private static func write(_ text: String) {
        try? FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
    }
}

/// A terminal the chat cannot use.
public struct TerminalError: Error, CustomStringConvertible {
    /// What is wrong.
    public var description: String
    init(_ description: String) { self.description = description }
}
