import Foundation
import HeraldTestSupport
import Testing

/// The example app's Xcode project is generated and built only on a Mac (`xcodegen generate`, then Xcode); these keep
/// what can be read here true: project.yml's two targets, and the Info.plists and entitlements that pushes,
/// communication notifications and the Keychain item shared with the extension need (docs/ios.md).
@Suite("The example's Xcode project: project.yml, its Info.plists and entitlements")
struct ExampleProjectTests {
    static let folder = packageRoot.appendingPathComponent("Examples/HeraldChatApp")
    static let appID = "dev.herald.example.chat"
    static let extensionID = "dev.herald.example.chat.NotificationService"
    static let appGroup = "$(AppIdentifierPrefix)dev.herald.example.chat"
    static let sharedGroup = "$(AppIdentifierPrefix)dev.herald.example.shared"

    /// Every `.plist` and `.entitlements` file of the example (the generated project, which git ignores, aside).
    static let propertyLists: [String] = {
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            if path.hasPrefix("HeraldChatApp.xcodeproj") { continue }
            if path.hasSuffix(".plist") || path.hasSuffix(".entitlements") { found.append(path) }
        }
        return found.sorted()
    }()

    static func propertyList(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        let value = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        return try #require(value as? [String: Any], "\(name) is a dictionary")
    }

    static func project() throws -> ProjectOutline {
        ProjectOutline(try String(contentsOf: folder.appendingPathComponent("project.yml"), encoding: .utf8))
    }

    @Test("there are the app's and the extension's Info.plist and entitlements, and no app package")
    func found() {
        for name in ["HeraldChatApp-Info.plist", "HeraldChatApp.entitlements", "NotificationService-Info.plist",
                     "NotificationService.entitlements"] {
            #expect(Self.propertyLists.contains(name), "\(name)")
        }
        #expect(!FileManager.default.fileExists(atPath: Self.folder.appendingPathComponent("Package.swift").path))
    }

    @Test("each parses as a property list", arguments: propertyLists)
    func parses(_ name: String) throws {
        _ = try Self.propertyList(name)
    }

    @Test("the app's entitlements: APNs, communication notifications, its own Keychain group first and the shared one")
    func appEntitlements() throws {
        let entitlements = try Self.propertyList("HeraldChatApp.entitlements")
        #expect(entitlements["aps-environment"] as? String == "development")
        #expect(entitlements["com.apple.developer.usernotifications.communication"] as? Bool == true)
        // The first group is where an item saved without one goes: the sign-in stays the app's.
        #expect(entitlements["keychain-access-groups"] as? [String] == [Self.appGroup, Self.sharedGroup])
    }

    @Test("the extension's entitlements: the shared Keychain group only")
    func extensionEntitlements() throws {
        let entitlements = try Self.propertyList("NotificationService.entitlements")
        #expect(entitlements["keychain-access-groups"] as? [String] == [Self.sharedGroup])
        #expect(entitlements["aps-environment"] == nil)
    }

    @Test("the app's Info.plist: INSendMessageIntent among its activity types, remote notifications, the shared group")
    func appInfo() throws {
        let info = try Self.propertyList("HeraldChatApp-Info.plist")
        #expect((info["NSUserActivityTypes"] as? [String])?.contains("INSendMessageIntent") == true)
        #expect((info["UIBackgroundModes"] as? [String])?.contains("remote-notification") == true)
        #expect(info["HeraldKeychainGroup"] as? String == Self.sharedGroup)
        let scenes = info["UIApplicationSceneManifest"] as? [String: Any]
        #expect(scenes?["UIApplicationSupportsMultipleScenes"] as? Bool == true)
        #expect(info["UILaunchScreen"] as? [String: Any] != nil)
        #expect(info["CFBundleIdentifier"] as? String == "$(PRODUCT_BUNDLE_IDENTIFIER)")
        #expect(info["CFBundlePackageType"] as? String == "APPL")
    }

    @Test("the extension's Info.plist: a notification service, no intents of its own, the shared group")
    func extensionInfo() throws {
        let info = try Self.propertyList("NotificationService-Info.plist")
        let point = info["NSExtension"] as? [String: Any]
        #expect(point?["NSExtensionPointIdentifier"] as? String == "com.apple.usernotifications.service")
        #expect(point?["NSExtensionPrincipalClass"] as? String == "$(PRODUCT_MODULE_NAME).NotificationService")
        #expect(info["CFBundlePackageType"] as? String == "XPC!")
        // INSendMessageIntent belongs in the app's NSUserActivityTypes, not in an extension's IntentsSupported.
        #expect(!Self.keys(of: info).contains("IntentsSupported"))
        #expect(!Self.keys(of: info).contains("NSUserActivityTypes"))
        #expect(info["HeraldKeychainGroup"] as? String == Self.sharedGroup)
    }

    @Test("the group each Info.plist names is one its target's entitlements allow")
    func groupsAgree() throws {
        for target in ["HeraldChatApp", "NotificationService"] {
            let group = try Self.propertyList("\(target)-Info.plist")["HeraldKeychainGroup"] as? String
            let groups = try Self.propertyList("\(target).entitlements")["keychain-access-groups"] as? [String] ?? []
            #expect(group.map { groups.contains($0) } == true, "\(target)")
        }
    }

    @Test("project.yml: the app and its notification service extension, their bundle ids, plists and entitlements")
    func targets() throws {
        let project = try Self.project()
        #expect(project.value("name") == "HeraldChatApp")
        #expect(project.keys(under: "targets") == ["HeraldChatApp", "NotificationService"])
        #expect(project.value("options", "deploymentTarget", "iOS") == "17.0")
        for (target, type, bundleID) in [("HeraldChatApp", "application", Self.appID),
                                         ("NotificationService", "app-extension", Self.extensionID)] {
            #expect(project.value("targets", target, "type") == type)
            #expect(project.value("targets", target, "platform") == "iOS")
            #expect(project.value("targets", target, "settings", "base", "PRODUCT_BUNDLE_IDENTIFIER") == bundleID)
            #expect(project.value("targets", target, "info", "path") == "\(target)-Info.plist")
            #expect(project.value("targets", target, "entitlements", "path") == "\(target).entitlements")
        }
        // The signing team is the user's to fill in.
        #expect(project.value("settings", "base", "DEVELOPMENT_TEAM") == "")
    }

    @Test("project.yml: the sources, the extension embedded in the app, and the package's products each needs")
    func dependencies() throws {
        let project = try Self.project()
        #expect(project.values("targets", "HeraldChatApp", "sources", "-") == ["Sources"])
        #expect(project.values("targets", "NotificationService", "sources", "-") == ["NotificationService"])
        // The Keychain code is shared: the app writes the device key the extension reads.
        #expect(project.values("targets", "NotificationService", "sources", "-", "path") == ["Sources/Keychain.swift"])
        #expect(FileManager.default.fileExists(atPath: Self.folder.appendingPathComponent("Sources/Keychain.swift").path))
        #expect(project.values("targets", "HeraldChatApp", "dependencies", "-", "target") == ["NotificationService"])
        #expect(project.values("targets", "NotificationService", "dependencies", "-", "target") == [])
        #expect(project.values("targets", "HeraldChatApp", "dependencies", "-", "package") == ["Herald"])
        #expect(project.values("targets", "HeraldChatApp", "dependencies", "-", "products", "-")
            == ["HeraldUI", "HeraldPresentation", "HeraldClient", "HeraldProtocol", "HeraldCore"])
        #expect(project.values("targets", "NotificationService", "dependencies", "-", "products", "-")
            == ["HeraldPresentation", "HeraldClient", "HeraldURLSession"])
        // The package is this repository, two folders up.
        let path = try #require(project.value("packages", "Herald", "path"))
        #expect(path == "../..")
        let manifest = Self.folder.appendingPathComponent(path).appendingPathComponent("Package.swift").standardized
        #expect(manifest.path == packageRoot.appendingPathComponent("Package.swift").standardized.path)
    }

    @Test("the committed Info.plists and entitlements are what xcodegen writes from project.yml", arguments: [
        ("HeraldChatApp", "application"), ("NotificationService", "app-extension"),
    ])
    func generated(_ target: String, _ type: String) throws {
        let project = try Self.project()
        let properties = project.entries(under: "targets", target, "info", "properties")
        #expect(!properties.isEmpty)
        // XcodeGen adds these to an Info.plist unless the properties set them.
        let defaults: [String: String] = [
            "CFBundleDevelopmentRegion": "$(DEVELOPMENT_LANGUAGE)", "CFBundleExecutable": "$(EXECUTABLE_NAME)",
            "CFBundleIdentifier": "$(PRODUCT_BUNDLE_IDENTIFIER)", "CFBundleInfoDictionaryVersion": "6.0",
            "CFBundleName": "$(PRODUCT_NAME)", "CFBundlePackageType": type == "application" ? "APPL" : "XPC!",
            "CFBundleShortVersionString": "1.0", "CFBundleVersion": "1",
        ]
        let overridden = Set(properties.compactMap(\.first))
        let info = properties + defaults.filter { !overridden.contains($0.key) }.map { [$0.key, $0.value] }
        #expect(Self.flattened(try Self.propertyList("\(target)-Info.plist")).sorted { $0.lexicographicallyPrecedes($1) }
            == info.sorted { $0.lexicographicallyPrecedes($1) })
        let entitlements = project.entries(under: "targets", target, "entitlements", "properties")
        #expect(!entitlements.isEmpty)
        #expect(Self.flattened(try Self.propertyList("\(target).entitlements")).sorted { $0.lexicographicallyPrecedes($1) }
            == entitlements.sorted { $0.lexicographicallyPrecedes($1) })
    }

    /// Every key in `plist`, at any depth.
    static func keys(of plist: Any) -> Set<String> {
        switch plist {
        case let dictionary as [String: Any]:
            dictionary.reduce(into: Set(dictionary.keys)) { $0.formUnion(keys(of: $1.value)) }
        case let array as [Any]:
            array.reduce(into: Set<String>()) { $0.formUnion(keys(of: $1)) }
        default:
            []
        }
    }

    /// `plist` as ``ProjectOutline`` reads YAML: each scalar as its path of keys (`-` for an array's item) and its
    /// value as text last; an empty dictionary is `{}`.
    static func flattened(_ plist: Any, at path: [String] = []) -> [[String]] {
        switch plist {
        case let string as String:
            [path + [string]]
        case let dictionary as [String: Any]:
            dictionary.isEmpty ? [path + ["{}"]] : dictionary.flatMap { flattened($0.value, at: path + [$0.key]) }
        case let array as [Any]:
            array.flatMap { flattened($0, at: path + ["-"]) }
        case let bool as Bool:
            [path + [String(bool)]]
        default:
            [path + ["\(plist)"]]
        }
    }
}

/// A YAML file read line by line, as much as project.yml needs: each `key: value` and each list item, under the keys
/// above it by indentation (`-` standing for a list item). No flow collections but `{}`, no anchors, no multi-line
/// scalars; quotes are taken off, comments dropped.
struct ProjectOutline {
    /// The scalars in file order, each as its path of keys and its value last.
    let entries: [[String]]

    init(_ text: String) {
        var entries: [[String]] = []
        var parents: [(indent: Int, key: String)] = []
        for line in text.split(separator: "\n") {
            var rest = Substring(Self.withoutComment(line))
            guard !rest.allSatisfy(\.isWhitespace) else { continue }
            var indent = rest.prefix { $0 == " " }.count
            rest = rest.dropFirst(indent)
            while let last = parents.last, last.indent >= indent { parents.removeLast() }
            if rest.hasPrefix("- ") {
                parents.append((indent, "-"))
                rest = rest.dropFirst(2)
                indent += 2
            }
            if let colon = Self.separator(in: rest) {
                let key = Self.unquoted(rest[..<colon])
                let value = rest[rest.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if value.isEmpty {
                    parents.append((indent, key))
                } else {
                    entries.append(parents.map(\.key) + [key, Self.unquoted(Substring(value))])
                }
            } else {
                entries.append(parents.map(\.key) + [Self.unquoted(rest)])
            }
        }
        self.entries = entries
    }

    /// The entries under `path`, that path taken off.
    func entries(under path: String...) -> [[String]] {
        entries.filter { $0.count > path.count + 1 && Array($0.prefix(path.count)) == path }.map { Array($0.dropFirst(path.count)) }
    }

    /// The values at exactly `path`, in file order (a list's items, or one value).
    func values(_ path: String...) -> [String] {
        entries.filter { $0.count == path.count + 1 && Array($0.prefix(path.count)) == path }.compactMap(\.last)
    }

    /// The one value at `path`.
    func value(_ path: String...) -> String? {
        let found = entries.filter { $0.count == path.count + 1 && Array($0.prefix(path.count)) == path }
        return found.count == 1 ? found[0].last : nil
    }

    /// The keys right under `path`, in file order.
    func keys(under path: String...) -> [String] {
        var keys: [String] = []
        for entry in entries where entry.count > path.count + 1 && Array(entry.prefix(path.count)) == path {
            if !keys.contains(entry[path.count]) { keys.append(entry[path.count]) }
        }
        return keys
    }

    /// `line` without a `#` comment outside quotes.
    static func withoutComment(_ line: Substring) -> Substring {
        var quote: Character?
        var previous: Character = " "
        for index in line.indices {
            let character = line[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == "#" && previous == " " {
                return line[..<index]
            }
            previous = character
        }
        return line
    }

    /// Where a key ends: the first `:` outside quotes followed by a space or the line's end.
    static func separator(in text: Substring) -> Substring.Index? {
        var quote: Character?
        for index in text.indices {
            let character = text[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == ":" {
                let next = text.index(after: index)
                if next == text.endIndex || text[next] == " " { return index }
            }
        }
        return nil
    }

    /// `text` trimmed, without the quotes around it.
    static func unquoted(_ text: Substring) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        for quote in ["\"", "'"] where trimmed.count >= 2 && trimmed.hasPrefix(quote) && trimmed.hasSuffix(quote) {
            return String(trimmed.dropFirst().dropLast())
        }
        return trimmed
    }
}
