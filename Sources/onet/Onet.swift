import ArgumentParser

/// `onet`: the OperationNetworking command-line tool.
@main
struct Onet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "onet",
        abstract: "OperationNetworking: AFNetworking 2.x's operation-queue HTTP client for Linux, on libcurl.",
        subcommands: [Demo.self, Bench.self, Soak.self, Archive.self, Reachability.self, Fetch.self],
        defaultSubcommand: Demo.self
    )
}
