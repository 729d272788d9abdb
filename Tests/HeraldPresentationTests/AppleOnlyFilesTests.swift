import Foundation
import HeraldTestSupport
import Testing

/// HeraldUI and the example app cannot be compiled here; these keep what can be checked true: each file is fenced
/// for Apple platforms and names the APIs it relies on (stable since iOS 17 / macOS 14) at its top. Their syntax is
/// checked by scripts/test with the toolchain's parser.
@Suite("The Apple-only files say what they need and build to nothing elsewhere")
struct AppleOnlyFilesTests {
    static let files: [String] = {
        let manager = FileManager.default
        return ["Sources/HeraldUI", "Examples/HeraldChatApp/Sources", "Examples/HeraldChatApp/NotificationService"].flatMap { folder -> [String] in
            let url = packageRoot.appendingPathComponent(folder)
            let names = (try? manager.contentsOfDirectory(atPath: url.path)) ?? []
            return names.filter { $0.hasSuffix(".swift") }.sorted().map { "\(folder)/\($0)" }
        }
    }()

    @Test("there are the overlay, the view, the notifications adapter, the example's files and its notification service")
    func found() {
        for expected in ["Sources/HeraldUI/BannerOverlay.swift", "Sources/HeraldUI/BannerView.swift",
                         "Sources/HeraldUI/SystemNotifications.swift", "Examples/HeraldChatApp/Sources/Views.swift",
                         "Examples/HeraldChatApp/NotificationService/NotificationService.swift"] {
            #expect(Self.files.contains(expected), "\(expected)")
        }
    }

    @Test("each opens with the APIs it uses and is fenced for iOS and macOS (canImport is true on tvOS, watchOS and visionOS too, whose APIs differ)", arguments: files)
    func fenced(_ path: String) throws {
        let text = try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
        let header = text.prefix { $0 != "#" }
        #expect(header.hasPrefix("// "), "\(path) starts with its comment")
        #expect(header.contains("iOS 17"), "\(path) names the platform its APIs are stable on")
        #expect(text.contains("#if os(iOS) || os(macOS)"), "\(path)")
        #expect(!text.contains("#if canImport"), "\(path)")
        #expect(text.hasSuffix("#endif\n"), "\(path): everything inside the fence")
    }
}
