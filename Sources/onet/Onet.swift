import ArgumentParser
import Foundation
@_spi(Tool) import OperationNetworking

/// `onet`: the OperationNetworking command-line tool.
@main
struct Onet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "onet",
        abstract: "OperationNetworking: AFNetworking 2.x's operation-queue HTTP client for Linux, on libcurl.",
        discussion: """
        Examples:
          onet demo                                  the operation model against a loopback server
          onet request POST :8080/users name=Ada     one request, httpie-style
          onet fetch --from urls.txt --to downloads  many downloads, pausable with Ctrl-C
          onet --generate-completion-script bash     shell completions (bash, zsh, fish)
        """,
        version: OnetVersion.text,
        subcommands: [Demo.self, Request.self, Fetch.self, Serve.self, Bench.self, Soak.self, Archive.self, Reachability.self],
        defaultSubcommand: Demo.self
    )

    /// Parses and runs the command; a usage error is one line on standard error (`onet: …`) with
    /// status 64 (1 for `onet request`, as httpie), and a command's own `ExitCode` passes through
    /// without a message (it printed its own).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .success {   // --help, --version, completion scripts
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            // A URL the user typed may carry a password; no error line shows it.
            let text = URLRedaction.redactingPasswords(in: message(for: error))
            if !text.isEmpty {
                StandardStreams.write("onet: \(text.split(whereSeparator: \.isNewline).joined(separator: " "))\n", to: .standardError)
            }
            // `onet request` exits as httpie does: 1 for a usage error too.
            let isRequest = CommandLine.arguments.dropFirst().first == Request.configuration.commandName
            Foundation.exit(code == .validationFailure && isRequest ? 1 : code.rawValue)
        }
    }
}

/// The version `onet --version` prints: the library's (it is also in the User-Agent the library sends).
enum OnetVersion {
    /// The release of OperationNetworking this tool is built from.
    static let text = "0.1.0"
}
