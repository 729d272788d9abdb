// swift-tools-version: 5.9
// An iOS app package: open this folder in Xcode 26 or later and run it on a simulator (Herald's dependencies declare
// Swift tools 6.2).
// Apple platforms only; on Linux scripts/test checks that these files parse (swiftc -parse).
import AppleProductTypes
import PackageDescription

let package = Package(
    name: "HeraldChatApp",
    platforms: [.iOS("17.0")],
    products: [
        .iOSApplication(
            name: "Herald Chat",
            targets: ["HeraldChatApp"],
            bundleIdentifier: "dev.herald.example.chat",
            teamIdentifier: "",
            displayVersion: "1.0",
            bundleVersion: "1",
            supportedDeviceFamilies: [.pad, .phone],
            supportedInterfaceOrientations: [.portrait, .landscapeLeft, .landscapeRight]
        ),
    ],
    dependencies: [
        // The Herald repository this example lives in; its folder name is the package's identity.
        .package(name: "herald", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "HeraldChatApp",
            dependencies: [
                .product(name: "HeraldUI", package: "herald"),
                .product(name: "HeraldPresentation", package: "herald"),
                .product(name: "HeraldClient", package: "herald"),
                .product(name: "HeraldProtocol", package: "herald"),
                .product(name: "HeraldCore", package: "herald"),
            ],
            path: "Sources"
        ),
    ]
)
