import ArgumentParser
import Dispatch
import Foundation
import OperationNetworking

/// `onet reachability`: prints each reachability status as it changes (the namespace tests run it
/// inside a network namespace of their own).
struct Reachability: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the network reachability status, then each change, for a while.",
        discussion: """
        Examples:
          onet reachability                          the default route, for 10 s
          onet reachability --domain example.com --seconds 60
          onet reachability --address 192.0.2.1
        """)

    @Option(help: "Watch an IP literal instead of the default route.") var address: String?
    @Option(help: "Watch a host name instead of the default route.") var domain: String?
    @Option(help: "Stop after this many seconds.") var seconds: Double = 10

    func run() throws {
        let manager: NetworkReachabilityManager?
        if let address {
            manager = NetworkReachabilityManager(address: address)
        } else if let domain {
            manager = NetworkReachabilityManager(domain: domain)
        } else {
            manager = NetworkReachabilityManager.shared
        }
        guard let manager else { throw ValidationError("not an IP address or host name") }
        manager.setReachabilityStatusChange { [manager] status in
            let kind = manager.networkInterfaceKind.map { " kind=\($0.rawValue)" } ?? ""
            try? FileHandle.standardOutput.write(contentsOf: Data("status=\(status)\(kind)\n".utf8))
        }
        manager.startMonitoring()
        Thread.sleep(forTimeInterval: max(0, seconds))
        manager.stopMonitoring()
    }
}
