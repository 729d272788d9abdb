import HeraldPresentation
import Testing

/// The banner's close button is something a finger can hit: 44 × 44 pt at least, whatever the glyph.
@Suite("The banner's close button")
struct CloseButtonTests {
    @Test("its hit area is at least 44 x 44 pt; the glyph may stay small")
    func hitArea() {
        #expect(BannerStyle.minimumHitTarget == 44)
        #expect(BannerStyle.standard.closeButtonSize >= 44)
        #expect(BannerStyle.standard.closeGlyphSize < BannerStyle.standard.closeButtonSize)
        #expect(BannerStyle(closeButtonSize: 32).closeButtonSize == 44, "a smaller one is raised to the minimum")
        #expect(BannerStyle(closeButtonSize: 48).closeButtonSize == 48)
        #expect(BannerStyle.standard.closeButtonSize <= BannerStyle.standard.height, "it fits the banner")
    }
}
