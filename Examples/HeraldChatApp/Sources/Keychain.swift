// The signed-in person, kept in the Keychain: the app signs in again by itself at launch (also when a notification's
// tap launched it), and a notification's Reply or Mark as read reaches the token without a scene. APIs used,
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

/// One Keychain item holding the ``SavedSignIn``: readable after the first unlock since the phone started (so a
/// notification action can use it while the phone is locked), never synced or restored to another device.
enum SignInKeychain {
    private static let service = "dev.herald.example.chat"
    private static let account = "signed-in"

    private static var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    /// The saved sign-in, or nil.
    static func load() -> SavedSignIn? {
        var request = query
        request[kSecReturnData as String] = true
        request[kSecMatchLimit as String] = kSecMatchLimitOne
        var found: CFTypeRef?
        guard SecItemCopyMatching(request as CFDictionary, &found) == errSecSuccess, let data = found as? Data else { return nil }
        return try? JSONDecoder().decode(SavedSignIn.self, from: data)
    }

    /// Keeps `signIn`, replacing what was kept; whether it was kept.
    @discardableResult
    static func save(_ signIn: SavedSignIn) -> Bool {
        guard let data = try? JSONEncoder().encode(signIn) else { return false }
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

    /// Forgets the sign-in (at sign-out).
    static func delete() {
        SecItemDelete(query as CFDictionary)
    }
}
#endif
