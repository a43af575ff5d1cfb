// swift-tools-version:6.0
// libFuzzer targets for OperationNetworking's parsers and encoders (issue 12).
//
// A package of its own, with a path dependency on the library, because these executables link only
// with `-sanitize=fuzzer` (libFuzzer provides the driver they call): inside the main package they
// would break a plain `swift build`. Build and run them with `scripts/fuzz` at the repository root.
import PackageDescription

let fuzzTargets = ["FuzzQueryString", "FuzzResponseHead", "FuzzMultipart", "FuzzArchive", "FuzzNetlink"]

let package = Package(
    name: "OperationNetworkingFuzz",
    dependencies: [
        .package(name: "OperationNetworking", path: ".."),
    ],
    targets: [
        // Declares LLVMFuzzerRunDriver, which the toolchain's libFuzzer (linked by -sanitize=fuzzer) defines.
        .systemLibrary(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"]),
    ] + fuzzTargets.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzSupport", .product(name: "OperationNetworking", package: "OperationNetworking")],
            path: "Targets/\(name)"
        )
    },
    swiftLanguageModes: [.v6]
)
