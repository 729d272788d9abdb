import HeraldPresentation
import Testing

/// Categories are registered once, Herald's with the app's own, so neither registration loses the other's.
@Suite("Notification categories")
struct NotificationCategoriesTests {
    struct Category: Equatable {
        var identifier: String
        var actions: [String]
    }

    static let herald = Category(identifier: NotificationAnswer.category, actions: ["HERALD_REPLY", "HERALD_MARK_READ"])

    @Test("the app's categories are kept, Herald's is added, replacing one of the app's with its identifier")
    func merged() {
        let app = [
            Category(identifier: "ORDER", actions: ["TRACK"]),
            Category(identifier: NotificationAnswer.category, actions: ["OLD"]),
            Category(identifier: "INVITE", actions: ["ACCEPT", "DECLINE"]),
        ]
        let all = NotificationCategories.merging(app, herald: Self.herald, identifier: \.identifier)
        #expect(all == [app[0], app[2], Self.herald])
        #expect(Set(all.map(\.identifier)).count == all.count, "one category per identifier")
    }

    @Test("an app with none of its own registers Herald's alone")
    func heraldOnly() {
        #expect(NotificationCategories.merging([Category](), herald: Self.herald, identifier: \.identifier) == [Self.herald])
    }
}
