import Foundation
import HeraldCore

/// Where a device keeps its push key pair (`PushKeyPair`, whose public half it registers with `"keys"`) and when it
/// makes a new one, the Keychain itself aside: the app keeps the pair's `rawRepresentation` as a Keychain item under
/// ``account`` in the group it shares with its Notification Service Extension (``KeychainGroups/shared``), which
/// decrypts the pushes with it.
///
/// One pair per installation and signed-in person: kept across registrations (a new APNs token, a new launch), so
/// pushes already on their way still open; deleted at sign-out with the device key. A pair the extension cannot read
/// would only make every push fall back to the device key's fetch, so a pair that could not be kept is not
/// registered.
public enum PushKeyKeeping {
    /// The Keychain item's account (a generic password in the shared group).
    public static let account = "herald.push-keys"

    /// The pair to register: the kept one when `load` gives one that `read` accepts; else a new one from `make`,
    /// kept with `save` before it is returned, since a push encrypted to it may follow the registration at once.
    /// Nil when a new pair cannot be kept: register the device without keys (its pushes then withhold their words,
    /// which the device key fetches).
    ///
    /// - Parameters:
    ///   - load: the kept bytes, nil when there are none.
    ///   - read: the pair in kept bytes, nil when they are not one (`PushKeyPair(rawRepresentation:)`).
    ///   - make: a new pair (`PushKeyPair()`).
    ///   - raw: the bytes to keep of a pair (`rawRepresentation`).
    ///   - save: keeps the bytes, replacing what was kept; whether they were kept.
    public static func pair<Pair>(
        load: () -> Data?, read: (Data) -> Pair?, make: () -> Pair, raw: (Pair) -> Data, save: (Data) -> Bool
    ) -> Pair? {
        if let kept = load().flatMap(read) { return kept }
        let pair = make()
        return save(raw(pair)) ? pair : nil
    }
}

#if canImport(CryptoKit) && !os(tvOS) && !os(watchOS)
extension PushKeyKeeping {
    /// The kept pair, or a new one kept with `save` first; nil when a new one cannot be kept
    /// (``pair(load:read:make:raw:save:)``).
    public static func pair(load: () -> Data?, save: (Data) -> Bool) -> PushKeyPair? {
        pair(
            load: load, read: { PushKeyPair(rawRepresentation: $0) }, make: { PushKeyPair() }, raw: { $0.rawRepresentation },
            save: save)
    }
}
#endif
