// Apple platforms only; an empty module elsewhere. Parsed on Linux by scripts/test (swiftc -parse), compiled only
// in Xcode. APIs used, all stable since iOS 17 / macOS 14: SwiftUI View, HStack, VStack, Text, Image(systemName:),
// AsyncImage, Circle, Rectangle, RoundedRectangle, Button, Color, Font, .shadow, .lineLimit, .truncationMode,
// .contentShape(_:eoFill:) (iOS 13 / macOS 10.15: the button's whole frame is its hit area),
// @Environment(\.colorScheme), and for Dynamic Type ScaledMetric (init(wrappedValue:relativeTo:), iOS 14 / macOS 11)
// with Font.TextStyle (.subheadline, .footnote).
#if os(iOS) || os(macOS)
import HeraldCore
import HeraldPresentation
import SwiftUI

/// One banner as docs/behaviour.md §3 draws it: a 40 pt avatar (the sender's picture, or initials on a colour from
/// the sender), the name in bold with `in <group>`, the preview in a secondary colour, one line each, and a close
/// button whose hit area is the style's (44 × 44 pt); general banners show their tone's colour and symbol. Its type,
/// avatar and height follow Dynamic Type from the style's sizes (the name as `.subheadline` scales, the preview as
/// `.footnote`). It holds no logic: ``BannerPresenter`` decides everything.
public struct BannerView: View {
    let banner: Banner
    let style: BannerStyle
    let close: @MainActor () -> Void
    @Environment(\.colorScheme) private var colorScheme
    @ScaledMetric private var titleSize: Double
    @ScaledMetric private var bodySize: Double
    @ScaledMetric private var avatarSize: Double
    @ScaledMetric private var height: Double

    /// A view of `banner`; `close` is the close button's action.
    public init(banner: Banner, style: BannerStyle = .standard, close: @escaping @MainActor () -> Void) {
        self.banner = banner
        self.style = style
        self.close = close
        _titleSize = ScaledMetric(wrappedValue: style.titleFontSize, relativeTo: .subheadline)
        _bodySize = ScaledMetric(wrappedValue: style.bodyFontSize, relativeTo: .footnote)
        _avatarSize = ScaledMetric(wrappedValue: style.avatarSize, relativeTo: .subheadline)
        _height = ScaledMetric(wrappedValue: style.height, relativeTo: .subheadline)
    }

    public var body: some View {
        HStack(spacing: 12) {
            leading
            VStack(alignment: .leading, spacing: 2) {
                title
                if let body = banner.body {
                    Text(body)
                        .font(.system(size: bodySize))
                        .foregroundStyle(.secondary)
                        .lineLimit(1)
                        .truncationMode(.tail)
                }
            }
            Spacer(minLength: 0)
            Button(action: close) {
                // A small glyph in a hit area of at least 44 x 44 pt (the style's), all of it tappable.
                Image(systemName: "xmark")
                    .font(.system(size: style.closeGlyphSize, weight: .semibold))
                    .foregroundStyle(.secondary)
                    .frame(width: style.closeButtonSize, height: style.closeButtonSize)
                    .contentShape(Rectangle())
            }
            .buttonStyle(.plain)
            .accessibilityLabel(Text("Dismiss"))
        }
        .padding(.horizontal, 12)
        .frame(minHeight: height)
        .background(
            RoundedRectangle(cornerRadius: style.cornerRadius, style: .continuous)
                .fill(.regularMaterial)
                .shadow(color: .black.opacity(colorScheme == .dark ? 0.45 : 0.12), radius: 12, y: 4)
        )
        .overlay(alignment: .leading) {
            if banner.tone != .message {
                RoundedRectangle(cornerRadius: 2).fill(toneColor).frame(width: 4).padding(.vertical, 10)
            }
        }
    }

    private var title: some View {
        HStack(spacing: 4) {
            Text(banner.title).font(.system(size: titleSize, weight: .bold))
            if let subtitle = banner.subtitle {
                Text(subtitle).font(.system(size: titleSize)).foregroundStyle(.secondary)
            }
            if banner.count > 1 {
                Text("\(banner.count)")
                    .font(.caption.bold())
                    .padding(.horizontal, 6)
                    .background(Capsule().fill(Color.accentColor))
                    .foregroundStyle(.white)
            }
        }
        .lineLimit(1)
        .truncationMode(.tail)
    }

    @ViewBuilder private var leading: some View {
        if banner.tone == .message {
            Avatar(banner: banner, size: avatarSize)
        } else {
            Image(systemName: banner.icon ?? Self.symbol(for: banner.tone))
                .font(.system(size: avatarSize * 0.55, weight: .semibold))
                .foregroundStyle(toneColor)
                .frame(width: avatarSize, height: avatarSize)
        }
    }

    private var toneColor: Color { Self.color(for: banner.tone) }

    /// The colour of a tone: primary blue, success green, warning yellow, danger red, neutral grey.
    public static func color(for tone: BannerTone) -> Color {
        switch tone {
        case .message, .primary: .blue
        case .success: .green
        case .warning: .yellow
        case .danger: .red
        case .neutral: .gray
        }
    }

    /// The SF Symbol a general banner shows when it names none.
    public static func symbol(for tone: BannerTone) -> String {
        switch tone {
        case .message, .primary: "info.circle.fill"
        case .success: "checkmark.circle.fill"
        case .warning: "exclamationmark.triangle.fill"
        case .danger: "xmark.octagon.fill"
        case .neutral: "bell.fill"
        }
    }
}

/// The sender's picture (http or https only), or their initials on a colour derived from the banner's sender.
struct Avatar: View {
    let banner: Banner
    let size: Double

    var body: some View {
        ZStack {
            Circle().fill(Color(hue: AvatarStyle.hue(for: banner.senderID ?? banner.title), saturation: 0.6, brightness: 0.65))
            Text(banner.initials ?? "?")
                .font(.system(size: size * 0.38, weight: .bold))
                .foregroundStyle(.white)
            if let url = AvatarStyle.pictureURL(banner.avatarURL) {
                AsyncImage(url: url) { image in
                    image.resizable().scaledToFill()
                } placeholder: {
                    Color.clear
                }
            }
        }
        .frame(width: size, height: size)
        .clipShape(Circle())
        .accessibilityHidden(true)
    }
}
#endif
