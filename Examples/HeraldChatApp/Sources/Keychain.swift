// The signed-in person, kept in the Keychain: the app signs in again by itself at launch (also when a notification's
// tap launched it), and a notification's Reply or Mark as read reaches the token without a scene. The device key and
// the push key pair too, for the Notification Service Extension (this file is in both targets). APIs used, all available on iOS 17 and
// checked against Apple's documentation: SecItemAdd(_:_:), SecItemCopyMatching(_:_:), SecItemUpdate(_:_:),
// SecItemDelete(_:) (iOS 2), kSecClassGenericPassword with kSecAttrService, kSecAttrAccount, kSecAttrAccessGroup
// (iOS 3: an item's one access group; an app belongs to its keychain-access-groups entitlement's groups and its app
// ID), kSecValueData, kSecReturnData, kSecMatchLimitOne, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
// errSecSuccess, errSecItemNotFound; Bundle.main.object(forInfoDictionaryKey:), Bundle.main.bundleIdentifier;
// JSONEncoder, JSONDecoder. Which group holds what is HeraldPresentation's `KeychainGroups`.
#if os(iOS) || os(macOS)
import Foundation
import HeraldPresentation
import Security

/// Who is signed in, and where: what the app needs to connect again without asking.
struct SavedSignIn: Codable, Equatable {
    var server: URL
    var token: String
    var userID: String
    var name: String
}

/// What the Notification Service Extension needs to fetch a private push's words: the server and this device's key
/// (`PUT /v1/devices/{id}` returned it; it reads only what was pushed to this device), and who the device belongs to
/// (the recipient of a communication notification; nil in an item kept before it was).
struct SavedDeviceKey: Codable, Equatable {
    var server: URL
    var key: String
    var userID: String?
    var name: String?
}

/// The push key pair the extension decrypts pushes with (`PushKeyPair.rawRepresentation`: the private key and the
/// authentication secret); its public half is registered with the device.
struct SavedPushKeys: Codable, Equatable {
    var raw: Data
}

/// The app's Keychain items, each in its group (`KeychainGroups`, from the `HeraldKeychainGroup` key of the target's
/// Info.plist): the sign-in, with its bearer token, in the app's own group, which the extension cannot read; the
/// device key and the push key pair in the group the app and the extension share.
enum AppKeychain {
    /// The groups, or nil when the Info.plist does not name the shared one (then the device key is not kept).
    static let groups = KeychainGroups(
        infoPlistValue: Bundle.main.object(forInfoDictionaryKey: KeychainGroups.infoPlistKey),
        bundleIdentifier: Bundle.main.bundleIdentifier)
    /// The sign-in, kept for the app and its notification actions. An earlier version kept it in the shared group:
    /// it is moved out of it when read.
    static let signIn = KeychainItem<SavedSignIn>(account: "signed-in", group: groups?.own, formerGroup: groups?.shared)
    /// The device key, kept for the Notification Service Extension in the shared group.
    static let deviceKey = KeychainItem<SavedDeviceKey>(account: "device-key", group: groups?.shared, required: true)
    /// The push key pair, kept for the Notification Service Extension in the shared group (never synced or restored
    /// elsewhere: a restored phone makes a new one).
    static let pushKeys = KeychainItem<SavedPushKeys>(account: PushKeyKeeping.account, group: groups?.shared, required: true)
}

/// One Keychain item holding a `Value` as JSON, in the access group `group` (nil: the app's default group, its
/// entitlement's first): readable after the first unlock since the phone started (so a notification action or the
/// extension can use it while the phone is locked), never synced or restored to another device.
struct KeychainItem<Value: Codable>: Sendable {
    private let service = "dev.herald.example.chat"
    let account: String
    /// The access group it is kept in.
    let group: String?
    /// A group an earlier version kept it in: a copy found there is moved to `group`.
    let formerGroup: String?
    /// Whether it may be kept only in `group` (no group: not kept at all).
    let required: Bool

    init(account: String, group: String?, formerGroup: String? = nil, required: Bool = false) {
        self.account = account
        self.group = group
        self.formerGroup = formerGroup == group ? nil : formerGroup
        self.required = required
    }

    private func query(in group: String?) -> [String: Any] {
        // The data protection keychain on macOS too, where access groups and accessibility apply only in it.
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account,
            kSecUseDataProtectionKeychain as String: true,
        ]
        if let group { query[kSecAttrAccessGroup as String] = group }
        return query
    }

    /// The kept value, or nil.
    func load() -> Value? {
        guard !required || group != nil else { return nil }
        if let value = load(from: group) { return value }
        guard let formerGroup, let value = load(from: formerGroup), save(value) else { return nil }
        SecItemDelete(query(in: formerGroup) as CFDictionary)
        return value
    }

    private func load(from group: String?) -> Value? {
        var request = query(in: group)
        request[kSecReturnData as String] = true
        request[kSecMatchLimit as String] = kSecMatchLimitOne
        var found: CFTypeRef?
        guard SecItemCopyMatching(request as CFDictionary, &found) == errSecSuccess, let data = found as? Data else { return nil }
        return try? JSONDecoder().decode(Value.self, from: data)
    }

    /// Keeps `value`, replacing what was kept; whether it was kept.
    @discardableResult
    func save(_ value: Value) -> Bool {
        guard !required || group != nil, let data = try? JSONEncoder().encode(value) else { return false }
        let update: [String: Any] = [
            kSecValueData as String: data,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        let query = query(in: group)
        let kept = switch SecItemUpdate(query as CFDictionary, update as CFDictionary) {
        case errSecSuccess: true
        case errSecItemNotFound: SecItemAdd(query.merging(update) { _, new in new } as CFDictionary, nil) == errSecSuccess
        default: false
        }
        // A copy an earlier version left where the other target reads it goes once this one is kept.
        if kept, let formerGroup { SecItemDelete(self.query(in: formerGroup) as CFDictionary) }
        return kept
    }

    /// Forgets the value (at sign-out), in the former group too.
    func delete() {
        if !required || group != nil { SecItemDelete(query(in: group) as CFDictionary) }
        if let formerGroup { SecItemDelete(query(in: formerGroup) as CFDictionary) }
    }
}
#endif
