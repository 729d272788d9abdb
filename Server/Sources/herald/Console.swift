import Foundation

/// What `herald` writes for people: standard output and standard error.
///
/// A write that fails (the terminal hung up, the reader of a pipe went away, the descriptor was closed) is reported
/// as `false`, never a crash: Foundation's `FileHandle.write(_:)` traps on any error, and a server must not end over
/// its start-up banner.
enum Console {
    /// Writes `text` on standard output; false when it could not be written.
    @discardableResult
    static func out(_ text: String) -> Bool {
        write(text, to: .standardOutput)
    }

    /// Writes `text` on standard error; false when it could not be written.
    @discardableResult
    static func error(_ text: String) -> Bool {
        write(text, to: .standardError)
    }

    private static func write(_ text: String, to handle: FileHandle) -> Bool {
        do {
            try handle.write(contentsOf: Data(text.utf8))
            return true
        } catch {
            return false
        }
    }
}
