import HeraldCore

/// The presenter a view shows for the notifications it was given: the same one while it is given the same source, a
/// new one when the source changes (another account signed in), so nothing of the last account's banner, queue,
/// drag or announcement carries over into the next.
///
/// A SwiftUI view keeps the slot in `@State` and asks it from a `.task(id:)` on the source's identity: the task of
/// the old source is cancelled (its run ends) and the new one runs with the new presenter.
@MainActor
public struct PresenterSlot<Key: Hashable> {
    /// The source the presenter is for.
    public private(set) var key: Key
    /// The presenter for ``key``.
    public private(set) var current: BannerPresenter

    /// A slot holding `presenter`, made for `key`.
    public init(key: Key, presenter: BannerPresenter) {
        self.key = key
        current = presenter
    }

    /// The presenter for `key`: the one held if `key` is the same, else one `make` makes (the old one is let go).
    public mutating func presenter(for key: Key, make: () -> BannerPresenter) -> BannerPresenter {
        guard key != self.key else { return current }
        self.key = key
        current = make()
        return current
    }
}

/// Conversations the person asked to open from a system notification, held until a signed-in session can open
/// them: a notification tapped before the app's sign-in finished (the app launched by the tap, the token still being
/// read from the Keychain) opens its chat, once, when the session attaches; a tap while one is attached opens at once.
@MainActor
public final class NotificationOpens {
    private var pending: String?
    private var open: (@MainActor (String) -> Void)?

    /// Nothing held, no session.
    public init() {}

    /// A notification of `conversationID` was tapped.
    public func tapped(_ conversationID: String) {
        guard !conversationID.isEmpty else { return }
        if let open {
            open(conversationID)
        } else {
            pending = conversationID // the latest tap wins: it is what the person asked for last
        }
    }

    /// A session is signed in and opens conversations with `open` (the engine's `open`, then the app's navigation):
    /// what was tapped meanwhile is opened now.
    public func attach(_ open: @escaping @MainActor (String) -> Void) {
        self.open = open
        if let conversationID = pending {
            pending = nil
            open(conversationID)
        }
    }

    /// The session ended (signed out): taps wait for the next one.
    public func detach() {
        open = nil
    }

    /// The conversation held for the next session, if any.
    public var held: String? { pending }
}
