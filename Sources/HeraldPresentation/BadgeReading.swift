import Foundation

/// A badge the app set itself (`setBadgeCount(_:)`), and when: one of the readings of what the icon shows now, beside
/// the badges pushes set (``DeliveredNotification/badge``). The one property that read it back,
/// `UIApplication.applicationIconBadgeNumber`, is deprecated from iOS 17, the floor.
public struct BadgeReading: Codable, Hashable, Sendable {
    /// The number set.
    public var value: Int
    /// When.
    public var date: Date

    /// A reading.
    public init(value: Int, date: Date) {
        self.value = value
        self.date = date
    }
}
