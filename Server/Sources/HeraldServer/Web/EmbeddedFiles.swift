import CompressNIO
import Foundation
import Hummingbird
import NIOCore

/// The files the server serves from inside its own binary: the web page under `/web`, the JavaScript package's modules
/// under `/herald` and the API description at `/openapi.yaml`. The `EmbedFiles` build plugin writes them from the
/// repository's files at build time (``generated``), so a binary copied alone to another machine serves all of them.
enum EmbeddedFiles {
    /// One embedded file: its bytes, and the size and time its `ETag` and `Last-Modified` come from.
    struct File: Sendable {
        let bytes: ByteBuffer
        let modified: Date
    }

    /// Every embedded file by path, decoded once, on first use.
    static let files: [String: File] = {
        var files: [String: File] = [:]
        for (path, file) in generated {
            // The generator wrote valid base64; a file that would not decode is left out rather than served empty.
            guard let data = Data(base64Encoded: file.base64), data.count == file.size else { continue }
            files[path] = File(bytes: ByteBuffer(bytes: data), modified: Date(timeIntervalSince1970: file.modified))
        }
        return files
    }()

    /// The file at `path` (`/web/index.html`, `/herald/client.js`, `/openapi.yaml`), if embedded.
    static func file(_ path: String) -> File? {
        files[path]
    }

    /// The gzip of each text file (HTML, CSS, JavaScript, SVG, JSON, YAML) that it makes smaller, compressed once,
    /// on first use, at the best level: the files never change while the server runs.
    static let gzipped: [String: ByteBuffer] = {
        let text: Set<String> = ["html", "css", "js", "mjs", "svg", "json", "yaml", "webmanifest", "txt"]
        var gzipped: [String: ByteBuffer] = [:]
        for (path, file) in files where text.contains(path.split(separator: ".").last.map(String.init) ?? "") {
            var bytes = file.bytes
            guard let compressed = try? bytes.compress(with: .gzip(configuration: .init(compressionLevel: .bestCompression))),
                  compressed.readableBytes < file.bytes.readableBytes
            else { continue }
            gzipped[path] = compressed
        }
        return gzipped
    }()
}

/// A Hummingbird `FileProvider` over the embedded files under one folder (`/web`, `/herald`), so `FileMiddleware`
/// serves them as it would files on disk: `ETag` and `Last-Modified`, `304` on revalidation, ranges, `HEAD`, and
/// `index.html` for a folder.
struct EmbeddedFileProvider: FileProvider {
    /// What `FileMiddleware` asks of a file: whether it is a folder, its size and modification time.
    struct FileAttributes: FileMiddlewareFileAttributes {
        let isFolder: Bool
        let size: Int
        let modificationDate: Date
    }

    /// The embedded folder served, `/web` or `/herald`.
    let folder: String
    private let folders: Set<String>

    init(folder: String) {
        self.folder = folder
        var folders: Set<String> = []
        for path in EmbeddedFiles.files.keys where path.hasPrefix(folder + "/") {
            var parent = String(path.dropFirst(folder.count))
            while let slash = parent.lastIndex(of: "/") {
                parent = String(parent[..<slash])
                folders.insert(parent.isEmpty ? "/" : parent)
            }
        }
        self.folders = folders
    }

    /// True when the folder holds at least one file.
    var isEmpty: Bool { folders.isEmpty }

    func getFileIdentifier(_ path: String) -> String? {
        path
    }

    func getAttributes(id path: String) async throws -> FileAttributes? {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        if folders.contains(trimmed) {
            return FileAttributes(isFolder: true, size: 0, modificationDate: Date(timeIntervalSince1970: 0))
        }
        guard let file = EmbeddedFiles.file(folder + path) else { return nil }
        return FileAttributes(isFolder: false, size: file.bytes.readableBytes, modificationDate: file.modified)
    }

    func loadFile(id path: String, context: some RequestContext) async throws -> ResponseBody {
        guard let file = EmbeddedFiles.file(folder + path) else { throw HTTPError(.notFound) }
        return ResponseBody(byteBuffer: file.bytes)
    }

    func loadFile(id path: String, range: ClosedRange<Int>, context: some RequestContext) async throws -> ResponseBody {
        guard let file = EmbeddedFiles.file(folder + path) else { throw HTTPError(.notFound) }
        let lower = max(0, range.lowerBound), upper = min(file.bytes.readableBytes - 1, range.upperBound)
        guard lower <= upper, let slice = file.bytes.getSlice(at: file.bytes.readerIndex + lower, length: upper - lower + 1) else {
            throw HTTPError(.rangeNotSatisfiable)
        }
        return ResponseBody(byteBuffer: slice)
    }
}
