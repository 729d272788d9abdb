import Foundation

/// How an avatar is drawn when a view has only a banner: which picture may load, and the colour behind initials.
public enum AvatarStyle {
    /// The hue (0 to 1) behind a person's initials: from an FNV-1a hash of their id's UTF-8 bytes, so one person has
    /// one colour on every device, the same hue as on the web page.
    public static func hue(for id: String) -> Double {
        var hash: UInt32 = 0x811c_9dc5
        for byte in id.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return Double(hash % 360) / 360
    }

    /// The picture to load: only an `http` or `https` URL, anything else is never fetched.
    public static func pictureURL(_ url: URL?) -> URL? {
        guard let url, let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host != nil else {
            return nil
        }
        return url
    }
}
