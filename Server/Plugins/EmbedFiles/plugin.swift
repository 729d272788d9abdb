import Foundation
import PackagePlugin

/// Embeds the server's files in its binary: the web page (`Resources/web`, served at `/`), the JavaScript package's
/// modules (the repository's `clients/js/src`, served at `/herald/`) and the API description (`Resources/openapi.yaml`). The files in
/// the repository stay the one source; `herald-embed` turns them into a Swift file at build time, so a copied binary
/// runs without its build tree.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let sources = [
            ("web", target.directoryURL.appending(path: "Resources/web")),
            ("herald", context.package.directoryURL.deletingLastPathComponent().appending(path: "clients/js/src")),
            ("openapi.yaml", target.directoryURL.appending(path: "Resources/openapi.yaml")),
        ]
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedFiles+Generated.swift")
        // Every file is an input (an edit regenerates), and each folder too (a file added or removed does).
        var inputs: [URL] = []
        for (_, url) in sources {
            inputs.append(url)
            if let names = FileManager.default.subpaths(atPath: url.path) {
                inputs += names.map { url.appending(path: $0) }
            }
        }
        return [
            .buildCommand(
                displayName: "Embedding the web page, the JavaScript modules and the API description",
                executable: try context.tool(named: "herald-embed").url,
                arguments: [output.path] + sources.map { "\($0.0)=\($0.1.path)" },
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
