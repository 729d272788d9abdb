// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. No Apple API of its own: HeraldPresentation's `PushKeyPair` (CryptoKit's P256.KeyAgreement.PrivateKey,
// its rawRepresentation, publicKey.x963Representation and sharedSecretFromKeyAgreement(with:), iOS 13 / macOS
// 10.15, so within iOS 17 / macOS 14) as the wire's `WirePushKeys`. Where the pair is kept and when one is made is
// HeraldPresentation's `PushKeyKeeping`, tested on Linux.
#if os(iOS) || os(macOS)
import HeraldPresentation
import HeraldProtocol

extension WirePushKeys {
    /// The public half of a device's push key pair as `PUT /v1/devices/{id}` sends it
    /// (`HeraldAPI.registerDevice(_:platform:token:permission:keys:)`): the P-256 public key and the authentication
    /// secret, in base64url. Keep the pair where the Notification Service Extension reads it first
    /// (`PushKeyKeeping.pair(load:save:)`).
    public init(_ keys: PushKeyPair) {
        let registration = keys.registration
        self.init(p256dh: registration.p256dh, auth: registration.auth)
    }
}
#endif
