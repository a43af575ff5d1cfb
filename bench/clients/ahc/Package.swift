// swift-tools-version:6.0
// The benchmark's AsyncHTTPClient peer (`bench/run` builds it with `swift build -c release` here).
// A package of its own, so the library's users never resolve AsyncHTTPClient.
import PackageDescription

let package = Package(
    name: "ahc-bench",
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        .executableTarget(
            name: "ahc-bench",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
