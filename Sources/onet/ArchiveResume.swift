import ArgumentParser
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) import OperationNetworking

extension Archive {
    /// Continues paused downloads: the entries of `onet fetch`'s state file, or one archived operation.
    struct ResumeDownload: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "resume-download",
            abstract: "Continue a paused download: onet fetch's state file, or one archived operation.",
            discussion: """
            Given the state file an interrupted onet fetch left (DIR/\(FetchState.fileName)), each paused file
            (or those --name picks) continues into DIR/<name> with a Range request, and the state records it
            as done. Given the archive of one paused HTTPRequestOperation, it continues into --output. One line
            per download on standard output ("<url> → <file>: status=206, <n> bytes"); a download that fails
            is one line on standard error, keeps what was saved, and makes the exit status 1.

            Examples:
              onet archive resume-download downloads/.onet-fetch-state
              onet archive resume-download downloads/.onet-fetch-state --name big.iso
              onet archive resume-download paused.archive --output file.bin
            """)

        @Argument(help: "The state file of onet fetch, or an operation archive.") var file: String
        @Option(help: "With an operation archive: the file the download appends to.") var output: String?
        @Option(name: .customLong("name"), help: "With a state file: only this file (repeatable).") var names: [String] = []

        func run() throws {
            try ArchiveFailure.reporting {
                let data = try Archive.read(file)
                if let state = try? JSONDecoder().decode(FetchState.self, from: data) {
                    try resumeEntries(of: state)
                } else {
                    guard let output else {
                        throw ArchiveFailure("'\(file)' is an operation archive: give --output, the file its download appends to")
                    }
                    let operation = try Archive.restore(HTTPRequestOperation.self, from: file, kind: "a fetch state or an operation archive")
                    if let failure = Self.resume(operation, into: output) { throw ArchiveFailure(failure) }
                }
            }
        }

        /// Continues the paused entries of `state` (its folder is the state file's), updating it.
        private func resumeEntries(of state: FetchState) throws {
            let directory = URL(fileURLWithPath: file).deletingLastPathComponent()
            var updated = state
            var failures: [String] = []
            var resumed = 0
            for (index, entry) in state.files.enumerated() where entry.status == .paused && (names.isEmpty || names.contains(entry.name)) {
                resumed += 1
                let path = directory.appendingPathComponent(entry.name).path
                guard entry.name == (entry.name as NSString).lastPathComponent, !entry.name.hasPrefix("."),
                      let archive = entry.archive, let bytes = entry.bytes else {
                    failures.append("\(entry.url): the state has no usable archive for '\(entry.name)'")
                    continue
                }
                guard FetchPlan.fileSize(URL(fileURLWithPath: path)) == bytes else {
                    failures.append("\(entry.url): '\(path)' is not the \(bytes) bytes the state recorded")
                    continue
                }
                let operation: HTTPRequestOperation
                do {
                    operation = try SafeArchive.unarchive(HTTPRequestOperation.self, from: archive)
                } catch {
                    failures.append("\(entry.url): its archive cannot be restored: \((error as NSError).localizedDescription)")
                    continue
                }
                if let failure = Self.resume(operation, into: path) {
                    _ = FetchSession.truncate(path, to: bytes)   // what was saved stays continuable
                    failures.append(failure)
                } else {
                    updated.files[index] = FetchState.Entry(url: entry.url, name: entry.name, status: .done,
                                                            bytes: FetchPlan.fileSize(URL(fileURLWithPath: path)))
                }
            }
            do {
                try updated.save(in: directory)
            } catch {
                failures.append("cannot update '\(file)': \(FetchPlan.reason(error))")
            }
            if resumed == 0 { StandardStreams.write("onet: archive: nothing paused to resume in \(file)\n", to: .standardError) }
            guard failures.isEmpty else {
                for failure in failures.dropLast() {
                    StandardStreams.write("onet: archive: \(URLRedaction.redactingPasswords(in: failure))\n", to: .standardError)
                }
                throw ArchiveFailure(failures.last ?? "")
            }
        }

        /// Continues `operation` into `path`, appending (the library skips a prefix a 200 sends again);
        /// `nil` when a 2xx body was saved, else why not (naming the URL).
        static func resume(_ operation: HTTPRequestOperation, into path: String) -> String? {
            let url = operation.request.url?.absoluteString ?? "the download"
            do {
                try BodySink.prepare(path: path, truncating: false)
            } catch let failure as RequestFailure {
                return failure.message
            } catch {
                return "cannot write '\(path)'"
            }
            let sink = BodySink(target: .file(path: path), appends: true, decodes: false, keepsOnly2xx: false,
                                response: { [weak operation] in operation?.response })
            operation.outputStream = sink
            let done = DispatchSemaphore(value: 0)
            let outcome = Locked<String?>(nil)
            operation.setCompletionBlockWithSuccess({ _, _ in
                done.signal()
            }, failure: { operation, error in
                outcome.set(FetchSession.describe(error, of: operation) + " — \(url)")
                done.signal()
            })
            operation.resume()
            guard done.wait(timeout: .now() + 3600) == .success else { return "\(url): no end within an hour" }
            operation.waitUntilFinished()   // the output stream is closed when the operation finishes
            if let failure = outcome.value { return failure }
            guard let status = operation.response?.statusCode, (200..<300).contains(status) else {
                return "HTTP \(operation.response?.statusCode ?? 0) — \(url)"
            }
            let size = FetchPlan.fileSize(URL(fileURLWithPath: path)) ?? 0
            print("\(url) → \(path): status=\(status), \(size) bytes")
            return nil
        }
    }
}
