import HeraldCore

/// Where an app keeps Herald's Keychain items: the device key in the group the app and its Notification Service
/// Extension share (the extension reads it to fetch a private push's words), and nothing else there. The sign-in,
/// with its bearer token, stays in the app's own group, out of the extension's reach.
///
/// Both targets name the shared group in their `Info.plist` under ``infoPlistKey``, as
/// `$(AppIdentifierPrefix)<group>`, which the build expands to the team's prefix (`ABCDE12345.`) and the group, a
/// group both list in their Keychain Sharing entitlement. The app's own group is its app ID, that same prefix and
/// its bundle identifier: an app always belongs to it, whatever order its entitlement lists groups in (the default
/// group an item without one goes to is the entitlement's first).
public struct KeychainGroups: Hashable, Sendable {
    /// The `Info.plist` key naming the shared group.
    public static let infoPlistKey = "HeraldKeychainGroup"

    /// The shared group: the device key's.
    public var shared: String
    /// The app's own group (its app ID), for the sign-in; nil without a bundle identifier (then the default group).
    public var own: String?

    /// The groups, from the `Info.plist` value under ``infoPlistKey`` and the bundle identifier; nil when the value
    /// is missing, not a string, was not expanded by the build (still holds `$(`), or does not start with a team's
    /// prefix (ten letters and digits, then a dot: a build without a team expands the prefix to nothing).
    public init?(infoPlistValue: Any?, bundleIdentifier: String?) {
        guard let shared = infoPlistValue as? String, !shared.contains("$("),
              let dot = shared.firstIndex(of: "."), shared.distance(from: shared.startIndex, to: dot) == 10,
              shared[..<dot].allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }),
              shared.index(after: dot) != shared.endIndex
        else { return nil }
        self.shared = shared
        let prefix = shared[...dot]
        own = bundleIdentifier.flatMap { $0.isEmpty ? nil : String(prefix) + $0 }
    }
}
