import Foundation
import HeraldClient
import HeraldCore

/// Everything the chat screen shows: conversations, the open one, the input line, the banner, the connection.
struct ChatModel {
    /// One conversation as the list and the chat view show it.
    struct Room {
        var conversation: Conversation
        /// One line of the chat: a message, or an event's line (its `sender` empty and its `text` the whole line).
        struct Line: Equatable {
            var sender: String
            var text: String
            var mine: Bool
            var seq: Int64
            /// Whether it mentions the user.
            var mention: Bool
            /// The message's id (an event's own).
            var id: String = ""
            /// Whether it was deleted: its text is the tombstone's.
            var deleted = false
        }

        /// Messages and events in seq order.
        var messages: [Line] = []
        var names: [String: String] = [:]
        var unread = 0
        var lastSeq: Int64 = 0
        /// The user's read marker here, as the server has it (or will, once ``ChatModel/takeReads()`` are sent).
        var readUpTo: Int64 = 0
        /// The user was removed from this group, left it, or it was deleted: it takes no more messages.
        var removed = false

        /// A line of the chat view: `Name: text`, or an event's line after a dot.
        static func line(_ message: Line) -> String {
            message.sender.isEmpty ? "· " + message.text : (message.mine ? "You" : message.sender) + ": " + message.text
        }
    }

    /// The banner on screen, entering or leaving.
    struct BannerView {
        var banner: Banner
        var since: ContinuousClock.Instant
        var leaving = false
    }

    let me: String
    let formatter = ContentFormatter.standard
    var connection: ConnectionState = .connecting {
        didSet { if connection == .live, oldValue != .live { resendFailedReads = true } }
    }
    private(set) var rooms: [Room] = []
    private(set) var openID: String?
    var input = LineEditor()
    /// How many lines the chat view is scrolled up from its newest line.
    var scroll = 0
    var banner: BannerView?
    var paused = false
    /// Whether the terminal has focus; without it the app counts as in the background.
    var terminalFocused = true
    var notice: String?
    /// Read markers the server did not take (conversation id → seq), sent again once the connection is live again.
    private var failedReads: [String: Int64] = [:]
    private var resendFailedReads = false

    init(me: String) {
        self.me = me
    }

    /// A message from the stream: into its room, counted unread unless it is open or mine. Everything in it that
    /// came from the network is cleaned for the terminal (``TerminalText``) before it is kept.
    mutating func receive(_ incoming: IncomingMessage) {
        let index = roomIndex(for: incoming.conversation)
        let mine = incoming.sender.id == me
        let name = Self.name(of: incoming.sender)
        rooms[index].names[incoming.sender.id] = name
        let seq = incoming.message.seq ?? rooms[index].lastSeq
        if let event = incoming.message.event, event.isAmendment, let target = event.messageID {
            // An edit or a deletion changes its message's line in place; it has none of its own.
            amend(target, in: index, by: incoming)
            rooms[index].lastSeq = max(rooms[index].lastSeq, seq)
            return
        }
        if let event = incoming.message.event {
            // A quiet line in the chat, never unread; one that ends the user's membership closes the room.
            let line = TerminalText.clean(formatter.line(for: incoming, viewer: me))
            rooms[index].messages.append(Room.Line(sender: "", text: line, mine: mine, seq: seq, mention: false, id: incoming.message.id))
            rooms[index].lastSeq = max(rooms[index].lastSeq, seq)
            if event.ends(me, senderID: incoming.message.senderID) { rooms[index].removed = true }
            if event.kind == .memberAdded, event.concerns(me) { rooms[index].removed = false }
            rooms.sort { $0.lastSeq > $1.lastSeq }
            return
        }
        // Highlighted: a message that names the user or everyone (not every message of a direct chat).
        let mention = !mine && incoming.message.names(me)
        // The app's backend speaks in brackets (`[Admin]: …`): no person's line looks like its (a person whose name
        // reads as the system's is `Admin (member)`).
        let speaker = incoming.message.isSystem ? "[\(name)]" : name
        rooms[index].messages.append(Room.Line(
            sender: speaker, text: Self.body(of: incoming), mine: mine, seq: seq, mention: mention, id: incoming.message.id,
            deleted: incoming.message.deleted))
        rooms[index].lastSeq = max(rooms[index].lastSeq, seq)
        if mine {
            // Posting moves one's own read marker past one's message (the server does the same).
            rooms[index].readUpTo = max(rooms[index].readUpTo, seq)
        } else if incoming.conversation.id != openID, seq > rooms[index].readUpTo {
            rooms[index].unread += 1
        }
        rooms.sort { $0.lastSeq > $1.lastSeq }
    }

    /// Applies an edit or a deletion (`amendment`) to the message `target` of the room at `index`: the new text with
    /// `(edited)`, or the tombstone's words; a deleted unread message is no longer unread.
    private mutating func amend(_ target: String, in index: Int, by amendment: IncomingMessage) {
        guard let line = rooms[index].messages.lastIndex(where: {
            !$0.sender.isEmpty && $0.id.utf8.elementsEqual(target.utf8)
        }) else { return }
        let old = rooms[index].messages[line]
        guard !old.deleted else { return }
        if amendment.message.event?.kind == .messageDeleted {
            rooms[index].messages[line].text = formatter.deletedPlaceholder
            rooms[index].messages[line].deleted = true
            rooms[index].messages[line].mention = false
            if !old.mine, old.seq > rooms[index].readUpTo, rooms[index].unread > 0 { rooms[index].unread -= 1 }
        } else {
            let edited = Message(
                id: target, conversationID: amendment.conversation.id, senderID: amendment.message.senderID,
                text: amendment.message.text)
            rooms[index].messages[line].text = TerminalText.clean(Self.fullText.preview(of: edited)) + " (edited)"
            rooms[index].messages[line].mention = !old.mine && amendment.message.names(me)
        }
    }

    /// The id of the user's last message in the open chat that is not deleted: what `/edit` and `/delete` change.
    var lastOwnMessageID: String? {
        openRoom?.messages.last { $0.mine && !$0.sender.isEmpty && !$0.deleted && !$0.id.isEmpty }?.id
    }

    /// The whole text on one line, with the formatter's placeholders for an image or nothing (no 50-character cut:
    /// the chat view shows messages in full, wrapped).
    private static let fullText = ContentFormatter(previewLimit: .max)

    private static func body(of incoming: IncomingMessage) -> String {
        TerminalText.clean(fullText.preview(of: incoming.message))
    }

    /// A person's name as the formatter words it, cleaned for the terminal.
    private static func name(of person: Person) -> String {
        TerminalText.clean(ContentFormatter.standard.name(of: person))
    }

    /// Opens a conversation (nil: none); its unread count clears, and its view shows its newest lines.
    mutating func open(_ conversationID: String?) {
        if conversationID != openID { scroll = 0 }
        openID = conversationID
        if let index = rooms.firstIndex(where: { $0.conversation.id == conversationID }) {
            rooms[index].unread = 0
        }
    }

    /// A conversation the server lists, with the members who have names: a room for it if it has none yet (a chat
    /// with no messages still belongs in the list), and the names it is shown by.
    mutating func learn(_ conversation: Conversation, people: [Person]) {
        let index = roomIndex(for: conversation)
        for person in people where rooms[index].names[person.id] == nil {
            rooms[index].names[person.id] = Self.name(of: person)
        }
    }

    /// The index of `conversation`'s room, made (at the end of the list) if there is none. The title is kept
    /// cleaned for the terminal, and follows a renamed group.
    private mutating func roomIndex(for conversation: Conversation) -> Int {
        var conversation = conversation
        conversation.title = conversation.title.map(TerminalText.clean)
        if let existing = rooms.firstIndex(where: { $0.conversation.id == conversation.id }) {
            rooms[existing].conversation.title = conversation.title
            return existing
        }
        rooms.append(Room(conversation: conversation))
        return rooms.count - 1
    }

    /// The user's read markers from the server (conversation id → seq): each chat's unread count becomes the
    /// messages from others after its marker, so counts carry over from earlier sessions and other devices.
    mutating func applyReadMarkers(_ markers: [String: Int64]) {
        for index in rooms.indices {
            guard let marker = markers[rooms[index].conversation.id] else { continue }
            rooms[index].readUpTo = max(rooms[index].readUpTo, marker)
            let room = rooms[index]
            rooms[index].unread = room.conversation.id == openID
                ? 0 : room.messages.count { !$0.mine && !$0.sender.isEmpty && !$0.deleted && $0.seq > room.readUpTo }
        }
    }

    /// The read markers to send now, recorded as sent: the open chat's, if it moved (what is on screen counts as
    /// read, but only while the terminal has focus), and, after a reconnect, those that failed before.
    mutating func takeReads() -> [(conversationID: String, seq: Int64)] {
        var reads: [String: Int64] = [:]
        if resendFailedReads {
            reads = failedReads
            failedReads = [:]
            resendFailedReads = false
        }
        if terminalFocused, let index = rooms.firstIndex(where: { $0.conversation.id == openID }),
           rooms[index].lastSeq > rooms[index].readUpTo {
            rooms[index].readUpTo = rooms[index].lastSeq
            reads[rooms[index].conversation.id] = rooms[index].lastSeq
        }
        return reads.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// A read marker the server did not take: kept, and sent again after the next reconnect (not at once: a server
    /// that refuses now would be asked again and again).
    mutating func readFailed(_ conversationID: String, upTo seq: Int64) {
        failedReads[conversationID] = max(failedReads[conversationID] ?? 0, seq)
    }

    /// The conversation `offset` places from the open one in the list (the first one when none is open).
    func neighbour(_ offset: Int) -> String? {
        guard !rooms.isEmpty else { return nil }
        guard let current = rooms.firstIndex(where: { $0.conversation.id == openID }) else {
            return rooms.first?.conversation.id
        }
        return rooms[(current + offset + rooms.count) % rooms.count].conversation.id
    }

    /// The open conversation.
    var openRoom: Room? { rooms.first { $0.conversation.id == openID } }

    /// The open room's members other than the user, with the names the chat shows.
    var openMembers: [Person] {
        guard let room = openRoom else { return [] }
        return room.names.filter { $0.key != me }.sorted { $0.value < $1.value }
            .map { Person(id: $0.key, displayName: $0.value) }
    }

    /// Tab after `@` and a name's beginning: the first member's name that completes it (or `all`), then a space.
    /// Nothing happens elsewhere.
    mutating func completeMention() {
        let (word, start) = input.wordBeforeCursor
        guard word.hasPrefix("@") else { return }
        guard let name = MentionText.completions(of: String(word.dropFirst()), members: openMembers).first else {
            notice = "no member's name starts with \(word)"
            return
        }
        input.replace(from: start, with: "@" + name + " ")
    }

    /// A room's name: the group's title, or the other person in a direct chat.
    func title(of room: Room) -> String {
        if room.conversation.kind == .group { return formatter.groupTitle(of: room.conversation) }
        return room.names.first { $0.key != me }?.value ?? "Direct chat"
    }
}

/// A command typed in the input line: a change to the open group (`/add`, `/remove`, `/rename`, `/leave`), the open
/// chat's notification level (`/notify`), or do not disturb (`/snooze`).
enum ChatCommand: Equatable {
    case add([String])
    case remove(String)
    case rename(String?)
    case leave
    /// The open chat's level (nil: the default again), for a while or for ever.
    case notify(NotificationLevel?, For)
    /// Do not disturb for a while; `.always` with `off`: no longer.
    case snooze(For?)
    /// Edit the user's last message in the open chat.
    case edit(String)
    /// Delete the user's last message in the open chat.
    case delete

    /// How long a choice holds.
    enum For: Equatable {
        case hours(Int)
        /// Until tomorrow 08:00, local time.
        case tomorrow
        case always

        /// When it ends, from `now` in `calendar`'s time zone; nil for ever.
        func end(from now: Date, calendar: Calendar = .current) -> Date? {
            switch self {
            case .hours(let hours): return now.addingTimeInterval(TimeInterval(hours) * 3600)
            case .tomorrow:
                let today = calendar.startOfDay(for: now)
                let tomorrow = calendar.date(byAdding: .day, value: 1, to: today) ?? today.addingTimeInterval(86_400)
                return calendar.date(bySettingHour: 8, minute: 0, second: 0, of: tomorrow)
            case .always: return nil
            }
        }

        static func parse(_ word: String?) -> For? {
            switch word {
            case nil, "always": return .always
            case "tomorrow": return .tomorrow
            case let word? where word.hasSuffix("h"):
                guard let hours = Int(word.dropLast()), (1...24 * 7).contains(hours) else { return nil }
                return .hours(hours)
            default: return nil
            }
        }
    }

    /// Whether it changes the open group (the others hold in any chat).
    var changesGroup: Bool {
        switch self {
        case .add, .remove, .rename, .leave: true
        case .notify, .snooze, .edit, .delete: false
        }
    }

    /// What the commands are, for a notice.
    static let usage = "commands: /add ID [ID...], /remove ID, /rename TITLE, /leave, /notify LEVEL [FOR], /snooze FOR, /edit TEXT, /delete"
    /// How `/notify` is written.
    static let notifyUsage = "usage: /notify all|mentions|nothing|default [1h|8h|tomorrow|always]"
    /// How `/snooze` is written.
    static let snoozeUsage = "usage: /snooze 1h|8h|tomorrow|off (up to 168h)"

    /// The command `line` is, nil when it is not one (it does not start with `/`); a line that starts with `/` but
    /// is no command is an error naming the commands.
    static func parse(_ line: String) -> Result<ChatCommand, CommandError>? {
        guard line.hasPrefix("/") else { return nil }
        let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        let rest = words.dropFirst()
        switch words.first {
        case "/add" where !rest.isEmpty: return .success(.add(Array(rest)))
        case "/remove" where rest.count == 1: return .success(.remove(rest.first!))
        case "/rename":
            let title = line.dropFirst("/rename".count).trimmingCharacters(in: .whitespaces)
            return .success(.rename(title.isEmpty ? nil : title))
        case "/leave" where rest.isEmpty: return .success(.leave)
        case "/edit":
            let text = line.dropFirst("/edit".count).trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { return .failure(CommandError(message: "usage: /edit NEW TEXT (your last message here)")) }
            return .success(.edit(text))
        case "/delete" where rest.isEmpty: return .success(.delete)
        case "/notify":
            let level = rest.first.flatMap(NotificationLevel.init(rawValue:))
            guard (1...2).contains(rest.count), level != nil || rest.first == "default",
                  let span = For.parse(rest.dropFirst().first)
            else { return .failure(CommandError(message: notifyUsage)) }
            return .success(.notify(level, level == nil ? .always : span))
        case "/snooze":
            if rest.count == 1, rest.first == "off" { return .success(.snooze(nil)) }
            guard rest.count == 1, let span = For.parse(rest.first), span != .always else {
                return .failure(CommandError(message: snoozeUsage))
            }
            return .success(.snooze(span))
        default: break
        }
        return .failure(CommandError(message: usage))
    }
}

extension ChatCommand {
    /// What a notice says once the server took it.
    func done(ending end: Date?) -> String {
        let until = end.map { " until " + $0.formatted(date: .abbreviated, time: .shortened) } ?? ""
        switch self {
        case .notify(let level?, _): return "notifications: \(level.rawValue)\(until)"
        case .notify(nil, _): return "notifications: the default level"
        case .snooze(nil): return "not snoozed any more"
        case .snooze: return "snoozed\(until)"
        case .add, .remove, .rename, .leave, .edit, .delete: return ""
        }
    }
}

/// A line that starts with `/` and is no command.
struct CommandError: Error, Equatable {
    var message: String
}
