import HeraldPresentation
import Testing

/// The device key goes to the group the extension shares; the sign-in, with its token, to the app's own.
@Suite("Keychain groups")
struct KeychainGroupsTests {
    @Test("the shared group from the Info.plist, the app's own from the same prefix and its bundle identifier")
    func groups() throws {
        let groups = try #require(KeychainGroups(
            infoPlistValue: "ABCDE12345.dev.herald.example.shared", bundleIdentifier: "dev.herald.example.chat"))
        #expect(groups.shared == "ABCDE12345.dev.herald.example.shared")
        #expect(groups.own == "ABCDE12345.dev.herald.example.chat")
        #expect(groups.own != groups.shared)
        #expect(KeychainGroups(infoPlistValue: "ABCDE12345.shared", bundleIdentifier: nil)?.own == nil)
        #expect(KeychainGroups.infoPlistKey == "HeraldKeychainGroup")
    }

    @Test("no group from a missing, unexpanded or malformed value")
    func malformed() {
        for value: Any? in [nil, "", 5, "$(AppIdentifierPrefix)dev.herald.example.shared", "noprefix", ".shared", "ABCDE12345.", "dev.herald.example.shared", "abcde12345.shared", "ABCDE1234.shared"] {
            #expect(KeychainGroups(infoPlistValue: value, bundleIdentifier: "dev.herald.example.chat") == nil, "\(String(describing: value))")
        }
    }
}
