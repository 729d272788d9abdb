import Foundation

/// Someone who sends and receives messages.
public struct Person: Codable, Hashable, Sendable, Identifiable {
    /// The user id, as the app's backend knows it (the JWT `sub`).
    public var id: String
    /// The name shown to other people. Blank when unknown.
    public var displayName: String
    /// A picture to show instead of initials, if any.
    public var avatarURL: URL?

    /// Creates a person.
    public init(id: String, displayName: String, avatarURL: URL? = nil) {
        self.id = id
        self.displayName = displayName
        self.avatarURL = avatarURL
    }
}
