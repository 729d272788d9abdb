import HeraldClient
import HeraldCore

/// Draws the model: a pure function from model, size and time to the terminal's lines (with ANSI styles).
///
/// ```
/// Herald · alice · live
/// Team Chat        2 │ Bob: Morning all!
/// > Bob              │ Alice Johnson: Yes!
/// ...
/// ↑↓ chats · Enter send · ^O open banner · ^X dismiss · ^P pause · ^C quit
/// > typed text
/// ```
/// The banner is drawn over the top rows, above everything, sliding down as it enters and up as it leaves.
enum ChatScreen {
    static let bold = "\u{1B}[1m", dim = "\u{1B}[2m", reverse = "\u{1B}[7m", reset = "\u{1B}[0m"
    static let listWidth = 24
    static let slideStep: Duration = .milliseconds(60)
    /// The key hints, longest first: the first that fits the terminal is shown, so `^C quit` is always there.
    static let helps = [
        "↑↓ chats · Enter send · PgUp/PgDn scroll · ^O open · ^X dismiss · ^P pause · ^C quit",
        "↑↓ chats · Enter send · PgUp/Dn scroll · ^O open · ^X close · ^P pause · ^C quit",
        "↑↓ chats · Enter send · PgUp/Dn · ^O open · ^X close · ^P pause · ^C quit",
        "↑↓ chats · ⏎ send · PgUp/Dn · ^O open · ^X close · ^P pause · ^C quit",
        "↑↓ ⏎ PgUp/Dn · ^O open · ^X close · ^P pause · ^C quit",
        "^O open · ^X close · ^P pause · ^C quit",
        "^O ^X ^P · ^C quit",
    ]

    /// The key hints for a terminal `columns` wide, after `notice` if there is one.
    static func help(columns: Int, notice: String?) -> String {
        let prefix = notice.map { "\($0) · " } ?? ""
        let room = columns - TextWidth.of(prefix)
        let hint = helps.first { TextWidth.of($0) <= room } ?? helps[helps.count - 1]
        return prefix + hint
    }

    static func render(_ model: ChatModel, rows: Int, columns: Int, now: ContinuousClock.Instant) -> [String] {
        let rows = max(rows, 6), columns = max(columns, 30)
        var lines: [String] = []
        let title = model.openRoom.map { " · \(model.title(of: $0))" } ?? ""
        let away = model.terminalFocused ? "" : " · away: desktop notifications"
        lines.append(reverse + TextWidth.pad(" Herald · \(model.me)\(title) · \(state(model.connection))\(away)", columns: columns) + reset)

        let bodyRows = rows - 3
        let chatWidth = columns - listWidth - 3
        let history = model.openRoom.map { Self.historyRows($0, width: chatWidth, rows: bodyRows, scroll: model.scroll) }
            ?? [("", false), ("  Choose a chat with ↑ and ↓.", false)]
        let view = Array(repeating: ("", false), count: max(0, bodyRows - history.count)) + history.suffix(bodyRows)
        let list = listLines(model)
        for row in 0..<bodyRows {
            let left = row < list.count ? list[row] : String(repeating: " ", count: listWidth)
            let text = TextWidth.pad(view[row].0, columns: chatWidth)
            // A message that mentions the user stands out: bold.
            lines.append(left + " │ " + (view[row].1 ? bold + text + reset : text))
        }
        lines.append(dim + TextWidth.pad(help(columns: columns, notice: model.notice), columns: columns) + reset)
        lines.append(inputLine(model.input, columns: columns))

        let overlay = banner(model, columns: columns, now: now)
        for (index, line) in overlay.enumerated() where index < lines.count {
            lines[index] = line
        }
        return lines
    }

    /// The connection as the title bar says it, with the reason when something is wrong.
    static func state(_ connection: ConnectionState) -> String {
        switch connection {
        case .connecting: "connecting"
        case .live: "live"
        case .paused: "paused"
        case .reconnecting(let attempt, let delay, let reason):
            "reconnecting (\(attempt)) in \(Int(delay.seconds.rounded(.up))) s: \(reason)"
        case .refused(let code, _): "refused by the server: \(code)"
        }
    }

    /// The room's messages wrapped to `width`, the `rows` lines that end `scroll` lines above the newest.
    static func historyLines(_ room: ChatModel.Room, width: Int, rows: Int, scroll: Int) -> [String] {
        historyRows(room, width: width, rows: rows, scroll: scroll).map(\.text)
    }

    /// ``historyLines(_:width:rows:scroll:)`` with, for each line, whether its message mentions the user.
    static func historyRows(_ room: ChatModel.Room, width: Int, rows: Int, scroll: Int) -> [(text: String, mention: Bool)] {
        var lines: [(text: String, mention: Bool)] = []
        // Only as many messages as can fill the view from where it is scrolled to.
        for message in room.messages.reversed() {
            let wrapped = TextWidth.wrap(ChatModel.Room.line(message), columns: width).map { ($0, message.mention) }
            lines.insert(contentsOf: wrapped, at: 0)
            if lines.count >= rows + scroll { break }
        }
        let end = max(min(rows, lines.count), lines.count - scroll)
        return Array(lines[max(0, end - rows)..<end])
    }

    /// How far the open room's view can scroll up on a terminal of this size: until its oldest line is at the top.
    static func maxScroll(_ model: ChatModel, rows: Int, columns: Int) -> Int {
        guard let room = model.openRoom else { return 0 }
        let width = max(columns, 30) - listWidth - 3
        let total = room.messages.reduce(0) { count, message in
            count + TextWidth.wrap(ChatModel.Room.line(message), columns: width).count
        }
        return max(0, total - (max(rows, 6) - 3))
    }

    /// `> ` and the typed line, scrolled sideways to keep the cursor in view, the cursor drawn in reverse video.
    static func inputLine(_ input: LineEditor, columns: Int) -> String {
        let room = columns - 3
        let characters = input.characters
        var start = 0
        while TextWidth.of(String(characters[start..<input.cursor])) > room - 1 { start += 1 }
        var visible = "", width = 0
        var index = start
        while index <= characters.count {
            let character: Character = index < characters.count ? characters[index] : " "
            let size = max(1, TextWidth.of(character))
            guard width + size <= room else { break }
            visible += index == input.cursor ? reverse + String(character) + reset : String(character)
            width += size
            index += 1
        }
        return "> " + visible + String(repeating: " ", count: max(0, columns - 2 - width))
    }

    /// The conversation list: each chat's name with its unread count, then its last message, dimmed.
    static func listLines(_ model: ChatModel) -> [String] {
        model.rooms.flatMap { room -> [String] in
            let open = room.conversation.id == model.openID
            let unread = room.unread > 0 ? " \(room.unread)" : ""
            let name = TextWidth.fit(model.title(of: room), columns: listWidth - 2 - TextWidth.of(unread))
            let gap = String(repeating: " ", count: max(0, listWidth - 2 - TextWidth.of(name) - TextWidth.of(unread)))
            let head = TextWidth.pad((open ? "> " : "  ") + name + gap + unread, columns: listWidth)
            let last = room.messages.last.map {
                $0.sender.isEmpty ? $0.text : ($0.mine ? "You" : $0.sender.split(separator: " ").first.map(String.init) ?? "") + ": " + $0.text
            } ?? ""
            return [open ? bold + head + reset : head, dim + TextWidth.pad("  " + last, columns: listWidth) + reset]
        }
    }

    /// The banner's visible rows: the bottom of its box, more of it each step as it slides down.
    static func banner(_ model: ChatModel, columns: Int, now: ContinuousClock.Instant) -> [String] {
        guard let view = model.banner else { return [] }
        let box = boxLines(view.banner, paused: model.paused, columns: columns)
        let steps = Int(view.since.duration(to: now) / slideStep)
        let visible = view.leaving ? box.count - 1 - steps : steps + 1
        guard visible > 0 else { return [] }
        return Array(box.suffix(min(box.count, visible)))
    }

    /// The banner box: 2 columns of margin each side, initials, bold name, `in <group>`, the preview.
    static func boxLines(_ banner: Banner, paused: Bool, columns: Int) -> [String] {
        let width = columns - 4
        let inner = width - 4
        let margin = "  "
        var headline: String
        let banner = cleaned(banner)
        let initials = banner.initials.map { "[\($0)] " } ?? ""
        let subtitle = banner.subtitle.map { " " + $0 } ?? ""
        let count = banner.count > 1 ? " (\(banner.count))" : ""
        let pause = paused ? "  ⏸" : ""
        headline = TextWidth.fit(initials + banner.title + count + subtitle + pause, columns: inner)
        let plainHeadline = headline
        let nameEnd = initials.count + banner.title.count
        if plainHeadline.count >= nameEnd {
            let prefix = String(plainHeadline.prefix(initials.count))
            let name = String(plainHeadline.dropFirst(initials.count).prefix(banner.title.count))
            let rest = String(plainHeadline.dropFirst(nameEnd))
            headline = prefix + bold + name + reset + reverse + rest
        }
        let padding = String(repeating: " ", count: max(0, inner - TextWidth.of(plainHeadline)))
        let body = TextWidth.pad(banner.body ?? "", columns: inner)
        return [
            margin + "╭" + String(repeating: "─", count: width - 2) + "╮" + margin,
            margin + "│ " + reverse + headline + padding + reset + " │" + margin,
            margin + "│ " + body + " │" + margin,
            margin + "╰" + String(repeating: "─", count: width - 2) + "╯" + margin,
        ]
    }

    /// The banner with every text from the network cleaned for the terminal.
    static func cleaned(_ banner: Banner) -> Banner {
        var banner = banner
        banner.title = TerminalText.clean(banner.title)
        banner.subtitle = banner.subtitle.map(TerminalText.clean)
        banner.body = banner.body.map(TerminalText.clean)
        return banner
    }
}
