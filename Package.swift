// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldReplay", targets: ["HeraldReplay"]),
        .executable(name: "herald", targets: ["herald"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // The notification engine: models, content, policy, banner queue. Foundation only, no I/O.
        .target(name: "HeraldCore"),
        // Trace-driven runs of the engine in virtual time (`herald replay`).
        .target(name: "HeraldReplay", dependencies: ["HeraldCore"]),
        // Benchmarks that print figures (`herald bench`); run them from a release build.
        .target(name: "HeraldBenchmarks", dependencies: ["HeraldCore", "CHeapUsage"]),
        // The allocator's own count of bytes in use (glibc's mallinfo2, Darwin's zone statistics).
        .target(name: "CHeapUsage"),
        // The command line; kept thin: it parses arguments and calls the libraries.
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldCore",
                "HeraldReplay",
                "HeraldBenchmarks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore"]),
        .testTarget(name: "HeraldReplayTests", dependencies: ["HeraldReplay", "HeraldCore"]),
    ],
    swiftLanguageModes: [.v6]
)
