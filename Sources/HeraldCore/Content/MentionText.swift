/// Mentions in a message's text, as clients type them: `@` and a member's name, or `@all`. The sender's client finds
/// them (``find(in:members:)``) and sends their ids with the message; completion offers names for what follows an `@`
/// (``completions(of:members:)``). The web page's engine (`findMentions`, `mentionCompletions` in `engine.js`) does the
/// same, held to it by the conformance test.
public enum MentionText {
    /// The word that mentions everyone.
    public static let everyone = "all"

    /// The members `text` mentions (`@Name` at the start of a word, the longest name that matches where several
    /// start alike; names compared without regard to case), in the order they first appear, and whether it mentions
    /// everyone (`@all`).
    public static func find(in text: String, members: [Person]) -> (ids: [String], all: Bool) {
        let folded = text.lowercased()
        // Longest names first, so "@Alice Johnson" is not taken for "@Alice".
        let named = members.filter { !$0.displayName.isEmpty }
            .map { (id: $0.id, name: $0.displayName.lowercased()) }
            .sorted { $0.name.count > $1.name.count }
        var found: [String] = []
        var all = false
        var search = folded.startIndex
        while let at = folded[search...].firstIndex(of: "@") {
            search = folded.index(after: at)
            // An `@` inside a word (an address: mail@host) mentions no one.
            if at > folded.startIndex, case let before = folded[folded.index(before: at)], before.isLetter || before.isNumber {
                continue
            }
            let rest = folded[search...]
            if let person = named.first(where: { rest.hasPrefix($0.name) && endsWord(rest, after: $0.name.count) }) {
                if !found.contains(person.id) { found.append(person.id) }
            } else if rest.hasPrefix(everyone), endsWord(rest, after: everyone.count) {
                all = true
            }
        }
        return (found, all)
    }

    /// The names (and `all`) that complete `prefix`, the text typed after an `@`: those that start with it, without
    /// regard to case, in the members' order, `all` last.
    public static func completions(of prefix: String, members: [Person]) -> [String] {
        let folded = prefix.lowercased()
        let names = members.map(\.displayName).filter { !$0.isEmpty && $0.lowercased().hasPrefix(folded) }
        return names + (everyone.hasPrefix(folded) ? [everyone] : [])
    }

    /// Whether a name of `count` characters at the start of `rest` ends there: at the end, or before a character
    /// that is neither a letter nor a digit.
    private static func endsWord(_ rest: Substring, after count: Int) -> Bool {
        guard let end = rest.index(rest.startIndex, offsetBy: count, limitedBy: rest.endIndex) else { return false }
        return end == rest.endIndex || !(rest[end].isLetter || rest[end].isNumber)
    }
}
