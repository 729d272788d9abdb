/// How a banner looks and moves: the values of docs/behaviour.md §3 ("How a banner is drawn"), in points and
/// seconds, as one value a view reads. The web client's `style.css` uses the same numbers.
public struct BannerStyle: Hashable, Sendable {
    /// Space between the banner and each side of the screen.
    public var sideMargin: Double
    /// Space between the top safe area and the banner.
    public var topMargin: Double
    /// Corner radius.
    public var cornerRadius: Double
    /// About how tall a message banner is.
    public var height: Double
    /// The round avatar's diameter.
    public var avatarSize: Double
    /// The sender's name (bold) and a general banner's message.
    public var titleFontSize: Double
    /// The preview, in a secondary colour.
    public var bodyFontSize: Double
    /// The spring that brings a banner in.
    public var enterDuration: Duration
    /// The ease-out that takes it away; the engine's `gap` before the next one.
    public var exitDuration: Duration
    /// How much a downward drag moves the banner, for each point the finger moves (it resists going down).
    public var downwardDragFactor: Double
    /// How far a finger may move and still tap (further, it drags).
    public var tapSlop: Double
    /// How long a finger may stay and still tap (longer, it held the banner: the timer resumes, nothing opens).
    public var holdDuration: Duration
    /// The close button's hit area, a square this wide and high: at least ``minimumHitTarget``, the hit target Apple
    /// asks of anything a finger taps (its design tips and Human Interface Guidelines: 44 × 44 pt).
    public var closeButtonSize: Double
    /// The close button's glyph (the `xmark`), in the middle of its hit area.
    public var closeGlyphSize: Double

    /// The smallest hit area a control may have, in points, each way.
    public static let minimumHitTarget: Double = 44

    /// The product's look: 16 pt sides, 8 pt top, 12 pt corners, 64 pt high, 40 pt avatar, 15/13 pt type, a 0.3 s
    /// spring in and a 0.25 s ease-out; a tap moves at most 10 pt and lasts under 0.3 s; a 13 pt close glyph in a
    /// 44 × 44 pt hit area.
    public static let standard = BannerStyle()

    /// Creates a style; the defaults are ``standard``'s. A `closeButtonSize` under ``minimumHitTarget`` is raised to
    /// it.
    public init(
        sideMargin: Double = 16,
        topMargin: Double = 8,
        cornerRadius: Double = 12,
        height: Double = 64,
        avatarSize: Double = 40,
        titleFontSize: Double = 15,
        bodyFontSize: Double = 13,
        enterDuration: Duration = .milliseconds(300),
        exitDuration: Duration = .milliseconds(250),
        downwardDragFactor: Double = 0.2,
        tapSlop: Double = 10,
        holdDuration: Duration = .milliseconds(300),
        closeButtonSize: Double = BannerStyle.minimumHitTarget,
        closeGlyphSize: Double = 13
    ) {
        self.sideMargin = sideMargin
        self.topMargin = topMargin
        self.cornerRadius = cornerRadius
        self.height = height
        self.avatarSize = avatarSize
        self.titleFontSize = titleFontSize
        self.bodyFontSize = bodyFontSize
        self.enterDuration = enterDuration
        self.exitDuration = exitDuration
        self.downwardDragFactor = downwardDragFactor
        self.tapSlop = tapSlop
        self.holdDuration = holdDuration
        self.closeButtonSize = max(closeButtonSize, Self.minimumHitTarget)
        self.closeGlyphSize = closeGlyphSize
    }
}
