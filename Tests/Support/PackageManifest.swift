import Foundation

/// A package's own description (`swift package dump-package`), and what its targets reach.
public struct PackageManifest: @unchecked Sendable {
    /// The JSON `dump-package` printed.
    public let json: [String: Any]

    /// `swift package dump-package` of the package in `folder`, with a scratch folder of its own (the test run holds
    /// the package's own build folder).
    public init(of folder: URL) async throws {
        let result = try await swiftPackage(["dump-package"], in: folder)
        guard let json = try JSONSerialization.jsonObject(with: Data(result.utf8)) as? [String: Any] else {
            throw ProcessFailure("swift package dump-package printed no object")
        }
        self.json = json
    }

    /// The names of the packages this one depends on, as its manifest declares them.
    public var dependencies: [String] {
        (json["dependencies"] as? [[String: Any]] ?? []).compactMap { dependency in
            for kind in ["sourceControl", "fileSystem", "registry"] {
                if let entry = (dependency[kind] as? [[String: Any]])?.first { return entry["identity"] as? String }
            }
            return nil
        }
    }

    /// The names of the products it offers.
    public var products: [String] {
        (json["products"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }

    /// The targets (of this package) and packages (of the products it uses) reachable from `root` on `platform`,
    /// each dependency's platform condition honoured.
    public func reach(_ root: String, platform: String) throws -> (targets: Set<String>, packages: Set<String>) {
        let targets = (json["targets"] as? [[String: Any]] ?? []).reduce(into: [String: [[String: Any]]]()) { all, target in
            all[target["name"] as? String ?? ""] = target["dependencies"] as? [[String: Any]] ?? []
        }
        var seen: Set<String> = []
        var packages: Set<String> = []
        var queue = [root]
        while let name = queue.popLast() {
            guard seen.insert(name).inserted else { continue }
            guard let dependencies = targets[name] else { throw ProcessFailure("no target \(name) in the manifest") }
            for dependency in dependencies {
                guard let (kind, fields) = dependency.first, let fields = fields as? [Any] else { continue }
                // Each kind's last field is its condition (null, or the platforms it applies on).
                if let condition = fields.last as? [String: Any], let platforms = condition["platformNames"] as? [String],
                   !platforms.contains(platform) {
                    continue
                }
                switch kind {
                case "byName", "target":
                    if let target = fields.first as? String { queue.append(target) }
                case "product":
                    if let package = fields.dropFirst().first as? String { packages.insert(package.lowercased()) }
                default:
                    throw ProcessFailure("a dependency of kind \(kind)")
                }
            }
        }
        return (seen, packages)
    }
}

/// `swift package ARGUMENTS` for the package in `folder`, with a scratch folder of its own that is removed after;
/// what it printed. Throws when it fails.
public func swiftPackage(_ arguments: [String], in folder: URL, timeout: Duration = .seconds(180)) async throws -> String {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-package-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: scratch) }
    let result = try await runProcess(
        URL(fileURLWithPath: "/usr/bin/env"),
        ["swift", "package", "--package-path", folder.path, "--scratch-path", scratch.path] + arguments,
        timeout: timeout)
    guard result.status == 0 else {
        throw ProcessFailure("swift package \(arguments.joined(separator: " ")): \(result.status) \(result.stderr.suffix(800))")
    }
    return result.stdout
}
