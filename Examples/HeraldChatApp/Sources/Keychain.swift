// The signed-in person, kept in the Keychain: the app signs in again by itself at launch (also when a notification's
// tap launched it), and a notification's Reply or Mark as read reaches the token without a scene. The device key too,
// for the Notification Service Extension (this file is in both targets). APIs used,
// all available on iOS 17 and checked against Apple's documentation: SecItemAdd(_:_:), SecItemCopyMatching(_:_:), SecItemUpdate(_:_:),
// SecItemDelete(_:) (iOS 2), kSecClassGenericPassword with kSecAttrService, kSecAttrAccount, kSecValueData,
// kSecReturnData, kSecMatchLimitOne, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, errSecSuccess,
// errSecItemNotFound; JSONEncoder, JSONDecoder.
#if os(iOS) || os(macOS)
import Foundation
import Security

/// Who is signed in, and where: what the app needs to connect again without asking.
struct SavedSignIn: Codable, Equatable {
    var server: URL
    var token: String
    var userID: String
    var name: String
}

/// What the Notification Service Extension needs to fetch a private push's words: the server and this device's key
/// (`PUT /v1/devices/{id}` returned it; it reads only what was pushed to this device).
struct SavedDeviceKey: Codable, Equatable {
    var server: URL
    var key: String
}

/// The app's Keychain items.
enum AppKeychain {
    /// The sign-in, kept for the app and its notification actions.
    static let signIn = KeychainItem<SavedSignIn>(account: "signed-in")
    /// The device key, kept for the Notification Service Extension: with the Keychain Sharing capability on the app
    /// and the extension, both listing the same group first, items are written to that group and both read them.
    static let deviceKey = KeychainItem<SavedDeviceKey>(account: "device-key")
}

/// One Keychain item holding a `Value` as JSON: readable after the first unlock since the phone started (so a
/// notification action or the extension can use it while the phone is locked), never synced or restored to another
/// device.
struct KeychainItem<Value: Codable>: Sendable {
    private let service = "dev.herald.example.chat"
    let account: String

    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    /// The kept value, or nil.
    func load() -> Value? {
        var request = query
        request[kSecReturnData as String] = true
        request[kSecMatchLimit as String] = kSecMatchLimitOne
        var found: CFTypeRef?
        guard SecItemCopyMatching(request as CFDictionary, &found) == errSecSuccess, let data = found as? Data else { return nil }
        return try? JSONDecoder().decode(Value.self, from: data)
    }

    /// Keeps `value`, replacing what was kept; whether it was kept.
    @discardableResult
    func save(_ value: Value) -> Bool {
        guard let data = try? JSONEncoder().encode(value) else { return false }
        let update: [String: Any] = [
            kSecValueData as String: data,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        switch SecItemUpdate(query as CFDictionary, update as CFDictionary) {
        case errSecSuccess:
            return true
        case errSecItemNotFound:
            return SecItemAdd(query.merging(update) { _, new in new } as CFDictionary, nil) == errSecSuccess
        default:
            return false
        }
    }

    /// Forgets the value (at sign-out).
    func delete() {
        SecItemDelete(query as CFDictionary)
    }
}
#endif
