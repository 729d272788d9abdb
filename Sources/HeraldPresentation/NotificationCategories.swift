import HeraldCore

/// The notification categories an app registers, Herald's among its own. The system keeps one set, and each
/// registration replaces the whole of it (`setNotificationCategories(_:)`), so the app registers once, at launch, with
/// every category at once: reading the set and writing it back from two places (the app and Herald) loses one of
/// the two writes whenever they overlap.
public enum NotificationCategories {
    /// `appCategories` with `herald` added, replacing any of the app's with Herald's identifier
    /// (``NotificationAnswer/category``); the app's others are kept as they are, in their order, Herald's last.
    public static func merging<Category>(
        _ appCategories: some Sequence<Category>, herald: Category, identifier: (Category) -> String
    ) -> [Category] {
        let heraldID = identifier(herald)
        return appCategories.filter { identifier($0) != heraldID } + [herald]
    }
}
