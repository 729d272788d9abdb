import Foundation

/// The limits that keep one client from hurting the others.
public struct ServerLimits: Hashable, Sendable {
    /// The longest message text, in characters.
    public var maxTextLength = 4_000
    /// The largest request body or stream frame Herald handles, in bytes; larger ones get `too_large`.
    public var maxFrameBytes = 64 * 1024
    /// The largest frame the WebSocket layer reads before closing the connection (code 1009).
    public var maxAcceptedFrameBytes = 1024 * 1024
    /// How many frames may wait for one connection before it is dropped as too slow.
    public var streamBufferFrames = 4_096
    /// How many messages one catch-up query reads.
    public var catchUpPageSize = 500

    /// The defaults.
    public init() {}
}

/// Everything `herald serve` can be told: flags, else `HERALD_*` environment variables, else defaults.
public struct ServerConfiguration: Hashable, Sendable {
    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port to listen on; 0 picks a free one.
    public var port = 8080
    /// The SQLite file, or `:memory:`.
    public var databasePath = "herald.sqlite"
    /// The HS256 secret tokens are signed with; nil means the one kept beside the database (made on first start).
    public var jwtSecret: String?
    /// Whether SQLite syncs every commit to disk (survives power loss, slower) rather than only to the OS.
    public var fullSync = false
    /// Whether to create the demo users, conversations and messages.
    public var demo = false
    /// The limits.
    public var limits = ServerLimits()

    /// The defaults: 127.0.0.1:8080, `./herald.sqlite`.
    public init() {}

    /// The defaults overridden by `HERALD_HOST`, `HERALD_PORT`, `HERALD_DATABASE`, `HERALD_JWT_SECRET`,
    /// `HERALD_SQLITE_SYNC` (`full` or `normal`) and `HERALD_DEMO` (`1`).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Self {
        var configuration = ServerConfiguration()
        if let host = environment["HERALD_HOST"], !host.isEmpty { configuration.host = host }
        if let port = environment["HERALD_PORT"].flatMap(Int.init) { configuration.port = port }
        if let path = environment["HERALD_DATABASE"], !path.isEmpty { configuration.databasePath = path }
        if let secret = environment["HERALD_JWT_SECRET"], !secret.isEmpty { configuration.jwtSecret = secret }
        configuration.fullSync = environment["HERALD_SQLITE_SYNC"]?.lowercased() == "full"
        configuration.demo = environment["HERALD_DEMO"] == "1"
        return configuration
    }

    /// The token secret: ``jwtSecret`` if set; for `:memory:` a fresh random one; otherwise the one in the file
    /// beside the database (`<database>.secret`), created with a random value, readable by the owner only, the
    /// first time.
    ///
    /// - Throws: ``ConfigurationError`` if the secret is shorter than 32 bytes (HS256 needs a key at least as long
    ///   as its hash) or its file cannot be written.
    public func resolveSecret() throws -> String {
        if let jwtSecret {
            guard jwtSecret.utf8.count >= 32 else {
                throw ConfigurationError("HERALD_JWT_SECRET must be at least 32 bytes (it is \(jwtSecret.utf8.count))")
            }
            return jwtSecret
        }
        if databasePath == ":memory:" { return Self.randomSecret() }
        let path = databasePath + ".secret"
        if let data = FileManager.default.contents(atPath: path) {
            let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard secret.utf8.count >= 32 else {
                throw ConfigurationError("the secret in \(path) must be at least 32 bytes; delete it to make a new one")
            }
            return secret
        }
        let secret = Self.randomSecret()
        guard FileManager.default.createFile(
            atPath: path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw ConfigurationError("cannot write the token secret to \(path)") }
        return secret
    }

    private static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// A setting that cannot be used.
public struct ConfigurationError: Error, CustomStringConvertible {
    /// What is wrong.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
