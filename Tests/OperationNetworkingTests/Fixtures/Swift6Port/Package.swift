// swift-tools-version:6.0
// AFNetworking 2.x code ported as it was written, built in the Swift 6 language mode against the
// library by path. Swift6PortTests builds it and expects warnings, never errors: the AFN-shaped
// methods that take blocks are `@preconcurrency` (Migration.md, "Porting to Swift 6"). In its copy
// of this package the test adds Migration.md's compiled blocks to PortedClient and writes the
// Getting started article's snippets into GettingStarted's main.swift, so the docs compile as written.
import PackageDescription

// The repository root; the test passes it when it builds a copy of this package elsewhere.
let root = Context.environment["OPERATIONNETWORKING_ROOT"] ?? "../../../.."

let package = Package(
    name: "Swift6Port",
    dependencies: [.package(name: "OperationNetworking", path: root)],
    targets: [
        .target(name: "PortedClient", dependencies: [.product(name: "OperationNetworking", package: "OperationNetworking")]),
        // The Getting started article's snippets, in order, as a newcomer's main.swift.
        .executableTarget(name: "GettingStarted",
                          dependencies: [.product(name: "OperationNetworking", package: "OperationNetworking")]),
    ],
    swiftLanguageModes: [.v6]
)
