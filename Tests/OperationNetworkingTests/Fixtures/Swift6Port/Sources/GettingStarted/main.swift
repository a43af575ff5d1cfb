// Swift6PortTests replaces this file, in its copy of the package, with the Swift snippets of
// Sources/OperationNetworking/OperationNetworking.docc/GettingStarted.md in the article's order.
import OperationNetworking
